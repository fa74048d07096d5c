"""From one group's time-ordered events to its rebalances (PreparingRebalance -> Stable).

Plain Python over one group at a time: Spark runs it per group in parallel,
bench/report.py runs it in one process over all groups.
"""
from __future__ import annotations

import re

HOUR_MS = 3_600_000
MEMBER_KINDS = {"member_joined", "member_left", "member_expired", "pending_member_expired", "member_fenced",
                "member_replaced"}
# Within one millisecond, the member change is logged before the rebalance it triggers,
# and the assignment before the group is declared stable.
_ORDER = {"member_joined": 0, "member_left": 0, "member_expired": 0, "pending_member_expired": 0,
          "member_fenced": 0, "member_replaced": 0, "static_rejoin_no_rebalance": 1, "rebalance_started": 2,
          "join_completed": 3, "assignment_received": 4, "stable": 5, "empty": 5, "dead": 6}
_UUID_SUFFIX = re.compile(r"^(.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_REASON_MEMBER = re.compile(r"(?:[Mm]ember(?:\(s\))?|[Ll]eader) (\S+?)(?:[;,]|\s|$)")

_KIND_CAUSE = {"member_joined": "member_joined", "member_left": "member_left", "member_expired": "failed_heartbeat",
               "pending_member_expired": "failed_heartbeat", "member_replaced": "static_replacement",
               "member_fenced": "member_left"}
# How long before a reason-less "Preparing to rebalance" (Kafka < 2.4) a member change may be its cause.
_CAUSE_WINDOW_MS = 1000

REBALANCE_FIELDS = ["group_id", "seq", "broker", "start_ms", "end_ms", "duration_ms", "outcome", "cause", "reason",
                    "trigger_member", "trigger_client", "generation_from", "generation_to", "restarts",
                    "members_before", "members_after", "members_affected", "joined", "left", "failed"]


def sort_key(e: dict):
    return (e["time_ms"], _ORDER.get(e["kind"], 7))


def classify(reason: str | None, last_member_event: dict | None, start_ms: int) -> str:
    r = (reason or "").lower()
    if r:
        if "static member" in r:
            return "static_replacement"
        if "adding new member" in r:
            return "member_joined"
        if "leavegroup" in r:
            return "member_left"
        if "heartbeat expiration" in r or "session timeout" in r:
            return "failed_heartbeat"
        if r.startswith("leader ") or "re-joining" in r:
            return "leader_rejoin"
        if "updating metadata" in r:
            return "metadata_change"
    if last_member_event is not None and start_ms - last_member_event["time_ms"] <= _CAUSE_WINDOW_MS:
        return _KIND_CAUSE.get(last_member_event["kind"], "other")
    return "other"


def client_of(member_id: str | None) -> str | None:
    """Kafka member ids are `<client.id>-<uuid>`; the client id survives restarts, the member id does not."""
    if not member_id:
        return None
    m = _UUID_SUFFIX.match(member_id)
    return m.group(1) if m else member_id


def rebalances_for_group(events) -> list[dict]:
    """Journal and server-log events go through the state machine below; rows read from
    `__consumer_offsets` hold stored generations only (kcoord.analytics.offsets_topic)."""
    events = list(events)
    stored = [e for e in events if e["source"] == "offsets_topic"]
    out = _transitions([e for e in events if e["source"] != "offsets_topic"]) if len(stored) < len(events) else []
    if stored:
        from kcoord.analytics.offsets_topic import generations_for_group

        out += generations_for_group(stored, seq_start=len(out))
    return out


def _transitions(events) -> list[dict]:
    events = sorted(events, key=sort_key)
    out: list[dict] = []
    cur: dict | None = None
    last_member: dict | None = None
    size: int | None = None
    for e in events:
        kind = e["kind"]
        if kind in MEMBER_KINDS:
            last_member = e
            if cur is not None and e.get("member_id"):
                cur["_affected"].add(e["member_id"])
                key = {"member_joined": "joined", "member_left": "left", "member_fenced": "left"}.get(kind, "failed")
                if kind != "member_replaced":
                    cur[key] += 1
            if e.get("members") is not None and e["source"] == "journal":
                size = e["members"]
            continue
        if kind == "rebalance_started":
            if cur is not None:
                cur["restarts"] += 1
                continue
            cause = classify(e.get("reason"), last_member, e["time_ms"])
            m = _REASON_MEMBER.search(e.get("reason") or "")
            trigger = m.group(1) if m else None
            if trigger is None and last_member is not None and cause != "other":
                trigger = last_member.get("member_id")
            cur = dict.fromkeys(REBALANCE_FIELDS)
            cur.update(group_id=e["group_id"], seq=len(out) + 1, broker=e.get("broker"), start_ms=e["time_ms"],
                       cause=cause, reason=e.get("reason"), trigger_member=trigger, trigger_client=client_of(trigger),
                       generation_from=e.get("generation"), restarts=0, members_before=size, joined=0, left=0,
                       failed=0, _affected=set())
            # the member change that triggered it happened just before the rebalance began
            if last_member is not None and e["time_ms"] - last_member["time_ms"] <= _CAUSE_WINDOW_MS \
                    and last_member.get("member_id"):
                cur["_affected"].add(last_member["member_id"])
                k = last_member["kind"]
                if k != "member_replaced":
                    cur[{"member_joined": "joined", "member_left": "left", "member_fenced": "left"}.get(k, "failed")] += 1
            if trigger:
                cur["_affected"].add(trigger)
            last_member = None
            continue
        if kind == "join_completed" and cur is not None:
            if e.get("state_after") == "Empty":
                kind = "empty"
            else:
                cur["generation_to"] = e.get("generation")
                if e.get("members") is not None:
                    cur["members_after"] = e["members"]
                continue
        if kind in ("stable", "empty") and cur is not None:
            cur["end_ms"] = e["time_ms"]
            cur["duration_ms"] = e["time_ms"] - cur["start_ms"]
            cur["outcome"] = "stable" if kind == "stable" else "empty"
            cur["generation_to"] = e.get("generation") if e.get("generation") is not None else cur["generation_to"]
            if kind == "empty":
                cur["members_after"] = 0
            elif e.get("members") is not None:
                cur["members_after"] = e["members"]
            size = cur["members_after"] if cur["members_after"] is not None else size
            out.append(_finish(cur))
            cur = None
    if cur is not None:  # still rebalancing when the input ends
        cur["outcome"] = "incomplete"
        out.append(_finish(cur))
    return out


def _finish(r: dict) -> dict:
    r["members_affected"] = len(r.pop("_affected"))
    return r


def hourly_slices(r: dict):
    """(group_id, hour_start_ms, stop-the-world ms in that hour) for one finished rebalance."""
    start, end = r["start_ms"], r["end_ms"]
    if end is None:
        return
    t = start
    while t < end:
        hour = t - t % HOUR_MS
        upto = min(end, hour + HOUR_MS)
        yield r["group_id"], hour, upto - t
        t = upto
