"""AsyncioTimer over a loop whose clock moves by hand: a session timer pushed back by every
heartbeat keeps one loop timer, and still fires once, at the last deadline it was given."""
from __future__ import annotations

import heapq
import itertools

from kcoord.coordinator.clock import AsyncioTimer


class _Handle:
    def __init__(self, when, fn, args):
        self._when, self.fn, self.args, self.cancelled = when, fn, args, False

    def when(self):
        return self._when

    def cancel(self):
        self.cancelled = True


class _Loop:
    """The two calls AsyncioTimer makes of a loop, and time that moves on `advance`."""

    def __init__(self):
        self.now = 1000.0
        self.heap = []
        self.seq = itertools.count()
        self.armed = 0   # call_at calls: loop timers made

    def time(self):
        return self.now

    def call_at(self, when, fn, *args):
        self.armed += 1
        handle = _Handle(when, fn, args)
        heapq.heappush(self.heap, (when, next(self.seq), handle))
        return handle

    def advance(self, seconds):
        target = self.now + seconds
        while self.heap and self.heap[0][0] <= target:
            when, _, handle = heapq.heappop(self.heap)
            self.now = max(self.now, when)
            if not handle.cancelled:
                handle.fn(*handle.args)
        self.now = target


def test_rescheduling_later_keeps_one_loop_timer_and_fires_at_the_last_deadline():
    loop = _Loop()
    timer = AsyncioTimer(loop)
    fired = []
    timer.schedule("hb", 10_000, lambda: fired.append(("first", loop.now)))
    for _ in range(100):   # a heartbeat every second pushes the session back
        loop.advance(1)
        timer.schedule("hb", 10_000, lambda: fired.append(("last", loop.now)))
    assert loop.armed <= 100 // 10 + 2   # about one loop timer per session timeout, not one per heartbeat
    loop.advance(9.5)
    assert fired == [] and timer.is_scheduled("hb")
    loop.advance(0.5)
    assert fired == [("last", 1110.0)] and not timer.is_scheduled("hb")
    loop.advance(100)
    assert len(fired) == 1


def test_rescheduling_earlier_or_cancelling_takes_effect():
    loop = _Loop()
    timer = AsyncioTimer(loop)
    fired = []
    timer.schedule("k", 10_000, lambda: fired.append("late"))
    timer.schedule("k", 1_000, lambda: fired.append("early"))
    loop.advance(1)
    assert fired == ["early"]
    timer.schedule("k", 1_000, lambda: fired.append("cancelled"))
    timer.schedule("k", 5_000, lambda: fired.append("cancelled too"))
    timer.cancel("k")
    loop.advance(10)
    assert fired == ["early"] and not timer.is_scheduled("k")
    timer.schedule("a", 1_000, lambda: fired.append("a"))
    timer.schedule("b", 2_000, lambda: fired.append("b"))
    timer.cancel_all()
    loop.advance(10)
    assert fired == ["early"]


def test_a_callback_may_schedule_its_own_key_again():
    loop = _Loop()
    timer = AsyncioTimer(loop)
    fired = []

    def expire():
        fired.append(loop.now)
        if len(fired) < 3:
            timer.schedule("k", 1_000, expire)
    timer.schedule("k", 1_000, expire)
    loop.advance(10)
    assert fired == [1001.0, 1002.0, 1003.0]


def test_postponing_moves_a_pending_timer_with_its_callback_and_nothing_else():
    from kcoord.coordinator.clock import ManualTimer

    loop = _Loop()
    manual = ManualTimer()
    for timer, advance in ((AsyncioTimer(loop), loop.advance), (manual, lambda s: manual.advance(int(s * 1000)))):
        fired = []
        assert timer.postpone("hb", 1_000) is False and not timer.is_scheduled("hb")
        timer.schedule("hb", 10_000, lambda: fired.append("session"))
        for _ in range(20):   # heartbeats: each moves the deadline 10 s on
            advance(1)
            assert timer.postpone("hb", 10_000) is True
        assert timer.postpone("hb", 2_000) is True   # earlier: takes effect too
        advance(1.9)
        assert fired == []
        advance(0.1)
        assert fired == ["session"] and not timer.is_scheduled("hb")
        assert timer.postpone("hb", 1_000) is False   # fired: nothing left to move


def test_members_moved_to_an_earlier_deadline_leave_no_stale_heap_behind():
    """A new member's session is first set to the 5-minute new-member join timeout, then moved
    to its 10 s session timeout once it joined: the first heap items must not stay for minutes."""
    loop = _Loop()
    timer = AsyncioTimer(loop)
    fired = []
    for i in range(1000):
        timer.schedule(f"hb-{i}", 300_000, fired.append, ("join timeout", i))
    for i in range(1000):
        assert timer.postpone(f"hb-{i}", 10_000)
    assert len(timer._heap) <= 1000 + 1000 // 2   # compacted once the stale items were half
    loop.advance(9.9)
    assert fired == []
    loop.advance(0.1)
    assert fired == [("join timeout", i) for i in range(1000)]   # the callback and its arguments kept
    assert timer._heap == [] and timer._timers == {}


def test_a_callback_that_compacts_the_heap_does_not_lose_the_timers_due_with_it():
    loop = _Loop()
    timer = AsyncioTimer(loop)
    fired = []

    def churn(i):
        fired.append(i)
        for j in range(200 if i == 0 else 0):   # cancelled at once: the heap is compacted while `_run` runs
            timer.schedule(f"churn-{i}-{j}", 50_000, fired.append, "never")
            timer.cancel(f"churn-{i}-{j}")
    for i in range(10):
        timer.schedule(f"due-{i}", 1_000, churn, i)
    timer.schedule("later", 2_000, fired.append, "later")
    loop.advance(1)
    assert fired == list(range(10))
    live = [entry[5] for entry in timer._heap if timer._timers.get(entry[5]) is entry]
    assert timer._stale == len(timer._heap) - len(live)   # the count the compaction relies on is still true
    assert live == ["later"]
    loop.advance(100)
    assert fired == list(range(10)) + ["later"]


def test_a_scoped_timer_cancels_only_its_own_partition():
    from kcoord.coordinator.clock import ManualTimer, ScopedTimer

    loop = _Loop()
    manual = ManualTimer()
    for base, advance in ((AsyncioTimer(loop), loop.advance), (manual, lambda s: manual.advance(int(s * 1000)))):
        fired = []
        p1, p10 = ScopedTimer(base, "p1/"), ScopedTimer(base, "p10/")
        p1.schedule("hb-a", 1_000, fired.append, "p1 a")
        p10.schedule("hb-a", 1_000, fired.append, "p10 a")
        p10.schedule("hb-b", 1_000, fired.append, "p10 b")
        assert p1.is_scheduled("hb-a") and p10.is_scheduled("hb-a") and not p1.is_scheduled("hb-b")
        p1.cancel_all()
        assert not p1.is_scheduled("hb-a") and p10.is_scheduled("hb-a")
        advance(2)
        assert sorted(fired) == ["p10 a", "p10 b"]
