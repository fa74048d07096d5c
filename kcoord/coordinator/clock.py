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
import math
import time
from typing import Callable


class Timer(abc.ABC):
    """The timer service the coordinator is given."""

    @abc.abstractmethod
    def now_ms(self) -> int:
        """Current time in epoch milliseconds."""

    @abc.abstractmethod
    def schedule(self, key: str, delay_ms: int, callback: Callable[..., None], *args) -> None:
        """Run `callback(*args)` after `delay_ms`, replacing any timer with the same key.

        The arguments are kept beside the callback rather than bound into a closure or a
        partial: every member's session is a timer, and a wrapper per timer is memory per member."""

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

    @abc.abstractmethod
    def cancel_prefix(self, prefix: str) -> None:
        """Forget every timer whose key starts with `prefix` (a coordinator partition unloaded)."""


class AsyncioTimer(Timer):
    """Real time, on the running asyncio loop: the timers in a heap of their own, with one
    loop timer armed for the earliest.

    A loop timer per key cost ~300 bytes (its handle, a copy of the context, a bound method),
    and a cancelled one stayed in the loop's heap until it was due: every member's session
    and every pending member's id held one. Here a timer is one list, both its entry under
    its key and its heap item, and a cancelled one is dropped at once from the keys (its
    heap item is skipped when reached, and the heap is rebuilt once such items are half of it).

    Rescheduling a key to a later deadline (a session timer reset by every heartbeat) only
    notes the new deadline and callback; when the old deadline comes round the timer goes
    back into the heap at the one it now has, and the callback still runs at the last
    deadline it was given. Timers due at the same time run in the order they were scheduled."""

    # An entry: [its deadline in the heap, seq, its deadline (loop time), callback, args, key].
    # The first two order the heap (seq is unique: the rest is never compared) and do not
    # change while it is there; a timer moved earlier is a new entry.
    def __init__(self, loop: asyncio.AbstractEventLoop | None = None):
        self._loop = loop
        self._timers: dict[str, list] = {}
        self._heap: list[list] = []
        self._seq = itertools.count()
        self._stale = 0             # heap items whose timer was cancelled or replaced
        self._armed = None          # the loop timer, for the heap's earliest deadline
        self._armed_at = math.inf

    @property
    def loop(self):
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def schedule(self, key, delay_ms, callback, *args):
        deadline = self.loop.time() + max(delay_ms, 0) / 1000
        entry = self._timers.get(key)
        if entry is not None:
            if entry[0] <= deadline:
                entry[2] = deadline
                entry[3] = callback
                entry[4] = args
                return
            self._retire(entry)
            key = entry[5]   # the string the dict holds already, not an equal copy
        self._push([deadline, next(self._seq), deadline, callback, args, key])

    def postpone(self, key, delay_ms):
        entry = self._timers.get(key)
        if entry is None:
            return False
        deadline = self.loop.time() + max(delay_ms, 0) / 1000
        if entry[0] <= deadline:
            entry[2] = deadline
        else:
            callback, args = entry[3], entry[4]
            self._retire(entry)
            self._push([deadline, next(self._seq), deadline, callback, args, entry[5]])
        return True

    def _retire(self, entry) -> None:
        """`entry` stays in the heap until reached or compacted away: it holds nothing meanwhile."""
        entry[3] = entry[4] = None
        self._stale += 1

    def _push(self, entry) -> None:
        self._timers[entry[5]] = entry
        heapq.heappush(self._heap, entry)
        self._maybe_compact()
        deadline = entry[0]
        if deadline < self._armed_at:
            if self._armed is not None:
                self._armed.cancel()
            self._armed_at = deadline
            self._armed = self.loop.call_at(deadline, self._run)

    def _run(self) -> None:
        self._armed, self._armed_at = None, math.inf
        heap, timers = self._heap, self._timers
        now = self.loop.time()
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            key = entry[5]
            if timers.get(key) is not entry:
                self._stale -= 1
                continue
            if entry[2] > entry[0]:   # moved later since it went into the heap
                entry[0], entry[1] = entry[2], next(self._seq)
                heapq.heappush(heap, entry)
                continue
            del timers[key]
            try:
                entry[3](*entry[4])
            except Exception as exc:   # one failing timer must not stop the others due now
                self.loop.call_exception_handler({"message": f"timer {key!r} failed", "exception": exc})
        self._maybe_compact()
        if heap and heap[0][0] < self._armed_at:
            if self._armed is not None:
                self._armed.cancel()
            self._armed_at = heap[0][0]
            self._armed = self.loop.call_at(heap[0][0], self._run)

    def _maybe_compact(self) -> None:
        """Drop the heap items of cancelled or moved timers once they are half the heap.

        A new member's session timer is first set to the new-member join timeout (minutes)
        and then moved earlier to its session timeout once it joined: that leaves one stale
        item per member, due only minutes later. Rebuilding whenever the stale items are
        half the heap costs O(1) per stale item over time."""
        heap = self._heap
        if self._stale > 64 and self._stale * 2 >= len(heap):
            timers = self._timers
            # In place: `_run` holds the list while the callbacks it runs schedule timers.
            heap[:] = [entry for entry in heap if timers.get(entry[5]) is entry]
            heapq.heapify(heap)
            self._stale = 0

    def cancel(self, key):
        entry = self._timers.pop(key, None)
        if entry is not None:
            self._retire(entry)   # a pending member id's timer holds its callback no longer than this
            self._maybe_compact()

    def is_scheduled(self, key):
        return key in self._timers

    def cancel_prefix(self, prefix):
        for key in [k for k in self._timers if k.startswith(prefix)]:
            self.cancel(key)

    def cancel_all(self):
        self._timers.clear()
        self._heap.clear()
        self._stale = 0
        if self._armed is not None:
            self._armed.cancel()
        self._armed, self._armed_at = None, math.inf


