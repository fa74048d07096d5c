"""Normalise recorded transcripts (kcoord.conformance.recorder) and compare two runs of
one scenario, on Apache Kafka and on kcoord.

Only what legitimately differs between two brokers, or two runs, is normalised away:
member ids (m1, m2, ... in order of first appearance), names with kcoord check's random
suffix (`kcoord-check-NAME-<8 hex>` -> `kcoord-check-NAME-<n>`), cluster and node
identity, addresses, topic ids, throttle times, timestamps, error message texts,
fetch session ids, the capability list of ApiVersions answers, and the order of
member lists (a broker iterates its members in hash order).

What is compared: per connection, the group APIs (GROUP_APIS) in order, with their
decoded requests and responses (consumer-protocol subscriptions and assignments
decoded); connections are paired by (client id, order of their first coordinator
request). Timing noise does not count: consecutive repeats collapse, and a run of
Heartbeat/OffsetCommit exchanges (periodic, so their number and interleaving depend on
timing) is compared as the set of its distinct exchanges, and so are a connection's
ConsumerGroupHeartbeats, its StreamsGroupHeartbeats and its ShareGroupHeartbeats, leaving out
keep-alives that change nothing. Streams members' process ids are renamed p1, p2, ... as member
ids are. Other APIs (Metadata, Fetch, ShareFetch, ShareAcknowledge, ListOffsets polls, ...) are
compared as the set of (api, version) used.

When the strict comparison differs, a loose one is tried that ignores which member
got which partitions (leader's SyncGroup assignments are compared as a multiset):
a range assignor orders members by their random ids, so with dynamic members the
partition split is a coin toss on any broker. Its verdict is `equivalent`. The share-group
offsets APIs stay strict in it: their partitions carry start offsets.
"""
from __future__ import annotations

import io
import json
import re
import struct
from dataclasses import dataclass, field

from kcoord.conformance.rawclient import SETUP_CLIENT_ID
from kcoord.conformance.recorder import bytes_of
from wire import codec

FIND_COORDINATOR, JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH_OFFSETS = 10, 11, 14, 12, 13, 8, 9
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, API_VERSIONS = 15, 16, 42, 18
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE = 88, 89
SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = 76, 77
DESCRIBE_SHARE_OFFSETS, ALTER_SHARE_OFFSETS, DELETE_SHARE_OFFSETS = 90, 91, 92
SHARE_OFFSETS_APIS = frozenset({DESCRIBE_SHARE_OFFSETS, ALTER_SHARE_OFFSETS, DELETE_SHARE_OFFSETS})
# ShareFetch and ShareAcknowledge are not among them: like Fetch, a ShareFetch long-polls, so how
# many a member sends and which come back empty is timing; a raw scenario's own checks compare
# what they acquired and acknowledged.
GROUP_APIS = frozenset({FIND_COORDINATOR, JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH_OFFSETS,
                        DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, API_VERSIONS,
                        CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE,
                        STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE,
                        SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE,
                        *SHARE_OFFSETS_APIS})
# The modern protocols' heartbeats: a member heartbeats on a timer, so they compare as the set of
# states a connection went through (see _collapse).
MEMBER_HEARTBEATS = ("ConsumerGroupHeartbeat", "StreamsGroupHeartbeat", "ShareGroupHeartbeat")
# Kafka's ASSIGNMENT_DELAYED status while group.streams.assignment.interval.ms holds the next
# target assignment back (see _streams_keep_alives).
INTERVAL_DELAY = {"status_code": 5, "status_detail": "Assignment delayed due to the configured assignment interval."}
ASSIGNMENT_DELAYED = 5

NOISE_KEYS = frozenset({"throttle_time_ms", "cluster_id", "controller_id", "node_id", "host", "port",
                        "leader_id", "topic_id", "error_message", "session_id", "correlation_id"})
CHECK_NAME = re.compile(r"kcoord-check-([A-Za-z0-9]+)-[0-9a-f]{8}")
PARTITIONS = "<partitions>"


def _is_noise(key: str, path: str = "") -> bool:
    # A streams member's user endpoint is the client's own (host, port), the same on both brokers.
    if path.endswith("user_endpoint"):
        return False
    return key in NOISE_KEYS or key.endswith("timestamp") or key.endswith("time_ms")


