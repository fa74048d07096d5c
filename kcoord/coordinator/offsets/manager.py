"""Committed offsets: OffsetCommit's and TxnOffsetCommit's validation, the end of a transaction
that committed offsets, OffsetFetch, OffsetDelete and retention.

Offsets change in memory only when their records are replayed, after they were written
(see context.py): a commit whose record could not be written leaves no trace.
"""
from __future__ import annotations

from typing import Callable

from kcoord.coordinator.context import CoordinatorContext
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.classic.group import Group
from kcoord.coordinator.classic.membership import ClassicMembership
from kcoord.coordinator.offsets.committed import CommittedOffset
from kcoord.coordinator.records import OffsetCommitRecord, TxnOffsetCommitRecord, offset_tombstone
from kcoord.coordinator.requests import OffsetCommitRequest, TxnOffsetCommitRequest
from kcoord.coordinator.results import FetchedOffset, OffsetCommitResult, OffsetDeleteResult
from kcoord.coordinator.classic.state import GroupState
from wire.errors import ErrorCode

S = GroupState
_RETENTION_KEY = "offsets-retention"


def _unstable(topic: str, partition: int) -> FetchedOffset:
    """A partition a transaction has an offset pending for, asked for with require_stable."""
    return FetchedOffset(topic, partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)


