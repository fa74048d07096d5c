"""The event-loop face and the runtime: parked joins answered by the manual clock, wait_for,
routing to each __consumer_offsets partition's coordinator on the broker leading it, loading
and unloading as leadership moves."""
import asyncio

import pytest

from kcoord.cluster.cluster import Cluster, Node
from kcoord.coordinator import (
    CoordinatorConfig, CoordinatorRuntime, CoordinatorService, EventBus, HeartbeatRequest, JoinRequest, LeaveMember,
    ManualTimer, OffsetCommitPartition, OffsetCommitRequest, SyncRequest, parked,
)
from kcoord.coordinator.config import offsets_partition_for
from kcoord.coordinator.events import EventKind
from kcoord.log.consumer_offsets import TOPIC, TOPIC_CONFIGS, OffsetsTopic
from kcoord.log.offsets_loader import OffsetsPartitions
from kcoord.log.topics import InternalTopic, TopicStore
from wire.errors import ErrorCode as E


def _service(delay=3000, brokers=1, partitions=4, load_ms=0):
    timer = ManualTimer()
    cluster = Cluster([Node(i, "127.0.0.1", 0) for i in range(brokers)])
    store = TopicStore(1, cluster)
    store.internal[TOPIC] = InternalTopic(partitions, dict(TOPIC_CONFIGS), min(3, brokers))
    store.create("t", 3)
    events = []
    bus = EventBus()
    bus.subscribe(events.append)
    runtime = CoordinatorRuntime(timer, CoordinatorConfig(initial_rebalance_delay_ms=delay,
                                                          offsets_topic_partitions=partitions),
                                 store, bus, load_ms=load_ms)
    sink = OffsetsTopic(store, partitions, timer.now_ms)
    runtime.record_sink, runtime.log = sink, OffsetsPartitions(sink)
    cluster.listeners.append(lambda ch: ch.topic == TOPIC and runtime.leader_changed(ch.partition, ch.new_leader,
                                                                                         ch.epoch))
    return CoordinatorService(runtime), timer, cluster, events


def _join(member_id="", instance=None, group="g"):
    return JoinRequest(group, member_id=member_id, instance_id=instance, protocol_type="consumer",
                       protocols=[("range", b"m")], session_timeout_ms=10000, rebalance_timeout_ms=30000,
                       client_id="c", client_host="/h")


async def _settle():
    for _ in range(10):
        await asyncio.sleep(0)


async def test_parked_join_completes_when_manual_time_advances():
    svc, timer, _, _ = _service()
    g = svc.broker(0).for_group("g")
    first = await parked(lambda respond: g.join_group(_join(), respond))
    assert first.error == E.MEMBER_ID_REQUIRED
    join = asyncio.ensure_future(parked(lambda respond: g.join_group(_join(first.member_id), respond)))
    await _settle()
    assert not join.done()  # the initial delay holds it
    waiter = asyncio.ensure_future(svc.wait_for("g", state="CompletingRebalance", members=1))
    await _settle()
    assert not waiter.done()
    timer.advance(3000)
    result = await asyncio.wait_for(join, 1)
    assert result.error == E.NONE and result.generation_id == 1
    desc = await asyncio.wait_for(waiter, 1)
    assert desc.state == "CompletingRebalance"
    sync = await parked(lambda respond: g.sync_group(SyncRequest(
        "g", member_id=result.member_id, generation_id=1, protocol_type="consumer", protocol_name="range",
        assignments={result.member_id: b"a"}), respond))
    assert sync.assignment == b"a"
    assert g.heartbeat(HeartbeatRequest("g", member_id=result.member_id, generation_id=1)) == E.NONE
    assert g.commit_offsets(OffsetCommitRequest("g", result.member_id, 1, None, [])).error == E.NONE
    assert [x.group_id for x in svc.broker(0).list_groups()[1]] == ["g"]
    # session expiry with zero real seconds waited
    timer.advance(10000)
    await svc.wait_for("g", state="Empty", members=0, generation_at_least=2, timeout=1)
    assert g.delete_group("g") == E.NONE
    await svc.wait_for("g", state="Dead", timeout=1)
    await svc.close()


async def test_wait_for_times_out_with_a_description():
    svc, _, _, _ = _service()
    with pytest.raises(TimeoutError, match=r"group g did not reach state=Stable .*\(it is absent\)"):
        await svc.wait_for("g", state="Stable", timeout=0.05)
    await svc.close()


async def test_leave_answers_and_a_failing_part_reaches_the_caller():
    svc, _, _, _ = _service(delay=0)
    g = svc.broker(0).for_group("g")
    first = await parked(lambda respond: g.join_group(_join(instance="i"), respond))
    assert first.error == E.NONE
    assert g.leave_group("g", [LeaveMember("", "i")]).members[0][2] == E.NONE

    def bug(req):
        raise RuntimeError("bug")

    g.membership.heartbeat = bug
    with pytest.raises(RuntimeError, match="bug"):
        g.heartbeat(HeartbeatRequest("g", "m", 1))
    assert g.describe_group("g").state == "Empty"  # the coordinator carries on
    await svc.close()


