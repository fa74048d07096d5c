"""Every coordinator unit test also checks that waiters hear of every change they can see.

`wait_for` (kcoord.coordinator.service) looks at a group again only when the coordinator
calls `on_change` with its id, which it does for each group an operation wrote a record or
emitted an event about. A change a waiter can see (the group's state, member count,
generation or group epoch, or the group appearing or going) made by an operation that
neither wrote nor emitted about that group would leave a waiter hanging; here any such
operation, in any of these tests, fails the test that ran it.
"""
from __future__ import annotations

import pytest

from kcoord.coordinator.context import CoordinatorContext


def _seen_by_waiters(ctx: CoordinatorContext) -> dict[str, tuple]:
    """What wait_for compares, per group id (the classic group first, as it looks)."""
    seen = {gid: (str(g.state), g.size, g.generation) for gid, g in ctx.consumer_groups.items()}
    seen.update((gid, (str(g.state), g.size, g.generation)) for gid, g in ctx.groups.items())
    return seen


@pytest.fixture(autouse=True)
def _waiters_hear_every_change(monkeypatch):
    operation = CoordinatorContext.operation

    def checked(self, fn, *args):
        if self._operation is not None:  # part of the operation in progress: checked with it
            return operation(self, fn, *args)
        before, heard, listener = _seen_by_waiters(self), set(), self.on_change

        def hear(group_id):
            heard.add(group_id)
            if listener is not None:
                listener(group_id)
        self.on_change = hear
        failed_before = None in self.unavailable
        try:
            result = operation(self, fn, *args)
        finally:
            self.on_change = listener
        if None in self.unavailable and not failed_before:
            return result  # its write failed: nothing of it is published, waiters included
        after = _seen_by_waiters(self)
        unheard = sorted(g for g in before.keys() | after.keys() if before.get(g) != after.get(g) and g not in heard)
        assert not unheard, (f"waiters were not told of a change to {unheard}: "
                             + "; ".join(f"{g}: {before.get(g)} -> {after.get(g)}" for g in unheard))
        return result

    monkeypatch.setattr(CoordinatorContext, "operation", checked)
