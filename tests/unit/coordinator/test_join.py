from kcoord.coordinator.classic.state import GroupState as S
from wire.errors import ErrorCode as E

from .harness import Harness


def test_member_id_required_from_v4_only():
    h = Harness()
    first = h.join(version=4)
    assert first.error == E.MEMBER_ID_REQUIRED and first.result.member_id.startswith("client-")
    assert h.group().size == 0 and first.result.member_id in h.group().pending_members
    second = h.join(member_id=first.result.member_id, version=4)
    assert second.error == E.NONE and second.result.generation_id == 1
    h2 = Harness()
    direct = h2.join(version=3)
    assert direct.error == E.NONE and direct.result.member_id.startswith("client-")


def test_join_validation_errors():
    h = Harness(max_group_size=1)
    assert h.join(group="").error == E.INVALID_GROUP_ID
    assert h.join(session=5999).error == E.INVALID_SESSION_TIMEOUT
    assert h.join(session=1800001).error == E.INVALID_SESSION_TIMEOUT
    assert h.join(member_id="ghost").error == E.UNKNOWN_MEMBER_ID  # no such group
    assert h.join(protocols=()).error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="").error == E.INCONSISTENT_GROUP_PROTOCOL
    [m] = h.stable_group(1)
    assert h.join(protocols=(("roundrobin", b""),)).error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="connect").error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join().error == E.GROUP_MAX_SIZE_REACHED
    assert h.join(instance="i9").error == E.GROUP_MAX_SIZE_REACHED
    assert h.join(member_id="ghost").error == E.UNKNOWN_MEMBER_ID


def test_initial_delay_is_extended_by_new_members_and_never_completes_early():
    h = Harness(initial_rebalance_delay_ms=3000)
    a = h.join_new(rebalance=30000)
    assert h.group().state is S.PREPARING_REBALANCE
    h.advance(1000)
    b = h.join_new(rebalance=30000)
    h.advance(1999)
    assert not a.done  # everyone joined, yet the initial delay never completes early
    h.advance(1)       # t=3000: a member arrived meanwhile, so the delay is re-armed
    assert not a.done
    h.advance(2999)
    assert not a.done
    h.advance(1)       # t=6000
    assert a.done and b.done and a.result.generation_id == b.result.generation_id == 1
    assert h.group().state is S.COMPLETING_REBALANCE and h.group().size == 2


def test_initial_delay_budget_is_rebalance_timeout_minus_delay():
    h = Harness(initial_rebalance_delay_ms=3000)
    a = h.join_new(rebalance=5000)   # budget: 5000 - 3000 = 2000 more
    h.advance(1000)
    h.join_new(rebalance=5000)
    h.advance(2000)                  # t=3000: re-armed for min(3000, 2000) = 2000
    h.advance(1000)
    h.join_new(rebalance=5000)       # t=4000: another newcomer, but the budget is spent
    assert not a.done
    h.advance(1000)                  # t=5000
    assert a.done and h.group().size == 3 and h.group().generation == 1


def test_join_completes_early_when_all_known_members_rejoin():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, follower = h.stable_group(2)
    gen = h.group().generation
    rejoin_leader = h.join(member_id=leader)
    assert h.group().state is S.PREPARING_REBALANCE and not rejoin_leader.done
    assert h.heartbeat(follower, gen) == E.REBALANCE_IN_PROGRESS
    rejoin_follower = h.join(member_id=follower)
    assert rejoin_leader.done and rejoin_follower.done  # no timer had to fire
    assert rejoin_leader.result.generation_id == gen + 1
    assert len(rejoin_leader.result.members) == 2 and rejoin_follower.result.members == []


def test_pending_member_id_blocks_early_completion_until_it_expires():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, follower = h.stable_group(2)
    first = h.join()  # a newcomer got an id but has not joined with it yet
    assert first.error == E.MEMBER_ID_REQUIRED
    assert h.group().state is S.STABLE  # handing out an id alone starts no rebalance
    l, f = h.join(member_id=leader), h.join(member_id=follower)
    assert not l.done and not f.done  # every known member rejoined, but an id is still pending
    h.advance(9999)
    assert not l.done
    h.advance(1)  # the pending id expires after the session timeout
    assert l.done and f.done and first.result.member_id not in h.group().pending_members


