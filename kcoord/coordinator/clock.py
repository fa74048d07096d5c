"""Time for the coordinator: a clock plus keyed timers, real or manual.

Timers are keyed (`join-<group>`, `heartbeat-<group>-<member>`, ...): scheduling
a key again replaces the old timer, so a rule "reset the session timer" is one
call. The manual timer lets tests move time by hand: no sleeps, no sockets.
"""
from __future__ import annotations

import abc
import asyncio
import heapq
import itertools
import time
from typing import Callable


class Timer(abc.ABC):
    """The timer service the coordinator is given."""

    @abc.abstractmethod
    def now_ms(self) -> int:
        """Current time in epoch milliseconds."""

    @abc.abstractmethod
    def schedule(self, key: str, delay_ms: int, callback: Callable[[], None]) -> None:
        """Run `callback` after `delay_ms`, replacing any timer with the same key."""

    @abc.abstractmethod
    def cancel(self, key: str) -> None:
        """Forget the timer with this key, if any."""

    @abc.abstractmethod
    def is_scheduled(self, key: str) -> bool:
        """Whether a timer with this key is pending."""


class AsyncioTimer(Timer):
    """Real time, on the running asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None):
        self._loop = loop
        self._handles: dict[str, asyncio.TimerHandle] = {}

    @property
    def loop(self):
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def schedule(self, key, delay_ms, callback):
        self.cancel(key)

        def fire():
            self._handles.pop(key, None)
            callback()

        self._handles[key] = self.loop.call_later(max(delay_ms, 0) / 1000, fire)

    def cancel(self, key):
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def is_scheduled(self, key):
        return key in self._handles

    def cancel_all(self):
        for key in list(self._handles):
            self.cancel(key)


class ManualTimer(Timer):
    """Time that moves only when `advance` is called; due timers fire in order."""

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self._now = start_ms
        self._heap: list[tuple[int, int, str]] = []
        self._timers: dict[str, tuple[int, int, Callable[[], None]]] = {}
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def schedule(self, key, delay_ms, callback):
        seq = next(self._seq)
        deadline = self._now + max(delay_ms, 0)
        self._timers[key] = (deadline, seq, callback)
        heapq.heappush(self._heap, (deadline, seq, key))

    def cancel(self, key):
        self._timers.pop(key, None)

    def is_scheduled(self, key):
        return key in self._timers

    def deadline(self, key) -> int | None:
        entry = self._timers.get(key)
        return None if entry is None else entry[0]

    def advance(self, ms: int) -> None:
        target = self._now + ms
        while self._heap and self._heap[0][0] <= target:
            deadline, seq, key = heapq.heappop(self._heap)
            entry = self._timers.get(key)
            if entry is None or entry[1] != seq:
                continue  # cancelled or replaced
            del self._timers[key]
            self._now = max(self._now, deadline)
            entry[2]()
        self._now = target
