"""The coordinator on the event loop: each broker's face of the runtime, parked requests, and
waiting on state.

Serialisation comes from the loop itself: the coordinators never await, so every request and
every timer runs as one whole operation on the loop's thread, one after another, and their
records are written before any of their answers is released. No task, queue or lock exists
per group, so a request naming a group id nobody uses (Spark makes one per query) leaves
nothing behind.

Handlers ask their broker's `BrokerCoordinator` for the coordinator of a group and call the
API's method on it (GroupCoordinator says which part handles each API); JoinGroup and
SyncGroup, which may park, go through `parked`.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from kcoord.coordinator.coordinator import GroupCoordinator
from kcoord.coordinator.runtime import CoordinatorRuntime
from wire.errors import ErrorCode


def parked(call: Callable[[Callable], None]) -> asyncio.Future:
    """Run `call(respond)` now; the future `respond` settles (at once, or when a timer or another
    member's request completes the round). A future, not a coroutine awaiting one: a parked
    JoinGroup (every member of a group at once) holds one frame less."""
    answer = asyncio.get_running_loop().create_future()

    def respond(result):
        if not answer.done():
            answer.set_result(result)

    call(respond)
    return answer


class BrokerCoordinator:
    """What one broker's handlers see of the group coordinator (`ctx.broker.coordinator`)."""

    __slots__ = ("runtime", "node_id")

    def __init__(self, runtime: CoordinatorRuntime, node_id: int):
        self.runtime = runtime
        self.node_id = node_id

    def for_group(self, group_id: str) -> GroupCoordinator:
        """The coordinator this broker answers `group_id`'s requests with (one that refuses them
        with NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS where this broker does not serve it)."""
        return self.runtime.coordinator_for(group_id, self.node_id)

    def find(self, group_id: str) -> tuple[ErrorCode, int]:
        return self.runtime.find(group_id)

    def partition_for(self, group_id: str) -> int:
        """The __consumer_offsets partition `group_id` belongs to."""
        return self.runtime.partition_for(group_id)

    def list_groups(self, states=None, types=None) -> tuple[ErrorCode, list]:
        return self.runtime.list_groups(self.node_id, states, types)


class CoordinatorService:
    """The runtime on the event loop: brokers' faces, and waiting until a group looks a certain way."""

    def __init__(self, runtime: CoordinatorRuntime):
        self.runtime = runtime
        self._waiters: dict[str, list[tuple[Callable[[], bool], asyncio.Future]]] = {}
        runtime.on_change = self._notify

    def broker(self, node_id: int) -> BrokerCoordinator:
        return BrokerCoordinator(self.runtime, node_id)

    # ---- waiting on state ----
    def _matches(self, group_id: str, state: str | None, members: int | None,
                 generation_at_least: int | None) -> bool:
        group = (self.runtime.group(group_id) or self.runtime.consumer_group(group_id)
                 or self.runtime.streams_group(group_id) or self.runtime.share_group(group_id))
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
        """Wait until the group matches every condition given, wherever it is coordinated; returns
        its description (a consumer group's as ConsumerGroupDescribe gives it; `generation_at_least`
        is then its group epoch).

        Raises TimeoutError saying what the group looked like instead."""
        def check():
            return self._matches(group_id, state, members, generation_at_least)

        if not check():
            fut = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(group_id, []).append((check, fut))
            try:
                await asyncio.wait_for(fut, timeout)
            except asyncio.TimeoutError:
                g = self.runtime.group(group_id)
                seen = "absent" if g is None else f"{g.state}, {g.size} members, generation {g.generation}"
                raise TimeoutError(f"group {group_id} did not reach state={state} members={members} "
                                   f"generation>={generation_at_least} within {timeout}s (it is {seen})") from None
            finally:
                entries = self._waiters.get(group_id)
                if entries is not None:
                    entries[:] = [w for w in entries if w[1] is not fut]
                    if not entries:
                        del self._waiters[group_id]
        if self.runtime.consumer_group(group_id) is not None:
            return self.runtime.consumer_group_describe(group_id)
        return self.runtime.describe_group(group_id)

    async def close(self) -> None:
        self.runtime.close()
