"""Groups come back from their __consumer_offsets partition: the coordinator writes Kafka's
records through the topic sink, a fresh coordinator replays them (kcoord.log.offsets_loader),
as a broker that comes to lead the partition does; with the manual clock."""
from kcoord.coordinator import OffsetCommitRequest
from kcoord.coordinator.events import EventKind as E
from kcoord.coordinator.classic.state import GroupState as S
from kcoord.log.consumer_offsets import TOPIC, OffsetsTopic
from kcoord.log.offsets_loader import load_partition
from kcoord.log.topics import TopicStore
from tests.unit.coordinator.consumer_harness import ConsumerHarness, Topics
from tests.unit.coordinator.harness import Harness
from wire.errors import ErrorCode


def _recorded(harness):
    """`harness`'s coordinator writing to a real __consumer_offsets of one partition."""
    store = TopicStore()
    harness.c.record_sink = OffsetsTopic(store, 1, harness.c.now)
    return store


def _reload(store, fresh, now_ms):
    fresh.timer.advance(now_ms - fresh.timer.now_ms())
    fresh.c.load(*load_partition(store.get(TOPIC).partitions[0], fresh.timer.now_ms()))
    return fresh


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


def test_static_members_come_back_stable_with_their_assignment_and_session_timer():
    h = Harness(initial_rebalance_delay_ms=3000)
    store = _recorded(h)
    ids, gen = _stable_group(h, static=("s1", "s2"))
    fresh = _reload(store, Harness(), h.timer.now_ms())
    group = fresh.group()
    assert (group.state, group.generation, sorted(group.members)) == (S.STABLE, gen, sorted(ids))
    assert fresh.heartbeat(ids[1], gen, instance="s2") == ErrorCode.NONE
    assert fresh.sync(ids[1], gen, instance="s2").result.assignment == f"a-{ids[1]}".encode()
    fresh.advance(10001)  # no heartbeat from s1 since the load: its fresh session ends
    assert ids[0] not in fresh.group().members
    assert [e.kind for e in fresh.events if e.kind is E.LOADED] == [E.LOADED]


def test_dynamic_members_come_back_too_and_carry_on_without_a_rebalance():
    # As Kafka reloads a classic group from __consumer_offsets after a failover: every member.
    h = Harness(initial_rebalance_delay_ms=3000)
    store = _recorded(h)
    ids, gen = _stable_group(h, static=("s1",), dynamic=1)
    fresh = _reload(store, Harness(), h.timer.now_ms())
    group = fresh.group()
    assert (group.state, group.generation, sorted(group.members)) == (S.STABLE, gen, sorted(ids))
    assert group.leader_id == ids[0] and group.protocol_name == "range"
    assert fresh.heartbeat(ids[1], gen) == ErrorCode.NONE
    assert fresh.sync(ids[1], gen).result.assignment == f"a-{ids[1]}".encode()
    assert not [e for e in fresh.events if e.kind == E.REBALANCE_STARTED]


def test_a_reloaded_member_that_stays_away_expires_after_its_session_timeout():
    h = Harness(initial_rebalance_delay_ms=3000)
    store = _recorded(h)
    ids, gen = _stable_group(h, static=(), dynamic=2)
    fresh = _reload(store, Harness(), h.timer.now_ms())
    group = fresh.group()
    assert (group.state, group.generation, group.size, group.protocol_type) == (S.STABLE, gen, 2, "consumer")
    for _ in range(3):  # the first member keeps heartbeating, the second never comes back
        fresh.advance(4000)
        assert fresh.heartbeat(ids[0], gen) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
    assert ids[1] not in fresh.group().members
    assert [e.kind for e in fresh.events if e.kind == E.REBALANCE_STARTED] == [E.REBALANCE_STARTED]


def test_offsets_come_back_and_a_group_without_metadata_is_simple():
    h = Harness()
    store = _recorded(h)
    h.c.commit_offsets(OffsetCommitRequest("simple", "", -1, None, [_p("t", 0, 5, "m")]))
    fresh = _reload(store, Harness(), h.timer.now_ms())
    err, fetched = fresh.c.fetch_offsets("simple", [("t", 0)])
    assert (err, fetched[0].offset, fetched[0].metadata) == (ErrorCode.NONE, 5, "m")
    group = fresh.group("simple")
    assert group.state is S.EMPTY and group.emptied_at_ms is None  # ages from commit time


def test_deleted_groups_and_offsets_stay_deleted():
    h = Harness()
    store = _recorded(h)
    h.c.commit_offsets(OffsetCommitRequest("gone", "", -1, None, [_p("t", 0, 1)]))
    h.c.commit_offsets(OffsetCommitRequest("kept", "", -1, None, [_p("t", 0, 2), _p("t", 1, 3)]))
    h.c.delete_offsets("kept", [("t", 1)])
    assert h.c.delete_group("gone") == ErrorCode.NONE
    fresh = _reload(store, Harness(), h.timer.now_ms())
    assert fresh.group("gone") is None and fresh.c.offsets.all("gone") == {}
    assert {k: v.offset for k, v in fresh.c.offsets.all("kept").items()} == {("t", 0): 2}


def _consumer(store):
    topics = Topics.__new__(Topics)
    topics.topics = store.topics        # the harness names topics by the store's ids
    h = ConsumerHarness(topics)
    h.c.record_sink = OffsetsTopic(store, 1, h.c.now)
    return h


def test_a_consumer_group_comes_back_with_its_epochs_members_and_assignments():
    store = TopicStore()
    h = _consumer(store)
    store.create("t", 4)
    h.hb("m1", 0)
    h.hb("m2", 0)
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)
    h.hb("m1", 2, owned={"t": [0, 2]}, partial=True)
    h.hb("m2", 3, owned={}, partial=True)
    before = h.group()
    topics = Topics.__new__(Topics)
    topics.topics = store.topics
    fresh = _reload(store, ConsumerHarness(topics), h.timer.now_ms())
    g = fresh.group()
    assert (g.group_epoch, g.assignment_epoch, str(g.state)) == (3, 3, "Stable")
    assert {m: x.assigned for m, x in g.members.items()} == {m: x.assigned for m, x in before.members.items()}
    assert g.subscribed_topics == before.subscribed_topics and g.target == before.target
    r = fresh.hb("m2", 3, owned={"t": [1, 3]}, partial=True)
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, 3)


def test_a_deleted_consumer_group_stays_deleted():
    store = TopicStore()
    h = _consumer(store)
    store.create("t", 1)
    h.hb("m1", 0)
    h.hb("m1", -1, owned=None, partial=True)
    assert h.c.delete_group("g") == ErrorCode.NONE
    topics = Topics.__new__(Topics)
    topics.topics = store.topics
    fresh = _reload(store, ConsumerHarness(topics), h.timer.now_ms())
    assert fresh.group() is None and fresh.c.group("g") is None


def _p(topic, partition, offset, metadata=""):
    from kcoord.coordinator import OffsetCommitPartition
    return OffsetCommitPartition(topic, partition, offset, -1, metadata)
