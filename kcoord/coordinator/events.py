"""Structured events for every group change, published to subscribers.

`KafkaWordedLog` writes them the way a Kafka broker's server.log does, so
operators (and the analytics pipeline) recognise the lines.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Callable

MEMBER_JOINED = "member_joined"
MEMBER_LEFT = "member_left"
MEMBER_EXPIRED = "member_expired"
MEMBER_FENCED = "member_fenced"
MEMBER_REPLACED = "member_replaced"
REBALANCE_STARTED = "rebalance_started"
JOIN_COMPLETED = "join_completed"
ASSIGNMENT_RECEIVED = "assignment_received"
STABLE = "stable"
EMPTY = "empty"
DEAD = "dead"
OFFSETS_COMMITTED = "offsets_committed"
OFFSETS_EXPIRED = "offsets_expired"
OFFSETS_DELETED = "offsets_deleted"
STATIC_REJOIN_NO_REBALANCE = "static_rejoin_no_rebalance"


@dataclass
class GroupEvent:
    kind: str
    time_ms: int
    group_id: str
    generation: int
    state_before: str
    state_after: str
    member_id: str | None = None
    instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    reason: str | None = None
    protocol: str | None = None
    members: int = 0
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class EventBus:
    def __init__(self):
        self._subscribers: list[Callable[[GroupEvent], None]] = []

    def subscribe(self, fn: Callable[[GroupEvent], None]) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    def publish(self, event: GroupEvent) -> None:
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:  # a broken subscriber must not break the coordinator
                logging.getLogger("kcoord.events").exception("event subscriber failed")


class KafkaWordedLog:
    """Logs events in the wording of Kafka's GroupCoordinator."""

    def __init__(self, logger: logging.Logger | None = None):
        self.log = logger or logging.getLogger("kcoord.coordinator")

    def __call__(self, e: GroupEvent) -> None:
        text = self.format(e)
        if text:
            self.log.info(text)

    @staticmethod
    def format(e: GroupEvent) -> str | None:
        if e.kind == REBALANCE_STARTED:
            return (f"Preparing to rebalance group {e.group_id} in state PreparingRebalance with old "
                    f"generation {e.generation} (reason: {e.reason})")
        if e.kind == STABLE:
            return f"Stabilized group {e.group_id} generation {e.generation} with {e.members} members"
        if e.kind == MEMBER_EXPIRED:
            return f"Member {e.member_id} in group {e.group_id} has failed, removing it from the group"
        if e.kind == MEMBER_LEFT:
            return (f"Member {e.member_id} has left group {e.group_id} through explicit `LeaveGroup` request; "
                    f"client reason: {e.reason}")
        if e.kind == ASSIGNMENT_RECEIVED:
            return f"Assignment received from leader {e.member_id} for group {e.group_id} for generation {e.generation}"
        if e.kind == JOIN_COMPLETED:
            return (f"Group {e.group_id} with generation {e.generation} is now empty" if e.state_after == "Empty"
                    else None)
        if e.kind == MEMBER_JOINED:
            return f"Member {e.member_id} joined group {e.group_id} (reason: {e.reason})"
        if e.kind == MEMBER_REPLACED:
            return (f"Static member {e.instance_id} of group {e.group_id} with unknown member id rejoins, "
                    f"assigning new member id {e.member_id} (was {e.details.get('old_member_id')})")
        if e.kind == MEMBER_FENCED:
            return f"Member {e.member_id} of group {e.group_id} fenced: {e.reason}"
        if e.kind == DEAD:
            return f"Group {e.group_id} transitioned to Dead in generation {e.generation}"
        if e.kind == OFFSETS_EXPIRED:
            return f"Removed {e.details.get('count')} expired offsets for group {e.group_id}"
        return None