# ------------------------------------------------------------------ consumer protocol
def decode_consumer(kind: str, data: bytes):
    """A ConsumerProtocol subscription/assignment as a dict, or None if it is not one."""
    if len(data) < 2:
        return None
    version = struct.unpack(">h", data[:2])[0]
    if version < 0:
        return None
    name = "ConsumerProtocolSubscription" if kind == "subscription" else "ConsumerProtocolAssignment"
    try:
        # Newer versions only add fields at the end: read with the newest layout we know.
        value = codec.compiled_message(name, min(version, 3)).decode_from(io.BytesIO(data[2:]))
    except Exception:
        return None
    from kcoord.conformance.recorder import jsonable
    out = {"version": version, **jsonable(value)}
    return out


def _decode_blob(value, kind):
    data = bytes_of(value)
    if data is None:
        return value
    decoded = decode_consumer(kind, data)
    return value if decoded is None else {"consumer_" + kind: decoded}


def _decode_consumer_fields(exchanges: list[dict]) -> None:
    """Replace consumer-protocol bytes in place (needs each group's protocol type)."""
    types: dict[str, str] = {}
    for ex in exchanges:
        req, resp, key = ex.get("request") or {}, ex.get("response") or {}, ex.get("api_key")
        if key == JOIN:
            group = req.get("group_id")
            if req.get("protocol_type"):
                types[group] = req["protocol_type"]
            if types.get(group) != "consumer":
                continue
            for p in req.get("protocols") or []:
                p["metadata"] = _decode_blob(p.get("metadata"), "subscription")
            for m in resp.get("members") or []:
                m["metadata"] = _decode_blob(m.get("metadata"), "subscription")
        elif key == SYNC:
            group = req.get("group_id")
            if (req.get("protocol_type") or types.get(group)) != "consumer":
                continue
            for a in req.get("assignments") or []:
                a["assignment"] = _decode_blob(a.get("assignment"), "assignment")
            if "assignment" in resp:
                resp["assignment"] = _decode_blob(resp["assignment"], "assignment")
        elif key == DESCRIBE_GROUPS:
            for g in resp.get("groups") or []:
                if g.get("protocol_type") != "consumer":
                    continue
                for m in g.get("members") or []:
                    m["member_metadata"] = _decode_blob(m.get("member_metadata"), "subscription")
                    m["member_assignment"] = _decode_blob(m.get("member_assignment"), "assignment")


# ------------------------------------------------------------------ identities
def _member_ids(exchanges: list[dict]) -> tuple[list[str], list[str]]:
    """Member ids the broker handed out or reported, and streams members' process ids (a
    Kafka Streams client makes a random one), each in order of first appearance."""
    seen: dict[str, None] = {}
    processes: dict[str, None] = {}

    def add(v, into=seen):
        if isinstance(v, str) and v:
            into.setdefault(v, None)

    for ex in exchanges:
        resp, key = ex.get("response") or {}, ex.get("api_key")
        if key in (CONSUMER_GROUP_HEARTBEAT, STREAMS_GROUP_HEARTBEAT, SHARE_GROUP_HEARTBEAT):  # the member's own id
            add((ex.get("request") or {}).get("member_id"))
            add(resp.get("member_id"))
            add((ex.get("request") or {}).get("process_id"), processes)
        elif key in (CONSUMER_GROUP_DESCRIBE, STREAMS_GROUP_DESCRIBE, SHARE_GROUP_DESCRIBE):
            for g in resp.get("groups") or []:
                for m in g.get("members") or []:
                    add(m.get("member_id"))
                    add(m.get("process_id"), processes)
        elif key == JOIN:
            add(resp.get("member_id"))
            add(resp.get("leader"))
            for m in resp.get("members") or []:
                add(m.get("member_id"))
        elif key == DESCRIBE_GROUPS:
            for g in resp.get("groups") or []:
                for m in g.get("members") or []:
                    add(m.get("member_id"))
    return list(seen), list(processes)


class _Renamer:
    def __init__(self, exchanges: list[dict]):
        ids, processes = _member_ids(exchanges)
        self.members = {m: f"m{i}" for i, m in enumerate(ids, 1)}
        self.members.update({p: f"p{i}" for i, p in enumerate(processes, 1) if p not in self.members})
        ids = list(self.members)
        self._ids = re.compile("|".join(re.escape(m) for m in sorted(ids, key=len, reverse=True))) if ids else None
        self.names: dict[str, str] = {}

    def _name(self, match) -> str:
        full = match.group(0)
        if full not in self.names:
            self.names[full] = f"kcoord-check-{match.group(1)}-<{len(self.names) + 1}>"
        return self.names[full]

    def string(self, s: str) -> str:
        if s in self.members:
            return self.members[s]
        if self._ids is not None:
            s = self._ids.sub(lambda m: self.members[m.group(0)], s)
        return CHECK_NAME.sub(self._name, s)


