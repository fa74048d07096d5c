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
    def postpone(self, key: str, delay_ms: int) -> bool:
        """Move the pending timer with this key to `delay_ms` from now, keeping its callback;
        False (nothing done) when none is pending. A session timer reset by every heartbeat
        then makes no callback or timer object per heartbeat."""

    @abc.abstractmethod
    def cancel(self, key: str) -> None:
        """Forget the timer with this key, if any."""

    @abc.abstractmethod
    def is_scheduled(self, key: str) -> bool:
        """Whether a timer with this key is pending."""


class AsyncioTimer(Timer):
    """Real time, on the running asyncio loop.

    Rescheduling a key to a later deadline (a session timer reset by every heartbeat) does not
    touch the loop: the armed handle stays, the new deadline and callback are noted, and when
    the handle fires it re-arms for the deadline it now finds. A session timer thus costs one
    loop timer per session timeout instead of a cancel and a new handle per heartbeat, and the
    callback still runs at the last deadline it was given."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None):
        self._loop = loop
        # key -> [deadline (loop time), callback, the armed handle]
        self._timers: dict[str, list] = {}

    @property
    def loop(self):
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def schedule(self, key, delay_ms, callback):
        loop = self.loop
        deadline = loop.time() + max(delay_ms, 0) / 1000
        entry = self._timers.get(key)
        if entry is not None:
            if entry[2].when() <= deadline:
                entry[0] = deadline
                entry[1] = callback
                return
            entry[2].cancel()
        entry = [deadline, callback, None]
        entry[2] = loop.call_at(deadline, self._fire, key, entry)
        self._timers[key] = entry

    def postpone(self, key, delay_ms):
        entry = self._timers.get(key)
        if entry is None:
            return False
        deadline = self.loop.time() + max(delay_ms, 0) / 1000
        if entry[2].when() <= deadline:
            entry[0] = deadline
        else:
            entry[2].cancel()
            entry[0] = deadline
            entry[2] = self.loop.call_at(deadline, self._fire, key, entry)
        return True

    def _fire(self, key, entry):
        if self._timers.get(key) is not entry:
            return
        if entry[0] > entry[2].when():  # moved later since it was armed
            entry[2] = self.loop.call_at(entry[0], self._fire, key, entry)
            return
        del self._timers[key]
        entry[1]()

    def cancel(self, key):
        entry = self._timers.pop(key, None)
        if entry is not None:
            entry[2].cancel()

    def is_scheduled(self, key):
        return key in self._timers

    def cancel_all(self):
        for key in list(self._timers):
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

    def postpone(self, key, delay_ms):
        entry = self._timers.get(key)
        if entry is None:
            return False
        self.schedule(key, delay_ms, entry[2])
        return True

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
