"""Online migration between classic and consumer groups (KIP-848), with a manual clock: the
upgrade when a consumer-protocol member joins a classic group, classic members served inside a
consumer group, the downgrade when the last consumer-protocol member leaves, Kafka's refusals,
the records, and durable state across a restart. Facts: Kafka 4.3.1's GroupMetadataManager."""
import struct

import pytest

from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.consumer.migration import decode_assignment, encode_assignment
from kcoord.coordinator.records import ConsumerGroupRecord, GroupMetadataRecord
from kcoord.coordinator.requests import (HeartbeatRequest, JoinRequest, LeaveMember, OffsetCommitPartition,
                                         OffsetCommitRequest, SyncRequest)
from kcoord.coordinator.classic.state import GroupState
from tests.unit.coordinator.consumer_harness import ConsumerHarness
from tests.unit.coordinator.harness import Box
from wire import codec
from wire.errors import ErrorCode as E

SESSION = 10000
DELAY = 100


def harness(*args, **config):
    # Classic groups gather their first members within an initial delay, as brokers do.
    config.setdefault("initial_rebalance_delay_ms", DELAY)
    return ConsumerHarness(*args, **config)


def subscription(topics=("t",), owned=(), version=1, user_data=None) -> bytes:
    body = {"topics": list(topics), "user_data": user_data}
    if version >= 1:
        body["owned_partitions"] = [{"topic": t, "partitions": list(ps)} for t, ps in owned]
    if version >= 2:
        body["generation_id"] = -1
    if version >= 3:
        body["rack_id"] = None
    return struct.pack(">h", version) + codec.compiled_message("ConsumerProtocolSubscription", version).encode(body)


def assignment(parts: dict, user_data=None) -> bytes:
    return struct.pack(">h", 0) + codec.compiled_message("ConsumerProtocolAssignment", 0).encode(
        {"assigned_partitions": [{"topic": t, "partitions": ps} for t, ps in parts.items()], "user_data": user_data})


def join(h, member_id="", protocol_type="consumer", protocols=None, owned=(), instance=None, known=False,
         session=SESSION):
    box = Box()
    protocols = protocols or [("range", subscription(owned=owned))]
    h.c.join_group(JoinRequest("g", member_id, instance, protocol_type, protocols, session, 30000, "classic",
                               "/127.0.0.1", require_known_member_id=known), box)
    return box


def sync(h, member_id, generation, assignments=None, name="range", protocol_type="consumer"):
    box = Box()
    h.c.sync_group(SyncRequest("g", member_id, generation, None, protocol_type, name, assignments or {}), box)
    return box


def classic_group(h, user_data=None, protocol_type="consumer"):
    """Two classic members, Stable at generation 1 with t-0,1 and t-2,3."""
    a, b = join(h, protocol_type=protocol_type), join(h, protocol_type=protocol_type)
    h.advance(DELAY)
    h.advance(DELAY)   # the delay runs once more after members arrived during it
    assert a.done and b.done, (a.result, b.result)
    first, second = a.result.member_id, b.result.member_id
    leader = a.result.leader_id
    sync(h, second if leader == first else first, 1, protocol_type=protocol_type)
    sync(h, leader, 1, {first: assignment({"t": [0, 1]}, user_data), second: assignment({"t": [2, 3]})},
         protocol_type=protocol_type)
    assert h.c.group("g").is_in(GroupState.STABLE)
    return first, second


def catch_up(h, member_id):
    """A classic member's heartbeat; on REBALANCE_IN_PROGRESS it rejoins and syncs, as clients do."""
    member = h.group().members[member_id]
    if h.c.heartbeat(HeartbeatRequest("g", member_id, member.member_epoch)) != E.REBALANCE_IN_PROGRESS:
        return
    owned = [(h.named({t: list(ps)})) for t, ps in member.assigned.items()]
    owned = [(t, ps) for named_ in owned for t, ps in named_.items()]
    res = join(h, member_id, known=True, owned=owned).result
    assert res.error == E.NONE, res
    assert sync(h, member_id, res.generation_id).result.error in (E.NONE, E.REBALANCE_IN_PROGRESS)