def _group_on(cluster, partitions, node, prefix="g"):
    """A group id whose __consumer_offsets partition `node` leads."""
    topic = cluster.topics.get(TOPIC)
    for i in range(1000):
        group = f"{prefix}{i}"
        if topic.partitions[offsets_partition_for(group, partitions)].leader == node:
            return group
    raise AssertionError("no such group id")


async def test_requests_go_to_the_partitions_leader_and_follow_it_when_it_moves():
    svc, timer, cluster, events = _service(delay=0, brokers=3, load_ms=100)
    runtime = svc.runtime
    runtime.find("x")   # creates the topic
    group = _group_on(cluster, 4, 1)
    index = offsets_partition_for(group, 4)
    assert runtime.find(group) == (E.NONE, 1)
    on_1, on_0 = svc.broker(1).for_group(group), svc.broker(0).for_group(group)
    joined = await parked(lambda respond: on_1.join_group(_join(instance="s", group=group), respond))
    assert joined.error == E.NONE
    synced = await parked(lambda respond: on_1.sync_group(SyncRequest(
        group, joined.member_id, 1, "s", assignments={joined.member_id: b"a"}), respond))
    assert synced.error == E.NONE
    assert on_0.heartbeat(HeartbeatRequest(group, joined.member_id, 1, "s")) == E.NOT_COORDINATOR
    assert on_1.commit_offsets(OffsetCommitRequest(group, joined.member_id, 1, "s",
                                                   [OffsetCommitPartition("t", 0, 7)])).error == E.NONE
    # Leadership moves to another replica: broker 1 unloads, the new leader loads for 100 ms.
    partition = cluster.topics.get(TOPIC).partitions[index]
    new = partition.replicas[1]
    assert cluster.move_leader(TOPIC, index, new) is None
    assert on_1.heartbeat(HeartbeatRequest(group, joined.member_id, 1, "s")) == E.NOT_COORDINATOR
    assert svc.broker(1).for_group(group).heartbeat(HeartbeatRequest(group, joined.member_id, 1, "s")) \
        == E.NOT_COORDINATOR
    loading = svc.broker(new).for_group(group)
    assert loading.heartbeat(HeartbeatRequest(group, joined.member_id, 1, "s")) == E.COORDINATOR_LOAD_IN_PROGRESS
    assert svc.broker(new).list_groups()[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    timer.advance(100)
    loaded = svc.broker(new).for_group(group)
    # The static member rides through: same generation, no rebalance; its offsets came along.
    assert loaded.heartbeat(HeartbeatRequest(group, joined.member_id, 1, "s")) == E.NONE
    assert {k: v.offset for k, v in runtime.committed(group).items()} == {("t", 0): 7}
    assert runtime.find(group) == (E.NONE, new)
    kinds = [e.kind for e in events if e.group_id == group]
    assert kinds.count(EventKind.UNLOADED) == 1 and kinds[-1] is EventKind.LOADED
    assert EventKind.REBALANCE_STARTED not in kinds[kinds.index(EventKind.UNLOADED):]
    await svc.close()


async def test_a_parked_join_is_answered_not_coordinator_when_its_partition_moves():
    svc, timer, cluster, _ = _service(delay=3000, brokers=3)
    svc.runtime.find("x")
    group = _group_on(cluster, 4, 0)
    index = offsets_partition_for(group, 4)
    g = svc.broker(0).for_group(group)
    first = await parked(lambda respond: g.join_group(_join(group=group), respond))
    join = asyncio.ensure_future(parked(lambda respond: g.join_group(_join(first.member_id, group=group), respond)))
    await _settle()
    assert not join.done()
    cluster.move_leader(TOPIC, index, cluster.topics.get(TOPIC).partitions[index].replicas[1])
    assert (await asyncio.wait_for(join, 1)).error == E.NOT_COORDINATOR
    timer.advance(3000)   # the unloaded group's join timer is gone with it
    await svc.close()


async def test_a_partition_without_a_live_replica_has_no_coordinator():
    svc, _, cluster, _ = _service(brokers=2)
    svc.runtime.find("x")
    for node in (0, 1):
        cluster.fence(node, "stopped")
    assert svc.runtime.find("g") == (E.COORDINATOR_NOT_AVAILABLE, -1)
    await svc.close()


async def test_build_coordinator_uses_server_settings():
    from kcoord.config import ServerConfig
    from kcoord.coordinator import build_coordinator

    svc = build_coordinator(ServerConfig(initial_rebalance_delay_ms=1234, coordinator_load_ms=5), TopicStore())
    assert svc.runtime.config.initial_rebalance_delay_ms == 1234 and svc.runtime.load_ms == 5
    await svc.close()