def test_rebalance_timeout_removes_only_dynamic_members():
    h = Harness(initial_rebalance_delay_ms=3000)
    a = h.join_new(rebalance=20000)
    s = h.join(instance="static-1", rebalance=20000)
    d = h.join_new(rebalance=20000)
    h.advance(10000)
    assert a.done and s.done and d.done
    gen = a.result.generation_id
    leader = a.result.leader_id
    for box in (a, s, d):
        h.sync(box.result.member_id, gen, assignments={} if box.result.member_id != leader else
               {b.result.member_id: b"x" for b in (a, s, d)})
    assert h.group().state is S.STABLE
    rejoin = h.join(member_id=leader, rebalance=20000)
    for b in (s, d):  # keep the others alive by heartbeats, but they never rejoin
        h.advance(5000)
        h.heartbeat(s.result.member_id, gen)
        h.heartbeat(d.result.member_id, gen)
    assert not rejoin.done
    h.advance(10000)  # the rebalance timeout (20 s) expires
    assert rejoin.done and rejoin.result.generation_id == gen + 1
    members = set(h.group().members)
    assert s.result.member_id in members and d.result.member_id not in members
    assert [m for m, _, _ in rejoin.result.members] == [leader, s.result.member_id]


def test_leader_rejoin_in_stable_triggers_rebalance_but_unchanged_follower_does_not():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, follower = h.stable_group(2)
    gen = h.group().generation
    same = h.join(member_id=follower)
    assert same.done and same.result.generation_id == gen and h.group().state is S.STABLE
    changed = h.join(member_id=follower, protocols=(("range", b"new-metadata"),))
    assert not changed.done and h.group().state is S.PREPARING_REBALANCE


def test_protocol_vote():
    h = Harness(initial_rebalance_delay_ms=3000)
    boxes = [h.join_new(protocols=(("cooperative-sticky", b""), ("range", b""))),
             h.join_new(protocols=(("cooperative-sticky", b""), ("range", b""))),
             h.join_new(protocols=(("range", b""), ("cooperative-sticky", b"")))]
    h.advance(10000)
    assert {b.result.protocol_name for b in boxes} == {"cooperative-sticky"}
    h2 = Harness(initial_rebalance_delay_ms=3000)
    boxes = [h2.join_new(protocols=(("cooperative-sticky", b""), ("range", b""))),
             h2.join_new(protocols=(("range", b""),))]
    h2.advance(10000)
    assert {b.result.protocol_name for b in boxes} == {"range"}  # the only protocol all support


def test_join_in_completing_rebalance_is_answered_again_or_rebalances():
    h = Harness(initial_rebalance_delay_ms=3000)
    a, b = h.join_new(), h.join_new()
    h.advance(6000)
    assert h.group().state is S.COMPLETING_REBALANCE
    again = h.join(member_id=b.result.member_id)
    assert again.done and again.result.generation_id == 1
    parked = h.sync(a.result.member_id if a.result.leader_id != a.result.member_id else b.result.member_id, 1)
    changed = h.join(member_id=a.result.member_id, protocols=(("range", b"changed"),))
    assert not changed.done and h.group().state is S.PREPARING_REBALANCE
    assert parked.error == E.REBALANCE_IN_PROGRESS  # a parked sync learns of the new rebalance


def test_empty_group_rejects_known_member_and_dead_group():
    h = Harness()
    [m] = h.stable_group(1)
    h.leave(m)
    assert h.group().state is S.EMPTY and h.group().generation == 2
    assert h.join(member_id=m).error == E.UNKNOWN_MEMBER_ID
    h.c.offsets.delete_group("g")
    assert h.c.delete_group("g") == E.NONE
    assert h.group() is None