def named(h, data: bytes) -> dict:
    pairs, _ = decode_assignment(data)
    return {t: sorted(ps) for t, ps in pairs if ps}


# ------------------------------------------------------------------ upgrade
def test_a_consumer_member_upgrades_a_classic_group():
    h = harness()
    first, second = classic_group(h)
    r = h.hb("m3", 0)
    assert r.error == E.NONE
    assert h.c.group("g") is None
    g = h.group()
    # Classic members start at epoch = generation, owning their last assignment; the new member's
    # subscription bumps the group epoch and a target is computed at once.
    assert g.members[first].uses_classic and g.members[first].member_epoch == 1
    assert {h.topics.id("t"): {0: 1, 1: 1}} == g.members[first].assigned
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    assert g.members[first].classic.session_timeout_ms == SESSION
    records = [r for r in h.records if isinstance(r, ConsumerGroupRecord)]
    assert records[-1].replaces_classic and not any(
        isinstance(r, GroupMetadataRecord) and r.value is None for r in h.records)
    assert [e.details.get("to") for e in h.events if e.kind is K.GROUP_CONVERTED] == ["consumer"]
    # The classic members are told to rejoin by their heartbeats.
    assert h.c.heartbeat(HeartbeatRequest("g", first, 1)) == E.REBALANCE_IN_PROGRESS
    assert h.c.heartbeat(HeartbeatRequest("g", first, 7)) == E.ILLEGAL_GENERATION
    assert h.c.heartbeat(HeartbeatRequest("g", "m3", 2)) == E.UNKNOWN_MEMBER_ID   # not a classic member


def test_parked_classic_requests_get_rebalance_in_progress_on_upgrade():
    h = harness()
    first, second = classic_group(h)
    rejoin = join(h, first, protocols=[("range", subscription(topics=("t", "u")))])   # a rebalance starts
    assert not rejoin.done and h.c.group("g").is_in(GroupState.PREPARING_REBALANCE)
    assert h.hb("m3", 0).error == E.NONE
    assert rejoin.result.error == E.REBALANCE_IN_PROGRESS


def test_classic_members_follow_the_target_through_join_and_sync():
    h = harness()
    first, second = classic_group(h)
    h.hb("m3", 0)
    g = h.group()
    # An eager member rejoins owning nothing: it moves to the target epoch at once, and gets the
    # target partitions no other member still holds.
    box = join(h, first, known=True)
    res = box.result
    assert (res.error, res.generation_id, res.leader_id, res.members, res.protocol_name) == (E.NONE, 2, "", [], "range")
    s = sync(h, first, 2).result
    assert s.error == E.NONE
    assert named(h, s.assignment) == {k: v for k, v in h.named(
        {t: sorted(p) for t, p in g.members[first].assigned.items()}).items()}
    assert sync(h, first, 1).result.error == E.ILLEGAL_GENERATION
    assert sync(h, first, 2, name="roundrobin").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    # Every partition ends with exactly one owner once everyone has caught up.
    join(h, second, known=True)
    h.hb("m3", 2, owned={}, partial=True)
    for m in (first, second):
        if h.c.heartbeat(HeartbeatRequest("g", m, g.members[m].member_epoch)) == E.REBALANCE_IN_PROGRESS:
            join(h, m, known=True, owned=[("t", sorted(named(h, sync(h, m, g.members[m].member_epoch)
                                                             .result.assignment).get("t", [])))])
    h.hb("m3", 2, owned={}, partial=True)
    owners = {}
    for m in g.members.values():
        for ps in m.assigned.values():
            for p in ps:
                assert p not in owners
                owners[p] = m.member_id
    assert sorted(owners) == [0, 1, 2, 3]


