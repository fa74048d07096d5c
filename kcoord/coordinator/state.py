"""Classic group states and the one table of allowed transitions (Kafka's ClassicGroupState)."""
from __future__ import annotations

import enum


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


# target state -> states it may be entered from
ALLOWED_FROM: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.EMPTY, GroupState.COMPLETING_REBALANCE,
                                               GroupState.STABLE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    """A coordinator bug: a transition the table does not allow."""


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    if current not in ALLOWED_FROM[target]:
        raise IllegalStateTransition(f"group {group_id} cannot go from {current} to {target}")
