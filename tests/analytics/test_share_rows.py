"""What the report makes of a journal's share_records records through its own parsers and
per-group code (what Spark runs on each group; test_report_journal.py runs the Spark job on a
real kcoord's journal of a share group)."""
from __future__ import annotations

import json

from kcoord.analytics import events as ev
from kcoord.analytics.share import share_group_row, share_minutely_rows

MINUTE = 1_700_000_040_000   # a minute's start


def _line(t, member, **counts) -> str:
    return json.dumps({"kind": "share_records", "time_ms": t, "group_id": "g", "member_id": member,
                       "interval_ms": 10000, **counts})


LINES = [
    json.dumps({"kind": "share_group_created", "time_ms": MINUTE - 5, "group_id": "g", "generation": 1,
                "member_id": "m3"}),
    _line(MINUTE + 1000, "m1", acquired=10, redeliveries=0, max_delivery_count=1, accepted=8, released=2),
    _line(MINUTE + 30000, "m2", acquired=2, redeliveries=2, max_delivery_count=2, rejected=1, renewed=4, gaps=1),
    _line(MINUTE + 60000, "m1", acquired=3, redeliveries=1, max_delivery_count=5, session_released=3,
          lock_expired=2, archived=1),
    json.dumps({"kind": "offset_commits", "time_ms": MINUTE, "group_id": "other", "commits": 1}),
]


def _rows(group="g"):
    return [r for r in ev.parse_lines(LINES, "journal", "kcoord", {}) if r["group_id"] == group]


def test_a_share_records_line_becomes_an_event_with_its_counts():
    row = _rows()[1]
    assert (row["kind"], row["member_id"], row["time_ms"]) == ("share_records", "m1", MINUTE + 1000)
    assert row["counts"]["acquired"] == 10 and row["counts"]["accepted"] == 8 and row["counts"]["archived"] == 0
    assert set(row["counts"]) == {"acquired", "redeliveries", "max_delivery_count", "accepted", "released",
                                  "rejected", "gaps", "renewed", "session_released", "lock_expired", "archived"}


def test_the_share_group_row_sums_its_records_and_counts_its_members():
    assert share_group_row(_rows()) == {
        "group_id": "g", "first_ms": MINUTE - 5, "last_ms": MINUTE + 60000, "members_seen": 3, "deliveries": 15,
        "redeliveries": 3, "accepted": 8, "released": 2, "rejected": 1, "renewed": 4, "session_releases": 3,
        "lock_expiries": 2, "archived": 1, "max_delivery_count": 5}
    assert share_group_row(_rows("other")) is None


def test_deliveries_per_minute_count_each_window_in_the_minute_it_began():
    assert share_minutely_rows(_rows()) == [
        {"group_id": "g", "minute_ms": MINUTE, "deliveries": 12, "redeliveries": 2},
        {"group_id": "g", "minute_ms": MINUTE + 60000, "deliveries": 3, "redeliveries": 1}]
    assert share_minutely_rows(_rows("other")) == []