def test_a_new_classic_member_joins_a_consumer_group():
    h = harness()
    h.hb("m1", 0)
    first = join(h, known=True).result
    assert first.error == E.MEMBER_ID_REQUIRED and len(first.member_id) == 22   # a Uuid, as Kafka's
    res = join(h, first.member_id, known=True).result
    assert (res.error, res.member_id, res.generation_id) == (E.NONE, first.member_id, 3)
    g = h.group()
    assert g.members[first.member_id].uses_classic and g.group_epoch == 3
    # ConsumerGroupDescribe tells the member types apart.
    types = {m["member_id"]: m["member_type"] for m in h.c.consumer_group_describe("g").members}
    assert types == {"m1": 1, first.member_id: 0}


def test_classic_protocol_checks_on_join():
    h = harness()
    h.hb("m1", 0)
    member = join(h).result.member_id
    assert join(h, protocols=[("other", subscription())]).result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert join(h, protocol_type="connect").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.group().members[member].uses_classic


def test_classic_offset_commits_use_generations():
    h = harness()
    h.hb("m1", 0)
    member = join(h).result.member_id
    epoch = h.group().members[member].member_epoch

    def commit(generation, version=8):
        return h.c.commit_offsets(OffsetCommitRequest("g", member, generation, None,
                                                      [OffsetCommitPartition("t", 0, 5)], version=version))
    assert commit(epoch).error == E.NONE              # any version for a classic member
    assert commit(epoch + 1).error == E.ILLEGAL_GENERATION
    assert h.c.fetch_offsets("g", [("t", 0)], member, epoch + 1)[0] == E.ILLEGAL_GENERATION


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_upgrade_refused_by_the_policy(policy):
    h = harness(consumer_migration_policy=policy)
    classic_group(h)
    r = h.hb("m3", 0)
    assert (r.error, r.message) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group "
                                                          "because online upgrade is disabled.")
    assert h.c.group("g").is_in(GroupState.STABLE) and h.group() is None


def test_upgrade_refused_for_another_protocol_type():
    h = harness()
    classic_group(h, protocol_type="connect")
    r = h.hb("m3", 0)
    assert (r.error, r.message) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group because "
                                                          "the group does not use the consumer embedded protocol.")


def test_upgrade_refused_for_user_data_and_malformed_metadata_and_size():
    h = harness()
    classic_group(h, user_data=b"sticky")
    r = h.hb("m3", 0)
    assert r.error == E.GROUP_ID_NOT_FOUND and "an unsupported custom assignor is in use" in r.message
    h = harness()
    box = join(h, protocols=[("range", b"\x00")])
    h.advance(DELAY)
    h.advance(DELAY)
    mid = box.result.member_id
    sync(h, mid, 1, {mid: b""})
    r = h.hb("m3", 0)
    assert (r.error, r.message) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group because "
                                                          "the embedded consumer protocol is malformed.")
    h = harness(consumer_max_size=1)
    classic_group(h)
    r = h.hb("m3", 0)
    assert (r.error, r.message) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group because "
                                                          "the group size exceeds the consumer group maximum size.")


def test_classic_join_refused_when_migration_is_disabled():
    h = harness(consumer_migration_policy="disabled")
    h.hb("m1", 0)
    assert join(h).result.error == E.INCONSISTENT_GROUP_PROTOCOL


# ------------------------------------------------------------------ downgrade
def upgraded(h):
    first, second = classic_group(h)
    h.hb("m3", 0)
    return first, second


def test_the_last_consumer_member_leaving_downgrades_the_group():
    h = harness()
    first, second = upgraded(h)
    epoch = h.group().group_epoch
    mark = len(h.records)
    assert h.hb("m3", -1, owned=None, partial=True).error == E.NONE
    assert h.group() is None
    classic = h.c.group("g")
    # Stable at generation = group epoch with the targets as assignments, then a rebalance.
    assert classic.is_in(GroupState.PREPARING_REBALANCE) and classic.generation == epoch
    assert set(classic.members) == {first, second} and classic.protocol_name == "range"
    tail = h.records[mark:]
    kinds = [(type(r).__name__, r.value is None) for r in tail]
    assert kinds == [("ConsumerGroupRecord", True), ("GroupMetadataRecord", False)]
    # The members rebalance as a classic group.
    assert h.c.heartbeat(HeartbeatRequest("g", first, epoch)) == E.REBALANCE_IN_PROGRESS
    a, b = join(h, first), join(h, second)
    assert a.done and b.done and a.result.generation_id == epoch + 1


