"""The share coordinator: share-partition state durable in `__share_group_state`, one shard per
partition of that topic on the broker leading it (as kcoord.transaction.runtime holds the
transaction coordinators), as Kafka 4.3.1's ShareCoordinatorShard keeps it.

A share-partition (group, topic id, partition) belongs to partition
`abs(hash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions`, the topic
id as Kafka prints it. Its state is a ShareSnapshot (initialisation, then every
`share.coordinator.snapshot.update.records.per.snapshot` updates) followed by ShareUpdates
holding only the batches that changed; replaying the partition merges them (Kafka's
PersisterStateBatchCombiner: later batches win, nothing below the start offset is kept,
neighbours in one state and delivery count join). Once every share-partition of a shard has a
newer snapshot, the records before the oldest of them are deleted (Kafka's
ShareCoordinatorOffsetsManager; Kafka does it on a timer, kcoord at each snapshot).

A write returns once the record is in the partition (whose on_append makes it durable first),
so an acknowledgement is answered after its state is durable.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kcoord.coordinator.clock import Timer
from kcoord.coordinator.config import offsets_partition_for
from kcoord.coordinator.javaorder import kafka_uuid_string
from kcoord.coordinator.shards import Shard, ShardedRuntime, ShardState
from kcoord.log.partition import AppendError
from kcoord.share import records as SR
from wire import records as R
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.share")

TOPIC = "__share_group_state"
# As Kafka's ShareCoordinatorService creates the topic (min.insync.replicas and segment.bytes
# from share.coordinator.state.topic.*, set by the app).
TOPIC_CONFIGS = {"cleanup.policy": "delete", "compression.type": "producer", "retention.ms": "-1"}


def combine(current: list[SR.StateBatch], new: list[SR.StateBatch], start_offset: int) -> list[SR.StateBatch]:
    """`new` over `current` (later wins), nothing below `start_offset`, neighbours alike joined."""
    runs: list[list] = []     # [first, last, state, count], sorted, disjoint
    for b in list(current) + list(new):
        kept = []
        for r in runs:
            if r[1] < b.first_offset or r[0] > b.last_offset:
                kept.append(r)
                continue
            if r[0] < b.first_offset:
                kept.append([r[0], b.first_offset - 1, r[2], r[3]])
            if r[1] > b.last_offset:
                kept.append([b.last_offset + 1, r[1], r[2], r[3]])
        kept.append([b.first_offset, b.last_offset, b.delivery_state, b.delivery_count])
        runs = sorted(kept)
    out: list[SR.StateBatch] = []
    for first, last, state, count in runs:
        if last < start_offset:
            continue
        first = max(first, start_offset)
        prev = out[-1] if out else None
        if prev and prev.last_offset + 1 == first and (prev.delivery_state, prev.delivery_count) == (state, count):
            out[-1] = SR.StateBatch(prev.first_offset, last, state, count)
        else:
            out.append(SR.StateBatch(first, last, state, count))
    return out


@dataclass
class _Held:
    state: SR.ShareState
    updates: int = 0              # ShareUpdates since its last snapshot
    snapshot_offset: int = 0      # where its last snapshot is in the partition


@dataclass
class ShareStateShard:
    """The share-partition states of one `__share_group_state` partition."""
    index: int
    held: dict[SR.ShareKey, _Held] = field(default_factory=dict)

    def replay(self, offset: int, record_type: int, key: SR.ShareKey, value: SR.ShareState | None,
               per_snapshot: int) -> None:
        if value is None:
            self.held.pop(key, None)
            return
        held = self.held.get(key)
        if record_type == SR.SNAPSHOT:
            updates = 0 if held is None or held.updates >= per_snapshot else held.updates
            self.held[key] = _Held(value, updates, offset)
            return
        if held is None:
            self.held[key] = _Held(value, 1, offset)
            return
        s = held.state
        start = s.start_offset if value.start_offset == -1 else value.start_offset
        held.state = SR.ShareState(s.snapshot_epoch, s.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
                                   start, combine(s.batches, value.batches, start), s.state_epoch,
                                   value.delivery_complete_count, s.create_timestamp, s.write_timestamp)
        held.updates += 1


class ShareStateRuntime(ShardedRuntime):
    topic_name = TOPIC
    holds = "share-partition states"
    load_key_prefix = "share"

    def __init__(self, timer: Timer, topics, partitions: int, per_snapshot: int = 500, load_ms: int = 0):
        super().__init__(timer, topics, load_ms, partitions)
        self.per_snapshot = per_snapshot      # share.coordinator.snapshot.update.records.per.snapshot

    # ------------------------------------------------------------ placement
    def partition_for(self, key: SR.ShareKey) -> int:
        return offsets_partition_for(f"{key.group_id}:{kafka_uuid_string(key.topic_id)}:{key.partition}",
                                     self.partition_count())

    def shard_for(self, key: SR.ShareKey) -> tuple[ErrorCode, ShareStateShard | None]:
        """The loaded shard holding `key`'s state: the share coordinator the partition leaders
        call (Kafka's persister finds it wherever it is). A partition nobody holds yet starts on
        its leader; while it loads, COORDINATOR_LOAD_IN_PROGRESS."""
        index = self.partition_for(key)
        shard = self.shards.get(index)
        if shard is None:
            self.ensure_topic()
            partition = self.topics.partition(TOPIC, index)
            if partition is None or not self._leader_running(partition):
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
            shard = self._load_now(index, partition.leader, partition.leader_epoch)
        if shard.state is ShardState.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        return ErrorCode.NONE, shard.coordinator

    # ------------------------------------------------------------ loading
    def _build(self, shard: Shard) -> ShareStateShard:
        state = ShareStateShard(shard.partition)
        for record in self.keyed_records(shard.partition):
            try:
                record_type, key = SR.decode_key(record.key)
                value = None if record.value is None else SR.decode_value(record_type, record.value)
            except SR.ShareRecordError as err:
                log.warning("skipping an unreadable record at %s-%d offset %d: %s", TOPIC, shard.partition,
                            record.offset, err)
                continue
            state.replay(record.offset, record_type, key, value, self.per_snapshot)
        return state

    # ------------------------------------------------------------ the persister's calls
    def read(self, key: SR.ShareKey) -> tuple[ErrorCode, SR.ShareState | None]:
        error, shard = self.shard_for(key)
        if shard is None:
            return error, None
        held = shard.held.get(key)
        return ErrorCode.NONE, None if held is None else held.state

    def initialize(self, key: SR.ShareKey, start_offset: int, state_epoch: int = 0) -> ErrorCode:
        """A share-partition's first state (InitializeShareGroupState): a snapshot."""
        error, shard = self.shard_for(key)
        if shard is None:
            return error
        held = shard.held.get(key)
        now = self.timer.now_ms()
        epoch = 0 if held is None else held.state.snapshot_epoch + 1
        # As Kafka's ShareGroupOffset.fromRequest: leader epoch 0; a known start offset (an altered
        # one) has its delivery-complete count at 0, so that its lag can be told.
        return self._append(shard, SR.SNAPSHOT, key, SR.ShareState(epoch, 0, start_offset, [], state_epoch,
                                                                   -1 if start_offset < 0 else 0, now, now))

    def write(self, key: SR.ShareKey, leader_epoch: int, start_offset: int, batches: list[SR.StateBatch],
              delivery_complete_count: int = -1) -> ErrorCode:
        """WriteShareGroupState: an update of the batches that changed, or a snapshot of the whole
        state once enough updates followed the last one."""
        error, shard = self.shard_for(key)
        if shard is None:
            return error
        held = shard.held.get(key)
        if held is None:
            error = self.initialize(key, start_offset)
            if error != ErrorCode.NONE:
                return error
            held = shard.held[key]
        current = held.state
        epoch = current.leader_epoch if leader_epoch == -1 else leader_epoch
        if held.updates >= self.per_snapshot:
            start = current.start_offset if start_offset == -1 else start_offset
            now = self.timer.now_ms()
            value = SR.ShareState(current.snapshot_epoch + 1, epoch, start, combine(current.batches, batches, start),
                                  current.state_epoch, delivery_complete_count, now, now)
            return self._append(shard, SR.SNAPSHOT, key, value)
        value = SR.ShareState(current.snapshot_epoch, epoch, start_offset, combine([], batches, -1),
                              delivery_complete_count=delivery_complete_count)
        return self._append(shard, SR.UPDATE, key, value)

    def delete(self, key: SR.ShareKey) -> ErrorCode:
        error, shard = self.shard_for(key)
        if shard is None:
            return error
        if key not in shard.held:
            return ErrorCode.NONE
        return self._append(shard, SR.SNAPSHOT, key, None)

    def _append(self, shard: ShareStateShard, record_type: int, key: SR.ShareKey,
                value: SR.ShareState | None) -> ErrorCode:
        partition = self.topics.partition(TOPIC, shard.index)
        offset = partition.high_watermark
        record = (SR.key_bytes(record_type, key), None if value is None else SR.value_bytes(record_type, value),
                  self.timer.now_ms())
        try:
            partition.append(R.build_batch([record], offset, partition_leader_epoch=partition.leader_epoch))
        except AppendError as err:
            log.warning("writing share state of %s to %s-%d failed: %s", key, TOPIC, shard.index, err)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        shard.replay(offset, record_type, key, value, self.per_snapshot)
        if record_type == SR.SNAPSHOT:
            self._prune(shard, partition)
        return ErrorCode.NONE

    def _prune(self, shard: ShareStateShard, partition) -> None:
        """Records older than every held state's last snapshot are redundant."""
        oldest = min((h.snapshot_offset for h in shard.held.values()), default=partition.high_watermark)
        if oldest > partition.log_start_offset:
            partition.delete_records(oldest)

    # ------------------------------------------------------------ for describe/admin
    def states(self, group_id: str) -> dict[SR.ShareKey, SR.ShareState]:
        return {k: h.state for s in self.shards.values() if s.state is ShardState.ACTIVE
                for k, h in s.coordinator.held.items() if k.group_id == group_id}

