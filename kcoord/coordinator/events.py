"""Structured events for every group change, published to subscribers.

`KafkaWordedLog` writes them the way a Kafka broker's server.log does, so
operators (and the analytics pipeline) recognise the lines.
"""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import Callable


class EventKind(enum.StrEnum):
    """What happened to a group. The values are the journal's `kind` field."""
    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    MEMBER_EXPIRED = "member_expired"
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
    # The consumer group protocol (KIP-848): no rebalance rounds, epochs instead. `generation`
    # carries the group epoch; details say which other epoch moved.
    CONSUMER_GROUP_CREATED = "consumer_group_created"
    GROUP_EPOCH_BUMPED = "group_epoch_bumped"
    TARGET_ASSIGNMENT_CHANGED = "target_assignment_changed"
    MEMBER_EPOCH_BUMPED = "member_epoch_bumped"
    PARTITIONS_REVOKING = "partitions_revoking"
    # Streams groups (KIP-1071): the same epochs; a member revokes tasks rather than partitions.
    STREAMS_GROUP_CREATED = "streams_group_created"
    TASKS_REVOKING = "tasks_revoking"
    # Share groups (KIP-932): the same epochs, no revocation. A share member's MEMBER_LEFT and
    # MEMBER_EXPIRED carry details.group_type "share" (kcoord.coordinator.share.protocol's
    # on_member_gone listens for them).
    SHARE_GROUP_CREATED = "share_group_created"
    # A share group's records (kcoord.share.manager): one event per request (or lock expiry) per
    # share-partition, `member_id` the member concerned, details the topic, partition and counts of
    # records: acquired (records, redeliveries: delivery count > 1, max_delivery_count),
    # acknowledged (accepted, released, rejected, gaps, renewed, archived: released at the
    # delivery count limit), released because the member's share session closed and locks expired
    # (records, archived). As frequent as fetches: the journal sums them (SHARE_RECORD_KINDS).
    SHARE_RECORDS_ACQUIRED = "share_records_acquired"
    SHARE_RECORDS_ACKNOWLEDGED = "share_records_acknowledged"
    SHARE_RECORDS_RELEASED = "share_records_released"
    SHARE_LOCKS_EXPIRED = "share_locks_expired"
    # Online migration: the group changed kind with members in it; details.to is its new type.
    GROUP_CONVERTED = "group_converted"
    # The group's coordinator moved (kcoord.coordinator.runtime): it was loaded from its
    # __consumer_offsets partition by a broker that now leads it, or unloaded by one that no
    # longer does; details say which partition, broker and leader epoch.
    LOADED = "coordinator_loaded"
    UNLOADED = "coordinator_unloaded"
    # Transactions (kcoord.transaction): `transactional_id` names the transactional id, `group_id`
    # is empty (no subscriber may take it for a group), `generation` is the producer epoch; details
    # name the producer id and epoch, the result ("commit"/"abort"), whether the producer was
    # fenced and how many partitions the transaction had.
    TRANSACTION_INITIALIZED = "transaction_initialized"
    TRANSACTION_STARTED = "transaction_started"
    TRANSACTION_ENDING = "transaction_ending"
    TRANSACTION_COMPLETED = "transaction_completed"
    TRANSACTION_TIMED_OUT = "transaction_timed_out"


SHARE_RECORD_KINDS = frozenset({EventKind.SHARE_RECORDS_ACQUIRED, EventKind.SHARE_RECORDS_ACKNOWLEDGED,
                                EventKind.SHARE_RECORDS_RELEASED, EventKind.SHARE_LOCKS_EXPIRED})


class RebalanceCause(enum.StrEnum):
    """Why the coordinator started a rebalance: a few values, for metrics labels. The
    free-text reason (Kafka's wording, member ids, the client's reason) travels beside it."""
    MEMBER_JOINED = "member_joined"
    LEADER_REJOIN = "leader_rejoin"
    METADATA_CHANGED = "metadata_changed"
    STATIC_REPLACEMENT = "static_replacement"
    MEMBER_FAILED = "member_failed"
    MEMBER_LEFT = "member_left"
    OTHER = "other"         # forced by a fault rule or on request


@dataclass(slots=True)
class GroupEvent:
    kind: EventKind
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
    cause: RebalanceCause | None = None   # set on REBALANCE_STARTED
    transactional_id: str | None = None   # set on the TRANSACTION_* kinds


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
        if e.kind is EventKind.OFFSETS_COMMITTED:   # by far the commonest, and never logged
            return None
        if e.kind is EventKind.REBALANCE_STARTED:
            return (f"Preparing to rebalance group {e.group_id} in state PreparingRebalance with old "
                    f"generation {e.generation} (reason: {e.reason})")
        if e.kind is EventKind.STABLE:
            return f"Stabilized group {e.group_id} generation {e.generation} with {e.members} members"
        if e.details.get("group_type") == "share" and e.kind in (EventKind.MEMBER_LEFT, EventKind.MEMBER_EXPIRED):
            # As GroupMetadataManager's shareGroupLeave and shareGroupFenceMemberOperation word them.
            return (f"[GroupId {e.group_id}] Member {e.member_id} left the share group."
                    if e.kind is EventKind.MEMBER_LEFT else
                    f"[GroupId {e.group_id}] Member {e.member_id} fenced from the group because {e.reason}.")
        if e.kind is EventKind.MEMBER_EXPIRED:
            return f"Member {e.member_id} in group {e.group_id} has failed, removing it from the group"
        if e.kind is EventKind.MEMBER_LEFT:
            return (f"Member {e.member_id} has left group {e.group_id} through explicit `LeaveGroup` request; "
                    f"client reason: {e.reason}")
        if e.kind is EventKind.ASSIGNMENT_RECEIVED:
            return f"Assignment received from leader {e.member_id} for group {e.group_id} for generation {e.generation}"
        if e.kind is EventKind.JOIN_COMPLETED:
            return (f"Group {e.group_id} with generation {e.generation} is now empty" if e.state_after == "Empty"
                    else None)
        if e.kind is EventKind.MEMBER_JOINED:
            return f"Member {e.member_id} joined group {e.group_id} (reason: {e.reason})"
        if e.kind is EventKind.MEMBER_REPLACED:
            return (f"Static member {e.instance_id} of group {e.group_id} with unknown member id rejoins, "
                    f"assigning new member id {e.member_id} (was {e.details.get('old_member_id')})")
        if e.kind is EventKind.DEAD:
            return f"Group {e.group_id} transitioned to Dead in generation {e.generation}"
        if e.kind is EventKind.GROUP_EPOCH_BUMPED:
            return f"[GroupId {e.group_id}] Bumped group epoch to {e.generation} ({e.reason})."
        if e.kind is EventKind.MEMBER_EPOCH_BUMPED:
            return (f"[GroupId {e.group_id}] Member {e.member_id} new assignment state: "
                    f"epoch={e.details.get('member_epoch')}, previousEpoch={e.details.get('previous_member_epoch')}, "
                    f"state={e.details.get('member_state')}.")
        if e.kind is EventKind.GROUP_CONVERTED:
            return f"[GroupId {e.group_id}] Converted the group to a {e.details.get('to')} group."
        if e.kind is EventKind.OFFSETS_EXPIRED:
            return f"Removed {e.details.get('count')} expired offsets for group {e.group_id}"
        return None
