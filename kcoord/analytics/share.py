"""Share groups (KIP-932) in the report: what happened to their records, from the journal's
`share_records` records (kcoord.journal: per group, member and interval, the records acquired,
redelivered, acknowledged, released and archived), one row per share group and one per group
and minute.

A `share_records` event carries those counts in the events' `counts` column. A window is
attributed to the minute it began in (windows are 10 s by default, so at most one straddles a
minute's end).
"""
from __future__ import annotations

from kcoord.journal import SHARE_RECORDS_FIELDS

SHARE_RECORDS = "share_records"
# What marks a group as a share group among the events.
SHARE_KINDS = {"share_group_created", SHARE_RECORDS}
COUNTS = list(SHARE_RECORDS_FIELDS)
# share_groups column -> the count it sums.
SUMMED = {"deliveries": "acquired", "redeliveries": "redeliveries", "accepted": "accepted", "released": "released",
          "rejected": "rejected", "renewed": "renewed", "session_releases": "session_released",
          "lock_expiries": "lock_expired", "archived": "archived"}
SHARE_GROUP_FIELDS = ["group_id", "first_ms", "last_ms", "members_seen", *SUMMED, "max_delivery_count"]
SHARE_MINUTELY_FIELDS = ["group_id", "minute_ms", "deliveries", "redeliveries"]
MINUTE_MS = 60_000


def counts_of(record: dict) -> dict[str, int]:
    """A journal `share_records` record's counts (missing or malformed ones as 0)."""
    out = {}
    for name in COUNTS:
        try:
            out[name] = int(record.get(name) or 0)
        except (TypeError, ValueError):
            out[name] = 0
    return out


def share_group_row(events) -> dict | None:
    """The share group row of one group's events; None when they are not a share group's.
    Members seen: the distinct member ids of all its events (heartbeats and records alike)."""
    events = sorted(events, key=lambda e: e["time_ms"])
    if not {e["kind"] for e in events} & SHARE_KINDS:
        return None
    records = [e["counts"] or {} for e in events if e["kind"] == SHARE_RECORDS]
    row = {"group_id": events[0]["group_id"], "first_ms": events[0]["time_ms"], "last_ms": events[-1]["time_ms"],
           "members_seen": len({e["member_id"] for e in events if e["member_id"]})}
    row.update((column, sum(c.get(count, 0) for c in records)) for column, count in SUMMED.items())
    row["max_delivery_count"] = max((c.get("max_delivery_count", 0) for c in records), default=0)
    return row


def share_minutely_rows(events) -> list[dict]:
    """Per minute (UTC) of one group's `share_records` events: the records delivered and redelivered."""
    minutes: dict[int, dict] = {}
    for e in events:
        if e["kind"] != SHARE_RECORDS:
            continue
        minute = e["time_ms"] - e["time_ms"] % MINUTE_MS
        row = minutes.setdefault(minute, {"group_id": e["group_id"], "minute_ms": minute, "deliveries": 0,
                                          "redeliveries": 0})
        counts = e["counts"] or {}
        row["deliveries"] += counts.get("acquired", 0)
        row["redeliveries"] += counts.get("redeliveries", 0)
    return [minutes[m] for m in sorted(minutes)]