def _clean(value, renamer: _Renamer, loose: bool, path: str = ""):
    if isinstance(value, dict):
        if "$bytes" in value:
            return value
        out = {}
        for k, v in value.items():
            if _is_noise(k, path):
                continue
            out[k] = _clean(v, renamer, loose, f"{path}.{k}")
        if loose:
            if "partitions" in out and isinstance(out["partitions"], list):
                out["partitions"] = PARTITIONS
            if isinstance(out.get("partition_indexes"), list):
                out["partition_indexes"] = PARTITIONS
            if "assigned_partitions" in out:
                out["assigned_partitions"] = PARTITIONS
        return out
    if isinstance(value, list):
        items = [_clean(v, renamer, loose, path) for v in value]
        if items and all(isinstance(i, (int, str)) and not isinstance(i, bool) for i in items):
            items.sort(key=lambda i: (str(type(i)), i))  # partition and group id lists: client set order
        elif items and all(isinstance(i, dict) and "member_id" in i for i in items):
            items.sort(key=lambda i: json.dumps(i, sort_keys=True))
        elif items and all(isinstance(i, dict) and "user_endpoint" in i for i in items):
            # A streams group's partitions by endpoint: Kafka walks its members' map (hash order).
            items.sort(key=lambda i: json.dumps(i, sort_keys=True))
        elif items and all(isinstance(i, dict) and "group_id" in i for i in items):
            items.sort(key=lambda i: json.dumps(i, sort_keys=True))
        return items
    if isinstance(value, str):
        return renamer.string(value)
    return value


def _loose_sync(req: dict, raw_req: dict, renamer: _Renamer) -> None:
    # Which member got which partitions is the assignor's ordering of random ids:
    # keep the split as a multiset, and who was assigned.
    assignments = raw_req.get("assignments") or []
    req["assignments"] = {
        "members": sorted(renamer.string(a.get("member_id", "")) for a in assignments),
        "values": sorted((json.dumps(_clean(a.get("assignment"), renamer, False), sort_keys=True)
                          for a in assignments)),
    }


# ------------------------------------------------------------------ normalised form
@dataclass
class Connection:
    label: str             # "<client id>#<n>", n counting that client's connections
    conn: int              # the proxy's connection number
    client_id: str | None
    first_seq: int
    items: list[dict]      # normalised group exchanges, collapsed
    raw: list[dict]        # the recorded group exchanges (for context)
    first_api: str = ""


@dataclass
class Normalised:
    connections: list[Connection]
    other_apis: list[tuple[str, int]]
    members: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    # Distinct FindCoordinator exchanges of the whole run, one-line JSON each.
    discovery: list[str] = field(default_factory=list)


def normalise(exchanges: list[dict], loose: bool = False) -> Normalised:
    # A request its broker never answered (a cluster proxy records them) is where a connection
    # ended, which is timing: what was answered is compared.
    exchanges = [json.loads(json.dumps(e)) for e in sorted(exchanges, key=lambda e: e["seq"])
                 if e.get("client_id") != SETUP_CLIENT_ID and not e.get("unanswered")]
    _decode_consumer_fields(exchanges)
    renamer = _Renamer(exchanges)
    by_conn: dict[int, list[dict]] = {}
    other: set[tuple[str, int]] = set()
    discovery: set[str] = set()
    for ex in exchanges:
        if ex.get("api_key") == FIND_COORDINATOR:
            # Which connection looks the coordinator up, and how often, is the client's
            # timing (librdkafka asks on whichever broker connection is up first); what
            # the broker answers is not.
            discovery.add(json.dumps(_exchange(ex, renamer, loose), sort_keys=True))
        elif ex.get("api_key") in GROUP_APIS:
            by_conn.setdefault(ex["conn"], []).append(ex)
        else:
            other.add((ex.get("api") or "undecodable", ex.get("version") if ex.get("version") is not None else -1))
    conns = []
    for conn, exs in by_conn.items():
        coordination = [e for e in exs if e["api_key"] != API_VERSIONS]
        if not coordination:  # a connection that only negotiated versions coordinates nothing
            continue
        items = [_exchange(e, renamer, loose) for e in exs]
        client = renamer.string(exs[0].get("client_id") or "")
        conns.append(Connection("", conn, client, coordination[0]["seq"], _collapse(items), exs,
                                coordination[0].get("api") or ""))
    # Connections of the same client are paired by what they are for (the API of their
    # first coordinator request: a bootstrap connection asks FindCoordinator, a member's
    # coordinator connection joins), then by when they started doing it: two member
    # processes' connections interleave differently from run to run.
    conns.sort(key=lambda c: (c.client_id, c.first_api, c.first_seq))
    counts: dict[str, int] = {}
    for c in conns:
        counts[c.client_id] = counts.get(c.client_id, 0) + 1
        c.label = f"{c.client_id}#{counts[c.client_id]}"
    return Normalised(conns, sorted(other), renamer.members, renamer.names, sorted(discovery))