class ManualTimer(Timer):
    """Time that moves only when `advance` is called; due timers fire in order."""

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self._now = start_ms
        self._heap: list[tuple[int, int, str]] = []
        self._timers: dict[str, tuple[int, int, Callable[..., None], tuple]] = {}
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def schedule(self, key, delay_ms, callback, *args):
        seq = next(self._seq)
        deadline = self._now + max(delay_ms, 0)
        self._timers[key] = (deadline, seq, callback, args)
        heapq.heappush(self._heap, (deadline, seq, key))

    def postpone(self, key, delay_ms):
        entry = self._timers.get(key)
        if entry is None:
            return False
        self.schedule(key, delay_ms, entry[2], *entry[3])
        return True

    def cancel(self, key):
        self._timers.pop(key, None)

    def is_scheduled(self, key):
        return key in self._timers

    def cancel_prefix(self, prefix):
        for key in [k for k in self._timers if k.startswith(prefix)]:
            del self._timers[key]

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
            entry[2](*entry[3])
        self._now = target


class ScopedTimer(Timer):
    """The timers of one coordinator partition, on a timer shared with the others: keys get the
    partition's prefix, so unloading the partition cancels them all (a session timer of a group
    now coordinated elsewhere must not fire here). The prefix ends in "/", so no partition's
    prefix starts another's ("p1/" is not the start of "p10/...").

    Unloading walks every key of the shared timer, not only the partition's: a set of its own
    keys (and a closure per timer to keep it current) was memory per member, where an unload
    is rare (a broker stopped, a partition moved) and a walk of 100,000 keys ~10 ms."""

    def __init__(self, base: Timer, prefix: str):
        self.base = base
        self.prefix = prefix

    def now_ms(self) -> int:
        return self.base.now_ms()

    def schedule(self, key, delay_ms, callback, *args):
        self.base.schedule(self.prefix + key, delay_ms, callback, *args)

    def postpone(self, key, delay_ms):
        return self.base.postpone(self.prefix + key, delay_ms)

    def cancel(self, key):
        self.base.cancel(self.prefix + key)

    def is_scheduled(self, key):
        return self.base.is_scheduled(self.prefix + key)

    def cancel_prefix(self, prefix):
        self.base.cancel_prefix(self.prefix + prefix)

    def cancel_all(self) -> None:
        self.base.cancel_prefix(self.prefix)
