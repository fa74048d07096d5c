"""The asyncio face: parked joins answered by the manual clock, wait_for."""
import asyncio

import pytest

from kcoord.coordinator import (
    CoordinatorConfig, CoordinatorService, GroupCoordinator, HeartbeatRequest, JoinRequest, LeaveMember, ManualTimer,
    OffsetCommitRequest, SyncRequest,
)
from wire.errors import ErrorCode as E

from .harness import Topics


def _service(delay=3000):
    timer = ManualTimer()
    core = GroupCoordinator(timer, CoordinatorConfig(initial_rebalance_delay_ms=delay), Topics())
    return CoordinatorService(core), timer


def _join(member_id="", instance=None):
    return JoinRequest("g", member_id=member_id, instance_id=instance, protocol_type="consumer",
                       protocols=[("range", b"m")], session_timeout_ms=10000, rebalance_timeout_ms=30000,
                       client_id="c", client_host="/h")


async def _settle():
    for _ in range(10):
        await asyncio.sleep(0)


async def test_parked_join_completes_when_manual_time_advances():
    svc, timer = _service()
    first = await svc.join_group(_join())
    assert first.error == E.MEMBER_ID_REQUIRED
    join = asyncio.ensure_future(svc.join_group(_join(first.member_id)))
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
    sync = await svc.sync_group(SyncRequest("g", member_id=result.member_id, generation_id=1, instance_id=None,
                                            protocol_type="consumer", protocol_name="range",
                                            assignments={result.member_id: b"a"}))
    assert sync.assignment == b"a"
    assert await svc.heartbeat(HeartbeatRequest("g", member_id=result.member_id, generation_id=1)) == E.NONE
    assert (await svc.commit_offsets(OffsetCommitRequest("g", member_id=result.member_id, generation_id=1,
                                                         instance_id=None, partitions=[]))).error == E.NONE
    assert (await svc.fetch_offsets("g", None))[0] == E.NONE
    assert (await svc.describe_group("g")).state == "Stable"
    assert [g.group_id for g in svc.list_groups()] == ["g"]
    # session expiry with zero real seconds waited
    timer.advance(10000)
    await svc.wait_for("g", state="Empty", members=0, generation_at_least=2, timeout=1)
    assert (await svc.delete_offsets("g", [("t", 0)])).error == E.NONE
    assert await svc.delete_group("g") == E.NONE
    await svc.wait_for("g", state="Dead", timeout=1)
    await svc.close()


async def test_wait_for_times_out_with_a_description():
    svc, timer = _service()
    with pytest.raises(TimeoutError, match=r"group g did not reach state=Stable .*\(it is absent\)"):
        await svc.wait_for("g", state="Stable", timeout=0.05)
    await svc.close()


async def test_leave_answers_parked_join_and_errors_reach_the_caller():
    svc, timer = _service(delay=0)
    first = await svc.join_group(_join(instance="i"))
    assert first.error == E.NONE
    left = await svc.leave_group("g", [LeaveMember("", "i")])
    assert left.members[0][2] == E.NONE

    def bug(req):
        raise RuntimeError("bug")

    svc.core.membership.heartbeat = bug
    with pytest.raises(RuntimeError, match="bug"):
        await svc.heartbeat(HeartbeatRequest("g", "m", 1))
    assert (await svc.describe_group("g")).state == "Empty"  # the coordinator carries on
    await svc.close()


async def test_asyncio_timer_fires_replaces_and_cancels():
    from kcoord.coordinator import AsyncioTimer

    timer = AsyncioTimer()
    fired = []
    timer.schedule("a", 1, lambda: fired.append("a1"))
    timer.schedule("a", 1, lambda: fired.append("a2"))  # replaces a1
    timer.schedule("b", 1, lambda: fired.append("b"))
    timer.cancel("b")
    assert timer.is_scheduled("a") and not timer.is_scheduled("b")
    assert abs(timer.now_ms() - __import__("time").time() * 1000) < 1000
    await asyncio.sleep(0.05)
    assert fired == ["a2"] and not timer.is_scheduled("a")
    timer.schedule("c", 10_000, lambda: fired.append("c"))
    timer.cancel_all()
    assert not timer.is_scheduled("c")


async def test_build_coordinator_uses_server_settings():
    from kcoord.config import ServerConfig
    from kcoord.coordinator import build_coordinator

    svc = build_coordinator(ServerConfig(initial_rebalance_delay_ms=1234), Topics())
    assert svc.core.config.initial_rebalance_delay_ms == 1234
    await svc.close()
