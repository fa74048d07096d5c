from kcoord.coordinator.classic.state import GroupState as S
from wire.errors import ErrorCode as E

from .harness import Harness


def _completing(h, n=2, **kw):
    boxes = [h.join_new(**kw) for _ in range(n)]
    h.advance(10000)
    assert h.group().state is S.COMPLETING_REBALANCE
    leader = boxes[0].result.leader_id
    return leader, [b.result.member_id for b in boxes if b.result.member_id != leader], boxes[0].result.generation_id


def test_followers_park_until_leader_assigns_missing_members_get_empty_bytes():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, followers, gen = _completing(h, 3)
    parked = h.sync(followers[0], gen)
    assert not parked.done
    lead = h.sync(leader, gen, assignments={leader: b"L", followers[0]: b"F0"})  # followers[1] left out
    assert lead.result.assignment == b"L" and parked.result.assignment == b"F0"
    assert parked.result.protocol_name == "range" and parked.result.protocol_type == "consumer"
    late = h.sync(followers[1], gen)
    assert late.done and late.error == E.NONE and late.result.assignment == b""
    assert h.group().state is S.STABLE
    assert "assignment_received" in h.kinds() and "stable" in h.kinds()


def test_sync_errors():
    h = Harness(initial_rebalance_delay_ms=3000)
    assert h.sync("m", 1, group="nope").error == E.UNKNOWN_MEMBER_ID
    leader, [follower], gen = _completing(h)
    assert h.sync("ghost", gen).error == E.UNKNOWN_MEMBER_ID
    assert h.sync(follower, gen + 1).error == E.ILLEGAL_GENERATION
    assert h.sync(follower, gen, protocol_type="connect").error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(follower, gen, protocol_name="roundrobin").error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(follower, gen, instance="someone").error == E.FENCED_INSTANCE_ID
    h.join(member_id=leader, protocols=(("range", b"changed"),))  # -> PreparingRebalance
    assert h.sync(follower, gen).error == E.REBALANCE_IN_PROGRESS


def test_heartbeat_by_state_and_errors():
    h = Harness(initial_rebalance_delay_ms=3000)
    assert h.heartbeat("m", 0, group="nope") == E.UNKNOWN_MEMBER_ID
    leader, [follower], gen = _completing(h)
    assert h.heartbeat(follower, gen) == E.NONE  # CompletingRebalance
    assert h.heartbeat(follower, gen - 1) == E.ILLEGAL_GENERATION
    assert h.heartbeat("ghost", gen) == E.UNKNOWN_MEMBER_ID
    h.sync(leader, gen, assignments={})
    assert h.heartbeat(follower, gen) == E.NONE  # Stable
    h.join(member_id=leader)
    assert h.heartbeat(follower, gen) == E.REBALANCE_IN_PROGRESS


def test_session_expiry_removes_member_and_rebalances():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, follower = h.stable_group(2)  # stable at t=6000; sessions are 10 s
    gen = h.group().generation
    for _ in range(2):  # the leader keeps heartbeating, the follower went silent
        h.advance(4000)
        assert h.heartbeat(leader, gen) == E.NONE
    assert follower in h.group().members
    h.advance(2000)  # 10 s after the follower's last sign of life
    assert follower not in h.group().members
    assert h.group().state is S.PREPARING_REBALANCE
    assert any(e.kind == "member_expired" and e.member_id == follower for e in h.events)
    assert h.heartbeat(leader, gen) == E.REBALANCE_IN_PROGRESS
    rejoin = h.join(member_id=leader)
    assert rejoin.done and rejoin.result.generation_id == gen + 1 and len(rejoin.result.members) == 1


def test_members_parked_in_join_do_not_expire():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, follower = h.stable_group(2)
    gen = h.group().generation
    parked = h.join(member_id=leader, rebalance=600000)  # waits for the follower, up to 10 min
    for _ in range(12):  # a minute: six session timeouts without a heartbeat from the leader
        h.advance(5000)
        assert h.heartbeat(follower, gen) == E.REBALANCE_IN_PROGRESS
    assert leader in h.group().members and not parked.done
    rejoin = h.join(member_id=follower)
    assert parked.done and rejoin.done and parked.result.generation_id == gen + 1


def test_new_member_join_timeout_is_five_minutes():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, follower = h.stable_group(2)
    h.join(member_id=leader, rebalance=1_000_000)  # rebalance timeout far beyond 5 minutes
    newcomer = h.join_new(rebalance=1_000_000)
    newcomer_id = [m for m in h.group().members if m not in (leader, follower)][0]
    for _ in range(59):
        h.advance(5000)
        h.heartbeat(follower, 1)
    assert newcomer_id in h.group().members
    h.advance(5000)  # 300 s after it joined, the new member is dropped
    assert newcomer_id not in h.group().members
    assert newcomer.error == E.UNKNOWN_MEMBER_ID


def test_pending_sync_expiry_removes_members_that_never_synced():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, [follower], gen = _completing(h, session=60000)  # sessions outlast the 30 s rebalance timeout
    h.sync(leader, gen, assignments={leader: b"a", follower: b"b"})
    assert h.group().state is S.STABLE
    h.advance(25999)  # now t=10000; the join completed at t=6000, so 30 s later is t=36000
    assert h.heartbeat(follower, gen) == E.NONE
    assert follower in h.group().members
    h.advance(1)  # the rebalance timeout (30 s) since the join completed
    assert follower not in h.group().members and h.group().state is S.PREPARING_REBALANCE
