"""The error codes group members saw, from a recorded transcript (kcoord.conformance.recorder),
per client and group API, and how two brokers' tables compare when their timing may differ.

    labels = {"g-1": "kafka-python", "g-2": "kafka-python", "g-3": "confluent-kip848"}
    seen = codes_seen(proxy.transcript.sorted(), labels, since_ms=failure_ms)
    # {("kafka-python", "Heartbeat"): Counter({"NONE": 40, "NOT_COORDINATOR": 2}), ...}
    problems = differences(kafka_seen, kcoord_seen, may_differ=FAILOVER_TIMING)
    problems += missing(kcoord_seen, {"kafka-python": {("JoinGroup", "NOT_COORDINATOR")}})

An exchange belongs to the group its request names (FindCoordinator's key, the group id of
the others; each group of a batched OffsetFetch or FindCoordinator on its own), and the group
to a client's label. Its codes are every error code of the answer: the top-level one and the
per-partition, per-member or per-group ones, NONE when all of them are. A request never
answered (its connection ended first) has no code.
"""
from __future__ import annotations

from collections import Counter

from wire.errors import ErrorCode

GROUP_APIS = ("FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch",
              "LeaveGroup", "ConsumerGroupHeartbeat")

# What Apache Kafka 4.3.1 answers a member while its group's coordinator moves, whichever
# request lands in which window: FindCoordinator has no coordinator for a partition without a
# leader (KafkaApis.getCoordinator); a group request reaches a broker that no longer (or does
# not yet) lead the group's __consumer_offsets partition, or one still loading it; and a write
# to the partition that fails as its leader changes is COORDINATOR_NOT_AVAILABLE (REQUEST_TIMED_OUT,
# NOT_ENOUGH_REPLICAS, UNKNOWN_TOPIC_OR_PARTITION) or NOT_COORDINATOR (NOT_LEADER_OR_FOLLOWER)
# (GroupMetadataManager.appendGroupMetadataErrorToResponseError; OffsetFetch maps them all to
# NOT_COORDINATOR, GroupCoordinatorService.handleOffsetFetchException). Whether a client asks
# inside one of those windows is timing, so these may be seen on one broker and not the other.
COORDINATOR_MOVING = frozenset({"NONE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                                "COORDINATOR_NOT_AVAILABLE"})
FAILOVER_TIMING: dict[str, frozenset[str]] = {
    "FindCoordinator": frozenset({"NONE", "COORDINATOR_NOT_AVAILABLE"}),
    **{api: COORDINATOR_MOVING for api in GROUP_APIS if api != "FindCoordinator"},
}


def _name(code) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _codes(value) -> set[int]:
    """Every error_code in a decoded answer (or part of one)."""
    found = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "error_code" and isinstance(v, int):
                found.add(v)
            else:
                found |= _codes(v)
    elif isinstance(value, list):
        for v in value:
            found |= _codes(v)
    return found


def group_codes(api: str, request: dict, response: dict) -> list[tuple[str, set[int]]]:
    """(group id, its error codes) for each group an answered group request was about."""
    if api == "FindCoordinator":
        if request.get("key_type", 0) != 0:  # a transaction coordinator
            return []
        if "coordinators" in response:  # v4+: one entry per key
            return [(c.get("key"), {c.get("error_code", 0)}) for c in response["coordinators"] or []]
        return [(request.get("key"), {response.get("error_code", 0)})]
    if api == "OffsetFetch" and "groups" in response:  # v8+: batched
        return [(g.get("group_id"), _codes(g) or {0}) for g in response["groups"] or []]
    return [(request.get("group_id"), _codes(response) or {0})]


def codes_seen(exchanges: list[dict], labels: dict[str, str], since_ms: int = 0,
               brokers: set[int] | None = None) -> dict[tuple[str, str], Counter]:
    """(label, api) -> how often each error code (by Kafka's name) was answered, to the groups
    `labels` names, from `since_ms` on (the transcript's `answered_ms`); with `brokers`, only
    what those node ids answered."""
    seen: dict[tuple[str, str], Counter] = {}
    for ex in exchanges:
        api, response = ex.get("api"), ex.get("response")
        if api not in GROUP_APIS or not isinstance(response, dict) or ex.get("answered_ms", 0) < since_ms:
            continue
        if brokers is not None and ex.get("broker") not in brokers:
            continue
        for group, codes in group_codes(api, ex.get("request") or {}, response):
            label = labels.get(group)
            if label is not None:
                seen.setdefault((label, api), Counter()).update(_name(c) for c in codes)
    return seen


def differences(kafka: dict[tuple[str, str], Counter], kcoord: dict[tuple[str, str], Counter],
                may_differ: dict[str, frozenset[str]]) -> list[str]:
    """A code seen by a client on one broker only, unless the API's `may_differ` codes hold it
    (what Kafka answers depending on when the request lands): one line each."""
    problems = []
    for label, api in sorted(set(kafka) | set(kcoord)):
        on_kafka, on_kcoord = kafka.get((label, api), Counter()), kcoord.get((label, api), Counter())
        for code in sorted(set(on_kafka) ^ set(on_kcoord)):
            if code not in may_differ.get(api, frozenset()):
                where, n = ("kafka", on_kafka[code]) if code in on_kafka else ("kcoord", on_kcoord[code])
                problems.append(f"{label} {api}: {code} seen only on {where} ({n}x)")
    return problems


def missing(seen: dict[tuple[str, str], Counter], required: dict[str, set[tuple[str, str]]]) -> list[str]:
    """Each label's required (api, code) pairs that no answer showed: one line each."""
    return [f"{label} {api}: {code} never seen" for label, pairs in sorted(required.items())
            for api, code in sorted(pairs) if not seen.get((label, api), Counter())[code]]


def table(seen: dict[tuple[str, str], Counter]) -> str:
    """One line per (label, api): each code with how often it was seen."""
    if not seen:
        return "  (no group answers)"
    width = max(len(label) for label, _ in seen)
    return "\n".join(f"  {label.ljust(width)}  {api.ljust(22)}  "
                     + ", ".join(f"{code} x{n}" for code, n in sorted(counts.items()))
                     for (label, api), counts in sorted(seen.items()))
