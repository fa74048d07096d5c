"""Persisting and reloading groups (durable state), with the manual clock."""
from kcoord.coordinator import OffsetCommitRequest
from kcoord.coordinator.events import EventKind as E
from kcoord.coordinator.offsets import CommittedOffset
from kcoord.coordinator.state import GroupState as S
from tests.unit.coordinator.harness import Harness
from wire.errors import ErrorCode


def _stable_group(h, static=("s1",), dynamic=0):
    joins = [h.join(instance=i) for i in static] + [h.join_new() for _ in range(dynamic)]
    h.advance(10000)  # the initial join delay ends the round
    ids = [j.result.member_id for j in joins]
    gen = joins[0].result.generation_id
    leader = joins[0].result.leader_id
    h.sync(leader, gen, assignments={m: f"a-{m}".encode() for m in ids})
    for m in ids:
        if m != leader:
            h.sync(m, gen)
    assert h.group().state is S.STABLE
    return ids, gen


def _reloaded(h, record):
    fresh = Harness()
    fresh.timer.advance(h.timer.now_ms() - fresh.timer.now_ms())
    group = fresh.c.load_group(record)
    return fresh, group


def test_static_members_come_back_stable_with_their_assignment_and_session_timer():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, gen = _stable_group(h, static=("s1", "s2"))
    fresh, group = _reloaded(h, h.c.persisted_group("g"))
    assert (group.state, group.generation, sorted(group.members)) == (S.STABLE, gen, sorted(ids))
    assert fresh.heartbeat(ids[1], gen, instance="s2") == ErrorCode.NONE
    assert fresh.sync(ids[1], gen, instance="s2").result.assignment == f"a-{ids[1]}".encode()
    fresh.advance(10001)  # no heartbeat from s1 since the load: its restored session ends
    assert ids[0] not in fresh.group().members


def test_dynamic_members_come_back_too_and_carry_on_without_a_rebalance():
    # As Kafka reloads a classic group from __consumer_offsets after a failover: every member.
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, gen = _stable_group(h, static=("s1",), dynamic=1)
    fresh, group = _reloaded(h, h.c.persisted_group("g"))
    assert (group.state, group.generation, sorted(group.members)) == (S.STABLE, gen, sorted(ids))
    assert group.leader_id == ids[0]
    assert fresh.heartbeat(ids[1], gen) == ErrorCode.NONE
    assert fresh.sync(ids[1], gen).result.assignment == f"a-{ids[1]}".encode()
    assert not [e for e in fresh.events if e.kind == E.REBALANCE_STARTED]


def test_a_reloaded_member_that_stays_away_expires_after_its_session_timeout():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, gen = _stable_group(h, static=(), dynamic=2)
    fresh, group = _reloaded(h, h.c.persisted_group("g"))
    assert (group.state, group.generation, group.size, group.protocol_type) == (S.STABLE, gen, 2, "consumer")
    for _ in range(3):  # the first member keeps heartbeating, the second never comes back
        fresh.advance(4000)
        assert fresh.heartbeat(ids[0], gen) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
    assert ids[1] not in fresh.group().members
    assert [e.kind for e in fresh.events if e.kind == E.REBALANCE_STARTED] == [E.REBALANCE_STARTED]


def test_offsets_reload_and_a_group_without_metadata_is_simple():
    h = Harness()
    h.c.load_offset("simple", "t", 0, CommittedOffset(5, -1, "m", h.c.now() - 1000))
    err, fetched = h.c.fetch_offsets("simple", [("t", 0)])
    assert (err, fetched[0].offset, fetched[0].metadata) == (ErrorCode.NONE, 5, "m")
    group = h.group("simple")
    assert group.state is S.EMPTY and group.emptied_at_ms is None  # ages from commit time


def test_dead_and_unknown_groups_have_no_record():
    h = Harness()
    assert h.c.persisted_group("nobody") is None


def test_events_name_the_offsets_they_change():
    h = Harness()
    h.c.commit_offsets(OffsetCommitRequest("g", "", -1, None, [_p("t", 0, 1), _p("t", 1, 2)]))
    committed = [e for e in h.events if e.kind == E.OFFSETS_COMMITTED][-1]
    assert committed.details["partitions"] == [("t", 0), ("t", 1)]
    h.c.delete_offsets("g", [("t", 0), ("t", 2)])
    deleted = [e for e in h.events if e.kind == E.OFFSETS_DELETED][-1]
    assert deleted.details["partitions"] == [("t", 0)]


def _p(topic, partition, offset):
    from kcoord.coordinator import OffsetCommitPartition
    return OffsetCommitPartition(topic, partition, offset)
