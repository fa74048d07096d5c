"""What ShareManager publishes to the coordinator's event bus about a share group's records (one
event per request and share-partition, or per member whose locks expired), on the manual clock,
and how the journal sums those events per group, member and interval."""
from __future__ import annotations

import json

import pytest

from kcoord.coordinator.clock import ManualTimer
from kcoord.coordinator.events import EventBus, EventKind, GroupEvent
from kcoord.journal import Journal
from kcoord.share.manager import AckBatch
from kcoord.share.partition import ACCEPT, GAP, REJECT, RELEASE, RENEW
from tests.unit.share.test_share_manager import KEY, fetch, manager, produce, store_with

WHERE = {"topic": "t", "partition": 0}


def watched(**group):
    """(timer, manager, events published) over an empty topic `t`, the group reading from the earliest."""
    timer, bus, events = ManualTimer(), EventBus(), []
    bus.subscribe(events.append)
    m = manager(store_with(0), timer, bus, share_auto_offset_reset="earliest", **group)
    return timer, m, events


def seen(events) -> list[tuple]:
    out = [(e.kind, e.group_id, e.member_id, e.details) for e in events]
    events.clear()
    return out


async def test_acquisitions_and_acknowledgements_are_published_with_their_counts():
    _, m, events = watched()
    produce(m.topics, 5)
    assert await fetch(m) == [(0, 4, 1)]
    assert seen(events) == [(EventKind.SHARE_RECORDS_ACQUIRED, "g", "m1",
                             {**WHERE, "records": 5, "redeliveries": 0, "max_delivery_count": 1})]
    await m.acknowledge("g", "m1", {KEY: [AckBatch(0, 4, [RELEASE, RELEASE, ACCEPT, ACCEPT, ACCEPT])]})
    assert seen(events) == [(EventKind.SHARE_RECORDS_ACKNOWLEDGED, "g", "m1", {**WHERE, "released": 2, "accepted": 3})]
    assert await fetch(m, "m2") == [(0, 1, 2)]
    assert seen(events) == [(EventKind.SHARE_RECORDS_ACQUIRED, "g", "m2",
                             {**WHERE, "records": 2, "redeliveries": 2, "max_delivery_count": 2})]
    # Nothing acquirable, and an acknowledgement refused: nothing happened to a record.
    assert await fetch(m, "m2") == []
    code, _ = (await m.acknowledge("g", "m1", {KEY: [AckBatch(0, 1, [ACCEPT])]}))[KEY]
    assert code != 0 and seen(events) == []
    await m.acknowledge("g", "m2", {KEY: [AckBatch(0, 0, [RENEW]), AckBatch(1, 1, [REJECT])]})
    await m.acknowledge("g", "m2", {KEY: [AckBatch(0, 0, [GAP])]})
    assert seen(events) == [(EventKind.SHARE_RECORDS_ACKNOWLEDGED, "g", "m2", {**WHERE, "renewed": 1, "rejected": 1}),
                            (EventKind.SHARE_RECORDS_ACKNOWLEDGED, "g", "m2", {**WHERE, "gaps": 1})]


async def test_expiries_releases_and_archiving_at_the_delivery_limit():
    timer, m, events = watched(share_delivery_count_limit="2", share_record_lock_duration_ms="15000")
    produce(m.topics, 2)
    produce(m.topics, 2)
    assert await fetch(m, "m1", max_records=1) == [(0, 1, 1)]
    assert await fetch(m, "m2", max_records=1) == [(2, 3, 1)]
    seen(events)
    timer.advance(15000)
    # One event per member whose locks expired.
    assert sorted(seen(events), key=lambda e: e[2]) == [
        (EventKind.SHARE_LOCKS_EXPIRED, "g", "m1", {**WHERE, "records": 2}),
        (EventKind.SHARE_LOCKS_EXPIRED, "g", "m2", {**WHERE, "records": 2})]
    assert await fetch(m, "m1", max_records=1) == [(0, 1, 2)]
    assert await fetch(m, "m2", max_records=1) == [(2, 3, 2)]
    seen(events)
    # On their last delivery: released, the records are archived instead.
    await m.release_member("g", "m1")
    await m.acknowledge("g", "m2", {KEY: [AckBatch(2, 3, [RELEASE, ACCEPT])]})
    assert seen(events) == [
        (EventKind.SHARE_RECORDS_RELEASED, "g", "m1", {**WHERE, "records": 2, "archived": 2}),
        (EventKind.SHARE_RECORDS_ACKNOWLEDGED, "g", "m2", {**WHERE, "released": 1, "accepted": 1, "archived": 1})]
    # A member holding nothing releases nothing.
    await m.release_member("g", "m1")
    assert seen(events) == []


@pytest.mark.parametrize("archived", [False, True])
async def test_a_lock_expiry_on_the_last_delivery_archives(archived):
    timer, m, events = watched(share_delivery_count_limit="2" if archived else "3",
                               share_record_lock_duration_ms="15000")
    produce(m.topics, 3)
    await fetch(m)
    timer.advance(15000)
    await fetch(m)
    seen(events)
    timer.advance(15000)
    assert seen(events) == [(EventKind.SHARE_LOCKS_EXPIRED, "g", "m1",
                             {**WHERE, "records": 3, **({"archived": 3} if archived else {})})]


def _share_event(kind, t, member, **counts):
    return GroupEvent(kind, t, "g", -1, "", "", member_id=member, details={**WHERE, **counts})


def test_the_journal_sums_share_record_events_per_group_member_and_interval(tmp_path):
    j = Journal(tmp_path / "events.jsonl", commit_interval_ms=1000)
    j(_share_event(EventKind.SHARE_RECORDS_ACQUIRED, 0, "m1", records=5, redeliveries=0, max_delivery_count=1))
    j(_share_event(EventKind.SHARE_RECORDS_ACQUIRED, 10, "m2", records=1, redeliveries=1, max_delivery_count=3))
    j(_share_event(EventKind.SHARE_RECORDS_ACKNOWLEDGED, 20, "m1", accepted=3, released=2))
    j(_share_event(EventKind.SHARE_RECORDS_ACQUIRED, 500, "m1", records=2, redeliveries=2, max_delivery_count=2))
    j(_share_event(EventKind.SHARE_LOCKS_EXPIRED, 900, "m1", records=2, archived=1))
    j(_share_event(EventKind.SHARE_RECORDS_RELEASED, 1100, "m1", records=4))   # the next interval of m1's
    j(GroupEvent(EventKind.MEMBER_LEFT, 1200, "g", 3, "", "", member_id="m2"))
    j.close()
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    zero = dict.fromkeys(["acquired", "redeliveries", "max_delivery_count", "accepted", "released", "rejected", "gaps",
                          "renewed", "session_released", "lock_expired", "archived"], 0)
    window = {"kind": "share_records", "group_id": "g", "interval_ms": 1000}
    assert records[0] == {**window, "time_ms": 0, "member_id": "m1", **zero, "acquired": 7, "redeliveries": 2,
                          "max_delivery_count": 2, "accepted": 3, "released": 2, "lock_expired": 2, "archived": 1}
    # m2's window had passed when the next event came: written before it; m1's second one at the close.
    assert records[1] == {**window, "time_ms": 10, "member_id": "m2", **zero, "acquired": 1, "redeliveries": 1,
                          "max_delivery_count": 3}
    assert records[2]["kind"] == "member_left"
    assert records[3] == {**window, "time_ms": 1100, "member_id": "m1", **zero, "session_released": 4}
    assert len(records) == 4