def _exchange(ex: dict, renamer: _Renamer, loose: bool) -> dict:
    out = {"api": ex.get("api"), "version": ex.get("version")}
    # The share-group offsets APIs' partitions carry start offsets, not an assignor's choice.
    loose = loose and ex.get("api_key") not in SHARE_OFFSETS_APIS
    req = _clean(ex.get("request"), renamer, loose)
    if ex.get("api_key") == API_VERSIONS:
        resp = {"error_code": (ex.get("response") or {}).get("error_code")}  # capabilities differ by design
    else:
        resp = _clean(ex.get("response"), renamer, loose)
    if loose and ex.get("api_key") == SYNC and isinstance(req, dict):
        _loose_sync(req, ex.get("request") or {}, renamer)
    out["request"], out["response"] = req, resp
    for k in ("request_error", "response_error", "no_response"):
        if k in ex:
            out[k] = ex[k]
    return out


def _collapse(items: list[dict]) -> list[dict]:
    out: list[dict] = []
    run: list[dict] = []
    # A consumer-protocol member heartbeats on a timer and learns of every change from the
    # answer: how many heartbeats carry one state, and whether its OffsetFetch comes before or
    # after the heartbeat that acknowledges its first assignment, is timing; the states it went
    # through are not. All of a connection's ConsumerGroupHeartbeats are one item, where the
    # first was: the set of its distinct exchanges, compared in full (unlike a classic
    # heartbeat, a successful one says something: the epoch and the assignment). Except a
    # keep-alive that says nothing new (the member's own epoch back, no assignment, and it
    # reported no partitions): whether the timer fired once more between two changes (the
    # other member's leave, say) is timing too. A change answered late or wrongly still shows
    # as the exchange that carries it. StreamsGroupHeartbeats likewise (_streams_keep_alives), and
    # ShareGroupHeartbeats: how many a share member sends while its partitions' share state is
    # initialised (asynchronously, on Kafka) is timing, the empty assignment it heard first is not.
    alive = _streams_keep_alives(items) | {n for n, i in enumerate(items)
                                           if i["api"] in ("ConsumerGroupHeartbeat", "ShareGroupHeartbeat")
                                           and _keep_alive(i)}
    heartbeats = {api: {json.dumps(i, sort_keys=True): i for n, i in enumerate(items)
                        if i["api"] == api and n not in alive}
                  for api in MEMBER_HEARTBEATS}

    def flush():
        if run:
            distinct = {json.dumps(i, sort_keys=True): i for i in run}
            out.append({"api": "periodic", "distinct": [distinct[k] for k in sorted(distinct)]})
            run.clear()

    for item in items:
        if item["api"] in ("Heartbeat", "OffsetCommit"):
            run.append(item)
            continue
        flush()
        if item["api"] in MEMBER_HEARTBEATS:
            distinct = heartbeats.pop(item["api"], None)
            if distinct:
                out.append({"api": "heartbeats", "distinct": [distinct[k] for k in sorted(distinct)]})
            continue
        if out and out[-1] == item:
            continue
        out.append(item)
    flush()
    return out


def _keep_alive(item: dict) -> bool:
    """A successful ConsumerGroupHeartbeat (or ShareGroupHeartbeat, which never reports owned
    partitions) whose answer is the member's own epoch and nothing else, to a request that
    reported no owned partitions."""
    req, resp = item.get("request"), item.get("response")
    return (isinstance(req, dict) and isinstance(resp, dict) and resp.get("error_code") == 0
            and resp.get("assignment") is None and req.get("topic_partitions") is None
            and req.get("member_epoch", 0) > 0 and resp.get("member_epoch") == req.get("member_epoch"))