class OffsetManager:
    def __init__(self, ctx: CoordinatorContext, membership: ClassicMembership, consumer=None, streams=None):
        self.ctx = ctx
        self.membership = membership
        # ConsumerProtocol and StreamsProtocol: their groups check member epochs.
        self.consumer = consumer
        self.streams = streams

    def _modern(self, group_id: str):
        """(group, its protocol) for a consumer or streams group, else (None, None)."""
        group = self.ctx.consumer_groups.get(group_id)
        if group is not None:
            return group, self.consumer
        group = self.ctx.streams_groups.get(group_id)
        return (group, self.streams) if group is not None else (None, None)

    def _any_group(self, group_id: str):
        ctx = self.ctx
        return ctx.groups.get(group_id) or ctx.consumer_groups.get(group_id) or ctx.streams_groups.get(group_id)

    def _commit_to_consumer_group(self, req: OffsetCommitRequest) -> OffsetCommitResult | None:
        """A commit to a consumer or streams group: the member epoch stands in for the generation."""
        group, protocol = self._modern(req.group_id)
        if group is None:
            return None
        error, per_partition = protocol.validate_commit(
            group, req.member_id, req.generation_id, [(p.topic, p.partition) for p in req.partitions], req.version)
        if error:
            return OffsetCommitResult(error, [(p.topic, p.partition, error) for p in req.partitions])
        return self._write_commits(req, group, None, per_partition)

    # ============================================================ OffsetCommit
    def _validate_commit(self, req: OffsetCommitRequest) -> tuple[Group | None, ErrorCode]:
        ctx = self.ctx
        group = ctx.groups.get(req.group_id)
        if group is None:
            if req.generation_id < 0:  # admin client or a consumer without group management
                return self._simple_group(req.group_id), ErrorCode.NONE
            return None, ErrorCode.GROUP_ID_NOT_FOUND if req.version >= 9 else ErrorCode.ILLEGAL_GENERATION
        if group.is_in(S.DEAD):
            return group, ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.is_in(S.EMPTY):
            return group, ErrorCode.NONE
        # Kafka's order (ClassicGroup.validateOffsetCommit): the member and its generation first,
        # so an unknown member or an old generation is told so even while the group completes
        # its rebalance; only a current member then hears REBALANCE_IN_PROGRESS.
        error = group.validate_member(req.member_id, req.instance_id)
        if error:
            return group, error
        if req.generation_id != group.generation:
            return group, ErrorCode.ILLEGAL_GENERATION
        if group.is_in(S.COMPLETING_REBALANCE):
            return group, ErrorCode.REBALANCE_IN_PROGRESS
        return group, ErrorCode.NONE

    def commit_offsets(self, req: OffsetCommitRequest) -> OffsetCommitResult:
        ctx = self.ctx
        if not req.group_id:
            return OffsetCommitResult(ErrorCode.INVALID_GROUP_ID, [(p.topic, p.partition, ErrorCode.INVALID_GROUP_ID)
                                                                   for p in req.partitions])
        if not ctx.availability(req.group_id):
            result = self._commit_to_consumer_group(req)
            if result is not None:
                return result
        group, error = ((None, ctx.availability(req.group_id)) if ctx.availability(req.group_id)
                        else self._validate_commit(req))
        if error:
            return OffsetCommitResult(error, [(p.topic, p.partition, error) for p in req.partitions])
        member = group.members.get(req.member_id)
        if member is not None and group.is_in(S.STABLE, S.PREPARING_REBALANCE):
            self.membership.schedule_heartbeat(group, member)  # a commit is a heartbeat
        return self._write_commits(req, group, member, {})

    # ========================================================= TxnOffsetCommit
    def commit_transactional_offsets(self, req: TxnOffsetCommitRequest) -> OffsetCommitResult:
        """Offsets committed inside a transaction: validated as Kafka's
        validateTransactionalOffsetCommit does, written in the producer's transactional batch and
        pending until the transaction ends (complete_transaction)."""
        ctx = self.ctx
        error = ErrorCode.INVALID_GROUP_ID if not req.group_id else ctx.availability(req.group_id)
        if not error:
            consumer_group, protocol = self._modern(req.group_id)
            if consumer_group is not None:
                error = self._validate_txn_commit_to_consumer_group(consumer_group, protocol, req)
                group = consumer_group
            else:
                group, error = self._validate_txn_commit(req)
        if error:
            return OffsetCommitResult(error, [(p.topic, p.partition, error) for p in req.partitions])
        return self._write_commits(req, group, None, {}, (req.producer_id, req.producer_epoch))

    def _validate_txn_commit(self, req: TxnOffsetCommitRequest) -> tuple[Group | None, ErrorCode]:
        """A classic group's check of a transactional commit (ClassicGroup.validateOffsetCommit):
        a request naming no member (TxnOffsetCommit before v3) is taken whatever the group's
        state, and the group's state is not enforced."""
        ctx = self.ctx
        group = ctx.groups.get(req.group_id)
        if group is None:
            if req.generation_id < 0:
                return self._simple_group(req.group_id), ErrorCode.NONE
            return None, ErrorCode.ILLEGAL_GENERATION
        if group.is_in(S.DEAD):
            return group, ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.is_in(S.EMPTY):
            return group, ErrorCode.NONE
        if req.generation_id >= 0 or req.member_id or req.instance_id is not None:
            error = group.validate_member(req.member_id, req.instance_id)
            if error:
                return group, error
            if req.generation_id != group.generation:
                return group, ErrorCode.ILLEGAL_GENERATION
        return group, ErrorCode.NONE

    def _validate_txn_commit_to_consumer_group(self, group, protocol, req: TxnOffsetCommitRequest) -> ErrorCode:
        """A consumer group's check of a transactional commit: a stale member epoch, for the
        member or for any partition the request may commit, is ILLEGAL_GENERATION for the whole
        request (Kafka turns its StaleMemberEpochException into that)."""
        if req.generation_id == -1 and not req.member_id and req.instance_id is None:
            return ErrorCode.NONE   # TxnOffsetCommit does not require the member fields
        checked = [(p.topic, p.partition) for p in req.partitions if not self._metadata_too_large(p.metadata)]
        error, per_partition = protocol.validate_commit(group, req.member_id, req.generation_id, checked,
                                                        version=None)
        if error in (ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.ILLEGAL_GENERATION) or per_partition:
            return ErrorCode.ILLEGAL_GENERATION
        return error

    def _simple_group(self, group_id: str) -> Group:
        """A group nobody manages, made by a commit naming no generation (the admin client, a
        consumer assigning itself partitions)."""
        group = Group(group_id, created_ms=self.ctx.now())
        group.emptied_at_ms = None  # a simple group: offsets age from their commit time
        self.ctx.groups[group_id] = group
        self.ctx.changed(group)   # no record tells of it when every partition is refused
        return group

    def _metadata_too_large(self, metadata: str | None) -> bool:
        limit = self.ctx.config.offset_metadata_max_bytes
        # A character is at most 4 UTF-8 bytes: only a long text needs encoding to be measured.
        return bool(metadata) and len(metadata) * 4 > limit and len(metadata.encode("utf-8")) > limit

    def complete_transaction(self, producer_id: int, commit: bool) -> int:
        """The marker ending `producer_id`'s transaction was written to this partition: its pending
        offsets are applied (commit) or dropped (abort), as Kafka's replayEndTransactionMarker
        does. Returns how many offsets were applied."""
        ctx = self.ctx
        applied = ctx.pending.end(producer_id, commit)
        by_group: dict[str, list[tuple[str, int]]] = {}
        for group_id, topic, partition, value in applied:
            ctx.offsets.commit(group_id, topic, partition, value)
            by_group.setdefault(group_id, []).append((topic, partition))
        for group_id, committed in by_group.items():
            group = self._any_group(group_id)
            if group is not None:
                ctx.emit(K.OFFSETS_COMMITTED, group, count=len(committed), partitions=committed,
                         producer_id=producer_id)
        return len(applied)

    def _write_commits(self, req, group, member, refused: dict, producer: tuple[int, int] | None = None
                       ) -> OffsetCommitResult:
        """The partitions' offsets written (`producer`: (id, epoch) of the transaction they are
        committed in; pending until it ends, and told of by an event only then)."""
        ctx = self.ctx
        now = ctx.now()
        retention_ms = getattr(req, "retention_ms", None)
        expire_ms = now + retention_ms if retention_ms is not None and retention_ms >= 0 else None
        results = []
        committed = []
        max_metadata = ctx.config.offset_metadata_max_bytes
        exists = None if ctx.topics is None else ctx.topics.partition_exists
        records, group_id = [], req.group_id
        for p in req.partitions:
            topic, partition, metadata = p.topic, p.partition, p.metadata
            if refused and (topic, partition) in refused:
                results.append((topic, partition, refused[(topic, partition)]))
            # A character is at most 4 UTF-8 bytes: only a long text needs encoding to be measured.
            elif metadata and len(metadata) * 4 > max_metadata and len(metadata.encode("utf-8")) > max_metadata:
                results.append((topic, partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
            elif exists is not None and not exists(topic, partition):
                results.append((topic, partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                value = CommittedOffset(p.offset, p.leader_epoch, metadata or "", now, expire_ms)
                records.append(OffsetCommitRecord(group_id, topic, partition, value) if producer is None
                               else TxnOffsetCommitRecord(group_id, topic, partition, value, *producer))
                results.append((topic, partition, ErrorCode.NONE))
                committed.append((topic, partition))
        if records:
            ctx.write_all(records)
        if committed and producer is None:
            ctx.emit(K.OFFSETS_COMMITTED, group, member=member, count=len(committed), partitions=committed)
        return OffsetCommitResult(ErrorCode.NONE, results)

    # ============================================================= OffsetFetch
    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None,
                      member_id: str | None = None, member_epoch: int = -1,
                      require_stable: bool = False) -> tuple[ErrorCode, list[FetchedOffset]]:
        """Committed offsets; unknown groups/partitions give offset -1 without error, as Kafka does.
        A consumer group's member (OffsetFetch v9+) must name its current epoch. With
        `require_stable` (v7+), a partition with a transaction's offset pending answers
        UNSTABLE_OFFSET_COMMIT (asked for all, only the partitions with a committed offset are
        listed, as in Kafka)."""
        ctx = self.ctx
        if ctx.availability(group_id):
            return ctx.availability(group_id), []
        consumer_group, protocol = self._modern(group_id)
        if consumer_group is not None:
            error = protocol.validate_fetch(consumer_group, member_id, member_epoch)
            if error:
                return error, []
        group = ctx.groups.get(group_id)
        if group is not None and group.is_in(S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        unstable = ctx.pending.open.get(group_id) if require_stable else None
        if partitions is None:
            stored = ctx.offsets.all(group_id)
            return ErrorCode.NONE, [_unstable(t, p) if unstable and (t, p) in unstable
                                    else FetchedOffset(t, p, v.offset, v.leader_epoch, v.metadata)
                                    for (t, p), v in sorted(stored.items())]
        out = []
        for topic, partition in partitions:
            if unstable and (topic, partition) in unstable:
                out.append(_unstable(topic, partition))
                continue
            v = ctx.offsets.get(group_id, topic, partition)
            out.append(FetchedOffset(topic, partition, -1, -1, "") if v is None
                       else FetchedOffset(topic, partition, v.offset, v.leader_epoch, v.metadata))
        return ErrorCode.NONE, out

    # ============================================================ OffsetDelete
    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]],
                       subscribed_topics: Callable[[Group], set[str]] | None = None) -> OffsetDeleteResult:
        ctx = self.ctx
        group = ctx.groups.get(group_id)
        if group is None and group_id in ctx.consumer_groups:
            consumer_group = ctx.consumer_groups[group_id]
            subscribed = set() if consumer_group.is_empty() else set(consumer_group.subscribed_topics)
            return self._delete_unsubscribed(consumer_group, group_id, partitions, subscribed)
        if group is None and group_id in ctx.streams_groups:
            streams_group = ctx.streams_groups[group_id]
            return self._delete_unsubscribed(streams_group, group_id, partitions, streams_group.source_topics())
        if group is None or group.is_in(S.DEAD):
            return OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND)
        subscribed = set()
        if not group.is_in(S.EMPTY) and subscribed_topics is not None:
            subscribed = subscribed_topics(group)
        return self._delete_unsubscribed(group, group_id, partitions, subscribed)

    def _delete_unsubscribed(self, group, group_id: str, partitions: list[tuple[str, int]],
                             subscribed: set[str]) -> OffsetDeleteResult:
        """Kafka refuses to delete the offsets of a topic the group's members subscribe to."""
        ctx = self.ctx
        results = []
        deleted = []
        for topic, partition in partitions:
            if topic in subscribed:
                results.append((topic, partition, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
                continue
            # As Kafka: a partition with only a transaction's offset pending gets its tombstone too.
            if ((ctx.offsets.get(group_id, topic, partition) is not None or ctx.pending.has(group_id, topic, partition))
                    and (topic, partition) not in deleted):
                ctx.write(offset_tombstone(group_id, topic, partition))
                deleted.append((topic, partition))
            results.append((topic, partition, ErrorCode.NONE))
        if deleted:
            ctx.emit(K.OFFSETS_DELETED, group, count=len(deleted), partitions=deleted)
        return OffsetDeleteResult(ErrorCode.NONE, results)

    # =============================================================== retention
    def schedule_retention(self) -> None:
        self.ctx.schedule(_RETENTION_KEY, self.ctx.config.offsets_retention_check_interval_ms,
                          self._expire_offsets)

    def _expire_offsets(self) -> None:
        ctx = self.ctx
        now = ctx.now()
        # Groups with offsets, and Empty groups without any (Kafka drops those at this check too).
        candidates = dict.fromkeys(ctx.offsets.groups())
        candidates.update(dict.fromkeys(g.group_id for g in ctx.groups.values() if g.is_in(S.EMPTY)))
        for group_id in candidates:
            consumer_group = self._modern(group_id)[0]
            # As Kafka: an offset a transaction has one pending for does not expire yet, and a
            # group with such offsets stays.
            pending = ctx.pending.open.get(group_id)
            if consumer_group is not None:
                if consumer_group.is_empty():
                    # Offsets of an empty consumer group age from when it emptied; the group stays.
                    for topic, partition in ctx.offsets.expired(group_id, now, ctx.config.offsets_retention_ms,
                                                                consumer_group.emptied_at_ms):
                        if not pending or (topic, partition) not in pending:
                            ctx.write(offset_tombstone(group_id, topic, partition))
                continue
            group = ctx.groups.get(group_id)
            if group is not None and not group.is_in(S.EMPTY):
                continue  # offsets of an active group never expire here
            base = None if group is None or group.protocol_type is None else group.emptied_at_ms
            stored = ctx.offsets.all(group_id)
            expired = ctx.offsets.expired(group_id, now, ctx.config.offsets_retention_ms, base)
            if pending:
                expired = [key for key in expired if key not in pending]
            for topic, partition in expired:
                ctx.write(offset_tombstone(group_id, topic, partition))
            if expired and group is not None:
                ctx.emit(K.OFFSETS_EXPIRED, group, count=len(expired), partitions=expired)
            if group is not None and len(expired) == len(stored) and not pending:
                ctx.make_dead(group)
        self.schedule_retention()

    def load_offset(self, group_id: str, topic: str, partition: int, value: CommittedOffset) -> None:
        """Restore one committed offset; a simple group (offsets but no metadata) comes back Empty."""
        ctx = self.ctx
        ctx.offsets.commit(group_id, topic, partition, value)
        self.ensure_group(group_id, value.commit_ms)

    def ensure_group(self, group_id: str, since_ms: int) -> None:
        """A group offsets were loaded for without its metadata: a simple group, whose offsets
        age from their commit time (Kafka makes one for a transactional offset too)."""
        ctx = self.ctx
        if self._any_group(group_id) is None:
            ctx.groups[group_id] = Group(group_id, since_ms)
