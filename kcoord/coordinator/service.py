"""The coordinator on the event loop: per-group serialisation, async calls, waiting on state.

Each group with work queued gets one asyncio task draining its queue (kfake's
one-actor-per-group model), which ends once the queue is empty: requests for a
group run one after another, groups run side by side, and no global lock exists. Timers fire on the loop and touch only the
synchronous core, which the actor model keeps consistent because the core never
awaits. Handlers await the futures returned here.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from kcoord.coordinator.coordinator import GroupCoordinator, JoinResult, SyncResult


class _GroupActor:
    """Runs a group's queued work in order, then ends: an actor lives only while its group has
    work queued, so a request naming a group id nobody uses (Spark makes one per query) leaves
    no task behind. `actors` is the service's registry, which the actor leaves when idle."""

    def __init__(self, group_id: str, actors: dict):
        self.group_id, self.actors = group_id, actors
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"group-{group_id}")

    async def _run(self):
        while True:
            try:
                fn, fut = self.queue.get_nowait()
            except asyncio.QueueEmpty:
                # Nothing can be queued between this check and leaving the registry: both
                # happen without yielding to the loop, and run() queues without yielding.
                if self.actors.get(self.group_id) is self:
                    del self.actors[self.group_id]
                return
            try:
                result = fn()
                if asyncio.iscoroutine(result):
                    result = await result
            except BaseException as exc:  # surfaced to the caller, the actor lives on
                if not fut.done():
                    fut.set_exception(exc)
            else:
                if not fut.done():
                    fut.set_result(result)


class CoordinatorService:
    def __init__(self, core: GroupCoordinator):
        self.core = core
        self._actors: dict[str, _GroupActor] = {}
        self._waiters: dict[str, list[tuple[Callable[[], bool], asyncio.Future]]] = {}
        core.on_change = self._notify

    # ---- serialisation ----
    async def run(self, group_id: str, fn: Callable[[], Any]) -> Any:
        actor = self._actors.get(group_id)
        if actor is None:
            actor = self._actors[group_id] = _GroupActor(group_id, self._actors)
        fut = asyncio.get_running_loop().create_future()
        actor.queue.put_nowait((fn, fut))
        return await fut

    async def _parked(self, group_id: str, call: Callable[[Callable], None]):
        """Run `call(respond)` in the group's actor; wait (outside it) until respond fires."""
        loop = asyncio.get_running_loop()
        answer = loop.create_future()

        def respond(result):
            if not answer.done():
                answer.set_result(result)

        await self.run(group_id, lambda: call(respond))
        return await answer

    # ---- API ----
    async def join_group(self, group_id: str, **kw) -> JoinResult:
        return await self._parked(group_id, lambda respond: self.core.join_group(group_id, respond=respond, **kw))

    async def sync_group(self, group_id: str, **kw) -> SyncResult:
        return await self._parked(group_id, lambda respond: self.core.sync_group(group_id, respond=respond, **kw))

    async def heartbeat(self, group_id: str, **kw):
        return await self.run(group_id, lambda: self.core.heartbeat(group_id, **kw))

    async def leave_group(self, group_id: str, leaving):
        return await self.run(group_id, lambda: self.core.leave_group(group_id, leaving))

    async def commit_offsets(self, group_id: str, **kw):
        return await self.run(group_id, lambda: self.core.commit_offsets(group_id, **kw))

    async def fetch_offsets(self, group_id: str, partitions):
        return await self.run(group_id, lambda: self.core.fetch_offsets(group_id, partitions))

    async def delete_offsets(self, group_id: str, partitions, subscribed_topics=None):
        return await self.run(group_id, lambda: self.core.delete_offsets(group_id, partitions, subscribed_topics))

    async def describe_group(self, group_id: str):
        return await self.run(group_id, lambda: self.core.describe_group(group_id))

    async def delete_group(self, group_id: str):
        return await self.run(group_id, lambda: self.core.delete_group(group_id))

    def list_groups(self, states=None):
        return self.core.list_groups(states)

    # ---- waiting on state ----
    def _matches(self, group_id: str, state: str | None, members: int | None,
                 generation_at_least: int | None) -> bool:
        group = self.core.group(group_id)
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
        self._waiters[group_id] = [w for w in waiters if not w[1].done()]

    async def wait_for(self, group_id: str, state: str | None = None, members: int | None = None,
                       generation_at_least: int | None = None, timeout: float | None = 30.0):
        """Wait until the group matches every condition given; returns its description.

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
        return self.core.describe_group(group_id)

    async def close(self) -> None:
        actors = list(self._actors.values())
        for actor in actors:
            actor.task.cancel()
        await asyncio.gather(*(a.task for a in actors), return_exceptions=True)
        cancel_all = getattr(self.core.timer, "cancel_all", None)
        if cancel_all:
            cancel_all()