def _streams_keep_alives(items: list[dict]) -> set[int]:
    """Indexes of the StreamsGroupHeartbeats that say nothing new: the member reports the tasks
    it was last given (a streams member reports them on every heartbeat), and hears back its own
    epoch, no tasks, no endpoint map and the status it last heard. A status only ever changes on
    the heartbeat after the change, however many came between: the first that hears it stays.

    And those that hear only "not yet" because the group's last target assignment was computed
    less than group.streams.assignment.interval.ms ago: whether a heartbeat lands in that window
    is wall-clock timing (how long the client took to create a topic, say), and the answer that
    brings the assignment after it shows on both brokers.

    Likewise a "not yet" for group.streams.initial.rebalance.delay.ms and nothing else: whether
    a heartbeat lands after the source topic is created and before the delay ends is timing on
    both brokers (the reference Kafka's topic creation took longer than the 3 s delay in a
    loaded run of 2026-11-26)."""
    given: dict[str, tuple] = {}    # member id -> tasks last given
    statuses: dict[str, object] = {}  # member id -> status last heard
    out = set()
    for n, item in enumerate(items):
        req, resp = item.get("request"), item.get("response")
        if item["api"] != "StreamsGroupHeartbeat" or not isinstance(req, dict) or not isinstance(resp, dict):
            continue
        if resp.get("error_code") != 0:
            continue
        member = resp.get("member_id")
        reported = tuple(req.get(k) for k in ("active_tasks", "standby_tasks", "warmup_tasks"))
        if (req.get("member_epoch", 0) > 0 and resp.get("member_epoch") == req.get("member_epoch")
                and resp.get("active_tasks") is None and resp.get("partitions_by_user_endpoint") is None
                and member in given and reported == given[member]):
            status = resp.get("status") or []
            if INTERVAL_DELAY in status or (status and all(s.get("status_code") == ASSIGNMENT_DELAYED
                                                           for s in status)):
                out.add(n)
                continue
            if resp.get("status") == statuses.get(member):
                out.add(n)
        if resp.get("active_tasks") is not None:
            given[member] = tuple(resp.get(k) for k in ("active_tasks", "standby_tasks", "warmup_tasks"))
        statuses[member] = resp.get("status")
    return out


# ------------------------------------------------------------------ comparison
@dataclass
class Divergence:
    connection: str
    index: int | None
    path: str
    kafka: object
    kcoord: object
    kafka_context: list[str]
    kcoord_context: list[str]

    def describe(self) -> str:
        where = self.connection if self.index is None else f"{self.connection} exchange {self.index}"
        lines = [f"{where}: {self.path}: kafka={_short(self.kafka)} kcoord={_short(self.kcoord)}",
                 "  kafka:"] + [f"    {l}" for l in self.kafka_context] + ["  kcoord:"] + \
                [f"    {l}" for l in self.kcoord_context]
        return "\n".join(lines)

    def summary(self) -> str:
        where = self.connection if self.index is None else f"{self.connection}[{self.index}]"
        return f"{where} {self.path}: kafka={_short(self.kafka, 60)} kcoord={_short(self.kcoord, 60)}"


@dataclass
class Comparison:
    verdict: str                 # "identical", "equivalent" (up to who got which partitions), "differs"
    divergence: Divergence | None = None