@pytest.mark.parametrize("config", [{"consumer_migration_policy": "upgrade"}, {"max_group_size": 1}])
def test_no_downgrade_when_the_policy_or_the_classic_size_forbids(config):
    h = harness()
    first, second = upgraded(h)
    for name, value in config.items():
        setattr(h.c.config, name, value)
    h.hb("m3", -1, owned=None, partial=True)
    g = h.group()
    assert g is not None and set(g.members) == {first, second} and h.c.group("g") is None


def test_a_classic_member_leaving_does_not_downgrade_while_consumer_members_remain():
    h = harness()
    first, second = upgraded(h)
    res = h.c.leave_group("g", [LeaveMember(first, None), LeaveMember("ghost", None)])
    assert res.members == [(first, None, E.NONE), ("ghost", None, E.UNKNOWN_MEMBER_ID)]
    assert set(h.group().members) == {second, "m3"}


def test_session_expiry_of_the_consumer_member_downgrades():
    h = harness()
    first, second = upgraded(h)
    h.hb("m3", 2, owned={}, partial=True)
    # The classic members keep up; the consumer member falls silent and its session expires.
    while h.group() is not None:
        assert h.timer.now_ms() < 1700000000000 + 60000
        h.advance(SESSION // 4)
        for m in (first, second):
            if h.group() is not None:
                catch_up(h, m)
    assert set(h.c.group("g").members) == {first, second}
    assert [e.member_id for e in h.events if e.kind is K.MEMBER_EXPIRED] == ["m3"]


def test_a_classic_member_that_never_rejoins_is_fenced_after_its_rebalance_timeout():
    h = harness()
    first, second = upgraded(h)
    assert h.c.heartbeat(HeartbeatRequest("g", first, 1)) == E.REBALANCE_IN_PROGRESS
    for _ in range(7):   # m3 and second keep up; first only heartbeats, never rejoining
        h.advance(5000)
        m3 = h.group().members["m3"]
        h.hb("m3", m3.member_epoch, owned=[(n, ps) for t, p in m3.assigned.items()
                                           for n, ps in h.named({t: list(p)}).items()], partial=True)
        h.c.heartbeat(HeartbeatRequest("g", first, 1))
        catch_up(h, second)
    assert first not in h.group().members and second in h.group().members
    assert [e.reason for e in h.events if e.kind is K.MEMBER_EXPIRED] == [
        "the classic member failed to join within the rebalance timeout"]


# ------------------------------------------------------------------ durable state
def test_a_mixed_group_survives_a_restart():
    h = harness()
    first, second = upgraded(h)
    value = [r for r in h.records if isinstance(r, ConsumerGroupRecord)][-1].value
    h2 = harness(h.topics)
    h2.c.load_consumer_group(value)
    g = h2.group()
    assert g.members[first].classic == h.group().members[first].classic
    assert h2.c.heartbeat(HeartbeatRequest("g", first, 1)) == E.REBALANCE_IN_PROGRESS
    # Classic sessions use the member's own timeout.
    h2.advance(SESSION + 1)
    assert first not in (h2.group().members if h2.group() else {})


def test_encode_assignment_follows_the_subscription_version():
    data = encode_assignment({"t": [1, 0]}, subscription(version=3))
    assert data[:2] == b"\x00\x03" and decode_assignment(data) == ([("t", [0, 1])], None)
    assert encode_assignment({}, b"\x00\x07")[:2] == b"\x00\x03"
