from kcoord.coordinator import LeaveMember
from kcoord.coordinator.classic.state import GroupState as S
from wire.errors import ErrorCode as E

from .harness import Harness


def _static_stable(h, instances=("i-1", "i-2")):
    boxes = [h.join(instance=i) for i in instances]  # static members need no MEMBER_ID_REQUIRED
    h.advance(10000)
    gen = boxes[0].result.generation_id
    leader = boxes[0].result.leader_id
    ids = {i: b.result.member_id for i, b in zip(instances, boxes)}
    for i, m in ids.items():
        h.sync(m, gen, assignments={mm: f"for-{ii}".encode() for ii, mm in ids.items()} if m == leader else None)
    assert h.group().state is S.STABLE
    return ids, leader, gen


def test_static_follower_restart_keeps_generation_and_assignment():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, leader, gen = _static_stable(h)
    follower_instance = next(i for i, m in ids.items() if m != leader)
    again = h.join(instance=follower_instance)  # restarted: unknown member id, same instance id
    assert again.error == E.NONE and again.result.generation_id == gen
    new_id = again.result.member_id
    assert new_id != ids[follower_instance] and not again.result.skip_assignment
    assert h.group().state is S.STABLE
    sync = h.sync(new_id, gen, instance=follower_instance)
    assert sync.result.assignment == f"for-{follower_instance}".encode()
    # the old incarnation is fenced
    assert h.heartbeat(ids[follower_instance], gen, instance=follower_instance) == E.FENCED_INSTANCE_ID
    assert "static_rejoin_no_rebalance" in h.kinds() and "member_replaced" in h.kinds()


def test_static_leader_rejoin_never_rebalances_and_gets_members_only_from_v9():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, leader, gen = _static_stable(h)
    leader_instance = next(i for i, m in ids.items() if m == leader)
    again = h.join(instance=leader_instance, version=9)
    assert again.result.skip_assignment and again.result.generation_id == gen
    assert again.result.leader_id == again.result.member_id and len(again.result.members) == 2
    assert h.group().state is S.STABLE
    h2 = Harness(initial_rebalance_delay_ms=3000)
    ids2, leader2, gen2 = _static_stable(h2)
    old = h2.join(instance=next(i for i, m in ids2.items() if m == leader2), version=8)
    # As Kafka's staticMemberRejoinWithLeaderIdAndUnknownMemberId: same generation, no members,
    # and the leader named is the replaced id, so the client does not take itself for the leader.
    assert old.done and old.result.generation_id == gen2 and old.result.members == []
    assert old.result.leader_id == leader2 != old.result.member_id
    assert not old.result.skip_assignment and h2.group().state is S.STABLE
    # The group itself moved leadership to the new incarnation: its rejoin (v9) is a leader's.
    assert h2.group().leader_id == old.result.member_id


def test_static_rejoin_rebalances_only_if_the_selected_protocol_would_change():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, leader, gen = _static_stable(h)
    i = next(i for i, m in ids.items() if m != leader)
    # roundrobin first, but the other member only knows range: the vote still says range
    same = h.join(instance=i, protocols=(("roundrobin", b""), ("range", b"")))
    assert same.done and same.result.generation_id == gen and h.group().state is S.STABLE
    h2 = Harness(initial_rebalance_delay_ms=3000)
    boxes = [h2.join(instance=x, protocols=(("range", b""), ("roundrobin", b""))) for x in ("a", "b")]
    h2.advance(10000)
    h2.sync(boxes[0].result.leader_id, boxes[0].result.generation_id)
    assert h2.group().protocol_name == "range"
    changed = h2.join(instance="b", protocols=(("roundrobin", b""),))  # now only roundrobin is common
    assert not changed.done and h2.group().state is S.PREPARING_REBALANCE


def test_duplicate_instance_fences_the_parked_old_member():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, leader, gen = _static_stable(h, ("a", "b", "c"))
    leader_instance = next(i for i, m in ids.items() if m == leader)
    i = next(x for x in ids if x != leader_instance)
    old_id = ids[i]
    h.join(member_id=leader, instance=leader_instance)  # leader rejoin -> rebalance, waiting for the others
    parked_old = h.join(member_id=old_id, instance=i)
    assert not parked_old.done
    newer = h.join(instance=i)  # a second process with the same instance id
    assert parked_old.error == E.FENCED_INSTANCE_ID
    assert newer.result is None or newer.error == E.NONE
    new_id = h.group().static_members[i]
    assert new_id != old_id
    assert h.join(member_id=old_id, instance=i).error == E.FENCED_INSTANCE_ID
    assert h.sync(old_id, gen, instance=i).error == E.FENCED_INSTANCE_ID
    assert h.heartbeat(old_id, gen, instance=i) == E.FENCED_INSTANCE_ID


def test_static_member_in_completing_rebalance_forces_rebalance():
    h = Harness(initial_rebalance_delay_ms=3000)
    boxes = [h.join(instance=x) for x in ("a", "b")]
    h.advance(10000)
    assert h.group().state is S.COMPLETING_REBALANCE
    parked_sync = h.sync(boxes[1].result.member_id if boxes[1].result.member_id != boxes[0].result.leader_id
                         else boxes[0].result.member_id, 1)
    again = h.join(instance="b")
    assert h.group().state is S.PREPARING_REBALANCE
    assert parked_sync.error in (E.REBALANCE_IN_PROGRESS, E.FENCED_INSTANCE_ID)
    del again


def test_leave_group_batch_with_per_member_errors():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, leader, gen = _static_stable(h, ("a", "b", "c"))
    result = h.leave(LeaveMember("", "a", "admin removal"), LeaveMember("stale-id", "b"),
                     LeaveMember("", "nobody"), LeaveMember("ghost", None), LeaveMember(ids["c"], "c", "bye"))
    errors = [e for _, _, e in result.members]
    assert result.error == E.NONE
    assert errors == [E.NONE, E.FENCED_INSTANCE_ID, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID, E.NONE]
    assert set(h.group().members) == {ids["b"]}
    assert h.group().state is S.PREPARING_REBALANCE
    left = [e for e in h.events if e.kind == "member_left"]
    assert {e.reason for e in left} == {"admin removal", "bye"}


def test_leave_unknown_group_and_pending_member():
    h = Harness()
    r = h.leave("m", group="nope")
    assert r.error == E.NONE and r.members[0][2] == E.UNKNOWN_MEMBER_ID
    first = h.join()
    r = h.leave(first.result.member_id)
    assert r.members[0][2] == E.NONE and not h.group().pending_members


def test_rebalance_timeout_keeps_static_members_that_did_not_rejoin():
    h = Harness(initial_rebalance_delay_ms=3000)
    ids, leader, gen = _static_stable(h)
    other = next(m for m in ids.values() if m != leader)
    rejoin = h.join(member_id=leader, instance=next(i for i, m in ids.items() if m == leader))
    for _ in range(6):
        h.advance(5000)
        h.heartbeat(other, gen)
    assert rejoin.done and other in h.group().members