def _short(v, limit: int = 200) -> str:
    s = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _diff(a, b, path: str):
    """The first (path, a, b) where two JSON values differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")
            d = _diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return f"{path}.length", len(a), len(b)
        return None
    if a != b:
        return path, a, b
    return None


def one_line(item: dict) -> str:
    """An exchange for a human: api, version and its telling fields."""
    if item.get("api") in ("periodic", "heartbeats"):
        return item["api"] + "{" + ", ".join(one_line(i) for i in item["distinct"]) + "}"
    resp = item.get("response") or {}
    bits = [f"{item.get('api')} v{item.get('version')}"]
    for k in ("error_code", "generation_id", "leader", "member_id", "member_epoch", "protocol_name",
              "skip_assignment"):
        if isinstance(resp, dict) and k in resp:
            bits.append(f"{k}={resp[k]}")
    if isinstance(resp, dict) and isinstance(resp.get("members"), list):
        bits.append(f"members={len(resp['members'])}")
    if isinstance(resp, dict) and isinstance(resp.get("topics"), list):  # OffsetCommit/OffsetFetch
        codes = sorted({p.get("error_code") for t in resp["topics"] for p in (t.get("partitions") or [])
                        if isinstance(p, dict)})
        bits.append(f"partition_errors={codes}")
    for k in ("request_error", "response_error"):
        if k in item:
            bits.append(f"{k}={item[k]}")
    return " ".join(bits)


def _context(conn: Connection | None, index: int, around: int = 2) -> list[str]:
    if conn is None:
        return ["(no such connection)"]
    lo = max(0, index - around)
    return [f"{'>' if i == index else ' '}{i}: {one_line(x)}" for i, x in enumerate(conn.items[lo:index + around + 1], lo)]


def _errors(value) -> bool:
    if isinstance(value, dict):
        return any((k == "error_code" and v) or _errors(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_errors(v) for v in value)
    return False


def _periodic(item) -> bool:
    return isinstance(item, dict) and item.get("api") == "periodic"


def _failing(item: dict) -> dict:
    return {**item, "distinct": [x for x in item["distinct"] if _errors(x)]}


def _clean_periodic(item) -> bool:
    return isinstance(item, dict) and item.get("api") == "periodic" and not _errors(item["distinct"])


def compare_normalised(kafka: Normalised, kcoord: Normalised) -> Divergence | None:
    groups_k: dict[str, list[Connection]] = {}
    groups_c: dict[str, list[Connection]] = {}
    for c in kafka.connections:
        groups_k.setdefault(c.client_id, []).append(c)
    for c in kcoord.connections:
        groups_c.setdefault(c.client_id, []).append(c)
    pairs = []
    for client in sorted(set(groups_k) | set(groups_c)):
        ks, cs = groups_k.get(client, []), groups_c.get(client, [])
        for i in range(max(len(ks), len(cs))):
            pairs.append((ks[i] if i < len(ks) else None, cs[i] if i < len(cs) else None))
    # Report the earliest divergence (by when it happened on Kafka), not the first by client id.
    pairs.sort(key=lambda p: (p[0] or p[1]).first_seq)
    for k, c in pairs:
        label = (k or c).label
        if k is None or c is None:
            return Divergence(label, None, "connection", "present" if k else "absent",
                              "present" if c else "absent", _context(k, 0), _context(c, 0))
        i = j = 0
        while i < len(k.items) or j < len(c.items):
            a = k.items[i] if i < len(k.items) else "<end of connection>"
            b = c.items[j] if j < len(c.items) else "<end of connection>"
            d = _diff(a, b, "")
            if d and _periodic(a) and _periodic(b):
                # A successful heartbeat (or commit) before the one that hears of a rebalance
                # only says the request came earlier than the rejoin that started it: compare
                # what failed, and how.
                d = _diff(_failing(a), _failing(b), "")
            if not d:
                i, j = i + 1, j + 1
                continue
            # A run of periodic exchanges that all succeeded may happen zero times in a
            # shorter run (an auto-commit or heartbeat interval not reached): skip it.
            if _clean_periodic(a) and not _periodic(b):
                i += 1
                continue
            if _clean_periodic(b) and not _periodic(a):
                j += 1
                continue
            path, va, vb = d
            return Divergence(label, i, path.lstrip(".") or "exchange", va, vb, _context(k, i), _context(c, j))
    if kafka.discovery != kcoord.discovery:
        only_k = sorted(set(kafka.discovery) - set(kcoord.discovery))
        only_c = sorted(set(kcoord.discovery) - set(kafka.discovery))
        return Divergence("(all connections)", None, "FindCoordinator", only_k, only_c,
                          [f"only here: {x}" for x in only_k], [f"only here: {x}" for x in only_c])
    # An API used on one side only means the run ended before the client got to it (a
    # scenario stops at the assignment, a fetch may or may not have started); an API both
    # used at different versions is a negotiation that differs.
    both = {api for api, _ in kafka.other_apis} & {api for api, _ in kcoord.other_apis}
    k_versions = {x for x in kafka.other_apis if x[0] in both}
    c_versions = {x for x in kcoord.other_apis if x[0] in both}
    if k_versions != c_versions:
        only_k = sorted(k_versions - c_versions)
        only_c = sorted(c_versions - k_versions)
        return Divergence("(all connections)", None, "other_apis", only_k, only_c,
                          [f"only here: {only_k}"], [f"only here: {only_c}"])
    return None


def compare(kafka_exchanges: list[dict], kcoord_exchanges: list[dict]) -> Comparison:
    strict = compare_normalised(normalise(kafka_exchanges), normalise(kcoord_exchanges))
    if strict is None:
        return Comparison("identical")
    loose = compare_normalised(normalise(kafka_exchanges, loose=True), normalise(kcoord_exchanges, loose=True))
    if loose is None:
        return Comparison("equivalent", strict)
    # Past the partition split, the loose divergence is the one that is not a coin toss.
    return Comparison("differs", loose)
