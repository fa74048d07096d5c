"""The coordinator on the event loop: async calls, parked requests, waiting on state.

Serialisation comes from the loop itself: the core never awaits, so every request and
every timer runs as one whole operation on the loop's thread, one after another, and
their records are written before any of their answers is released. No task, queue or
lock exists per group, so a request naming a group id nobody uses (Spark makes one per
query) leaves nothing behind. Handlers await the futures of parked JoinGroup/SyncGroup.
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from kcoord.coordinator.coordinator import GroupCoordinator
from kcoord.coordinator.requests import HeartbeatRequest, JoinRequest, OffsetCommitRequest, SyncRequest
from kcoord.coordinator.results import JoinResult, SyncResult


class CoordinatorService:
    def __init__(self, core: GroupCoordinator):
        self.core = core
        self._waiters: dict[str, list[tuple[Callable[[], bool], asyncio.Future]]] = {}
        core.on_change = self._notify

    def _parked(self, call: Callable[[Callable], None]) -> asyncio.Future:
        """Run `call(respond)` now; the future respond settles (at once, or when a timer or
        another member's request completes the round). A future, not a coroutine awaiting
        one: a parked JoinGroup (every member of a group at once) holds one frame less."""
        answer = asyncio.get_running_loop().create_future()

        def respond(result):
            if not answer.done():
                answer.set_result(result)

        call(respond)
        return answer

    # ---- API ----
    def join_group(self, req: JoinRequest) -> Awaitable[JoinResult]:
        return self._parked(lambda respond: self.core.join_group(req, respond))

    def sync_group(self, req: SyncRequest) -> Awaitable[SyncResult]:
        return self._parked(lambda respond: self.core.sync_group(req, respond))

    async def heartbeat(self, req: HeartbeatRequest):
        return self.core.heartbeat(req)

    async def leave_group(self, group_id: str, leaving):
        return self.core.leave_group(group_id, leaving)

    async def commit_offsets(self, req: OffsetCommitRequest):
        return self.core.commit_offsets(req)

    async def fetch_offsets(self, group_id: str, partitions, member_id=None, member_epoch=-1):
        return self.core.fetch_offsets(group_id, partitions, member_id, member_epoch)

    async def consumer_group_heartbeat(self, req):
        return self.core.consumer_group_heartbeat(req)

    async def consumer_group_describe(self, group_id: str):
        return self.core.consumer_group_describe(group_id)

    async def delete_offsets(self, group_id: str, partitions, subscribed_topics=None):
        return self.core.delete_offsets(group_id, partitions, subscribed_topics)

    async def describe_group(self, group_id: str):
        return self.core.describe_group(group_id)

    async def delete_group(self, group_id: str):
        return self.core.delete_group(group_id)

    def list_groups(self, states=None, types=None):
        return self.core.list_groups(states, types)

    # ---- waiting on state ----
    def _matches(self, group_id: str, state: str | None, members: int | None,
                 generation_at_least: int | None) -> bool:
        group = self.core.group(group_id) or self.core.consumer_group(group_id)
        if group is None:
            return state == "Dead" and members in (None, 0)
        return ((state is None or str(group.state) == state)
                and (members is None or group.size == members)
                and (generation_at_least is None or group.generation >= generation_at_least))

    def _notify(self, group_id: str) -> None:
        waiters = self._waiters.get(group_id)
        if not waiters:
            return
        for check, fut in list(waiters):
            if not fut.done() and check():
                fut.set_result(True)
        remaining = [w for w in waiters if not w[1].done()]
        if remaining:
            self._waiters[group_id] = remaining
        else:
            del self._waiters[group_id]

    async def wait_for(self, group_id: str, state: str | None = None, members: int | None = None,
                       generation_at_least: int | None = None, timeout: float | None = 30.0):
        """Wait until the group matches every condition given; returns its description (a consumer
        group's as ConsumerGroupDescribe gives it; `generation_at_least` is then its group epoch).

        Raises TimeoutError saying what the group looked like instead."""
        def check():
            return self._matches(group_id, state, members, generation_at_least)

        if not check():
            fut = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(group_id, []).append((check, fut))
            try:
                await asyncio.wait_for(fut, timeout)
            except asyncio.TimeoutError:
                g = self.core.group(group_id)
                seen = "absent" if g is None else f"{g.state}, {g.size} members, generation {g.generation}"
                raise TimeoutError(f"group {group_id} did not reach state={state} members={members} "
                                   f"generation>={generation_at_least} within {timeout}s (it is {seen})") from None
            finally:
                entries = self._waiters.get(group_id)
                if entries is not None:
                    entries[:] = [w for w in entries if w[1] is not fut]
                    if not entries:
                        del self._waiters[group_id]
        if self.core.consumer_group(group_id) is not None:
            return self.core.consumer_group_describe(group_id)
        return self.core.describe_group(group_id)

    async def close(self) -> None:
        cancel_all = getattr(self.core.timer, "cancel_all", None)
        if cancel_all:
            cancel_all()
