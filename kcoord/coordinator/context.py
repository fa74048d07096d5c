"""What the parts of the coordinator share: the groups, committed offsets, time, settings,
and the operation in progress.

An operation is one request or one timer. While it runs, the changes it makes are
collected: records to write, events to publish, parked requests to answer, and the groups
those records and events are about, whose waiters must look again (every change a waiter
can see, a group's state, members or generation, is told by an event or written in a
record, so only a change without either is marked by hand: a group loaded from durable
state). When it ends, the records are written first (all of them, to the record sink); only
if that succeeds are offsets changed (by replaying the records), events published and
answers released. If the write fails for any reason, no answer of the operation says it
succeeded: each carries COORDINATOR_NOT_AVAILABLE, nothing is published, offsets stay as
they were, and the coordinator answers COORDINATOR_NOT_AVAILABLE from then on, until a
restart rebuilds memory from what the disk holds. (Kafka reverts its in-memory snapshot and
carries on; see docs/deviations.md.)
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Protocol

from kcoord.coordinator.clock import Timer
from kcoord.coordinator.config import CoordinatorConfig
from kcoord.coordinator.events import EventBus, EventKind, GroupEvent, RebalanceCause
from kcoord.coordinator.classic.group import Group, Member
from kcoord.coordinator.offsets.committed import OffsetStore
from kcoord.coordinator.records import GroupMetadataRecord, OffsetCommitRecord, Record, RecordSink, TxnOffsetCommitRecord
from kcoord.coordinator.results import failed
from kcoord.coordinator.classic.state import GroupState
from kcoord.coordinator.offsets.transactional import PendingOffsets
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.coordinator")
_NONE: Mapping[str, Any] = {}


class TopicCatalog(Protocol):
    def partition_exists(self, topic: str, partition: int) -> bool: ...

    # The consumer group protocol reads `topics` too (name -> a topic with `topic_id`, `partitions`
    # and `internal`), as kcoord.log.topics.TopicStore has it; a catalog without it has no topics.


class _Operation:
    # One per request or timer: slots and plain assignments keep its making cheap.
    __slots__ = ("records", "events", "answers", "changed")

    def __init__(self):
        self.records: list[Record] = []
        self.events: list[GroupEvent] = []
        self.answers: list[tuple[Callable[[Any], None], Any]] = []
        self.changed: dict[str, None] = {}  # ordered set of the ids of the groups written or emitted about


class CoordinatorContext:
    def __init__(self, timer: Timer, config: CoordinatorConfig, topics: TopicCatalog | None, bus: EventBus):
        self.timer = timer
        self.config = config
        self.topics = topics
        self.bus = bus
        self.groups: dict[str, Group] = {}
        # Consumer groups (KIP-848, consumer/protocol.py). A group id names one group of either kind.
        self.consumer_groups: dict = {}
        # Streams groups (KIP-1071, streams/protocol.py), under the same rule.
        self.streams_groups: dict = {}
        # Share groups (KIP-932, share/protocol.py), under the same rule.
        self.share_groups: dict = {}
        self.offsets = OffsetStore()
        # Offsets of transactions not yet ended (TxnOffsetCommit), per producer.
        self.pending = PendingOffsets()
        # Groups this node pretends not to coordinate right now (None: every group), and the
        # error that says so: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR or
        # COORDINATOR_LOAD_IN_PROGRESS, as a broker would answer during failover or loading.
        self.unavailable: dict[str | None, ErrorCode] = {}
        self.record_sink: RecordSink | None = None
        # Per-group configs (kcoord.group_configs.GroupConfigs, or anything with its `effective`);
        # None: no group has any.
        self.group_configs = None
        # Called with the id of each group an operation wrote a record or emitted an event about,
        # once its records are written: lets waiters (wait_for) re-check.
        self.on_change: Callable[[str], None] | None = None
        self._operation: _Operation | None = None
        # One bound method that every timer's expiry runs through (not a new one per timer).
        self._timer_operation = self.operation

    # ---------------------------------------------------------------- time
    def now(self) -> int:
        return self.timer.now_ms()

    def schedule(self, key: str, delay_ms: int, fn: Callable[..., None], *args) -> None:
        """A keyed timer whose expiry, `fn(*args)`, is an operation of its own."""
        self.timer.schedule(key, delay_ms, self._timer_operation, fn, *args)

    # ---------------------------------------------------------- operations
    def operation(self, fn: Callable[..., Any], *args) -> Any:
        """Run `fn(*args)` as one operation (or as part of the one in progress) and return its answer."""
        if self._operation is not None:
            return fn(*args)
        op = self._operation = _Operation()
        try:
            result = fn(*args)
        except BaseException:
            self._operation = None
            self._finish(op)  # what happened before the failure is still answered truthfully
            raise
        self._operation = None
        return result if self._finish(op) else failed(result, ErrorCode.COORDINATOR_NOT_AVAILABLE)

    def _finish(self, op: _Operation) -> bool:
        """Write the operation's records, then make its changes visible; False if the write failed."""
        if not self._write(op):
            for respond, answer in op.answers:
                respond(failed(answer, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return False
        for record in op.records:
            self._replay(record)
        for event in op.events:
            self.bus.publish(event)
        for respond, answer in op.answers:
            respond(answer)
        if self.on_change is not None:
            for group_id in op.changed:
                self.on_change(group_id)
        return True

    def _write(self, op: _Operation) -> bool:
        if not op.records or self.record_sink is None:
            return True
        try:
            self.record_sink.append(op.records)
        except Exception as err:  # a bug in encoding as much as a full disk: never acknowledged
            log.error("writing %d records failed (%s: %s); every group answers COORDINATOR_NOT_AVAILABLE "
                      "until a restart reloads the data dir", len(op.records), type(err).__name__, err)
            self.unavailable[None] = ErrorCode.COORDINATOR_NOT_AVAILABLE
            return False
        return True

    def _replay(self, record: Record) -> None:
        """Apply a written record to memory. Offsets change only here; a group's metadata
        changed as the operation ran, and its tombstone takes the group's offsets along."""
        if isinstance(record, OffsetCommitRecord):
            if record.value is None:
                self.offsets.delete(record.group_id, record.topic, record.partition)
                if self.pending.open:
                    self.pending.deleted(record.group_id, record.topic, record.partition)
            else:
                self.offsets.commit(record.group_id, record.topic, record.partition, record.value)
                if self.pending.open:
                    self.pending.committed(record.group_id, record.topic, record.partition)
        elif isinstance(record, TxnOffsetCommitRecord):
            self.pending.add(record.producer_id, record.group_id, record.topic, record.partition, record.value)
        elif isinstance(record, GroupMetadataRecord) and record.value is None:
            self.offsets.delete_group(record.group_id)

    def write(self, record: Record) -> None:
        op = self._operation
        if op is not None:
            op.records.append(record)
            op.changed[record.group_id] = None
        else:
            self.operation(lambda: self.write(record))

    def write_all(self, records: list[Record]) -> None:
        """write() each of `records` (a commit's offsets: one call, not one per partition)."""
        op = self._operation
        if op is not None:
            op.records.extend(records)
            changed = op.changed
            for record in records:
                changed[record.group_id] = None
        else:
            self.operation(lambda: self.write_all(records))

    def write_offset_tombstones(self, group_id: str) -> None:
        """A tombstone for each of the group's offsets, committed or pending in a transaction (a
        group being deleted), as Kafka's deleteAllOffsets writes them."""
        for topic, partition in self.offsets.all(group_id):
            self.write(OffsetCommitRecord(group_id, topic, partition, None))
        for topic, partition in self.pending.partitions(group_id):
            if self.offsets.get(group_id, topic, partition) is None:
                self.write(OffsetCommitRecord(group_id, topic, partition, None))

    def answer(self, respond: Callable[[Any], None], result: Any) -> None:
        """Answer a parked request once the operation's records are written."""
        if self._operation is not None:
            self._operation.answers.append((respond, result))
        else:
            respond(result)

    def emit(self, kind: EventKind, group: Group, *, before: GroupState | None = None,
             member: Member | None = None, member_id: str | None = None, reason: str | None = None,
             cause: RebalanceCause | None = None, **details) -> None:
        event = GroupEvent(
            kind=kind, time_ms=self.now(), group_id=group.group_id, generation=group.generation,
            state_before=str(before or group.state), state_after=str(group.state),
            member_id=member.member_id if member else member_id,
            instance_id=member.instance_id if member else None,
            client_id=member.client_id if member else None,
            client_host=member.client_host if member else None,
            reason=reason, protocol=group.protocol_name, members=group.size, details=details, cause=cause)
        op = self._operation
        if op is not None:
            op.events.append(event)
            op.changed[group.group_id] = None
        else:
            self.bus.publish(event)
            if self.on_change is not None:
                self.on_change(group.group_id)

    def event_mark(self) -> int:
        """Where the operation's events stand now, for `drop_events_since`."""
        return len(self._operation.events) if self._operation is not None else 0

    def drop_events_since(self, mark: int) -> None:
        """Forget the events emitted since `mark`: the change they told of was undone."""
        if self._operation is not None:
            del self._operation.events[mark:]

    def changed(self, group) -> None:
        """Tell `group`'s waiters to look again where no record or event of the operation
        tells of its change (a group loaded from durable state)."""
        op = self._operation
        if op is not None:
            op.changed[group.group_id] = None
        elif self.on_change is not None:
            self.on_change(group.group_id)

    # -------------------------------------------------------------- groups
    def all_groups(self) -> list:
        """Every group held here, of every type."""
        return [*self.groups.values(), *self.consumer_groups.values(), *self.streams_groups.values(),
                *self.share_groups.values()]

    def group_config(self, group_id: str) -> Mapping[str, Any]:
        """The configs group `group_id` has of its own (`streams.num.standby.replicas`, ...: Kafka's
        GroupConfig names), their values within the broker's bounds; where it has none, the
        broker's (`self.config`) apply."""
        return self.group_configs.effective(group_id) if self.group_configs is not None else _NONE

    def availability(self, group_id: str) -> ErrorCode:
        """NONE, or the error every group request for `group_id` gets while it is unavailable."""
        return self.unavailable.get(group_id) or self.unavailable.get(None) or ErrorCode.NONE

    def transition(self, group: Group, target: GroupState) -> GroupState:
        before = group.state
        group.transition(target, self.now())
        return before

    def make_dead(self, group: Group) -> None:
        before = self.transition(group, GroupState.DEAD)
        self.groups.pop(group.group_id, None)
        self.write(GroupMetadataRecord(group.group_id, None))
        self.emit(EventKind.DEAD, group, before=before)
