"""The transaction coordinators of a kcoord: one per `__transaction_state` partition, held by the
broker leading it, loaded and unloaded as leadership moves (as kcoord.coordinator.runtime does
for groups, and Kafka's TransactionStateManager for transactions).

A transactional id belongs to partition `abs(transactionalId.hashCode()) %
transaction.state.log.num.partitions`; the coordinator epoch Kafka stamps on markers is that
partition's leader epoch when its broker took it. A request for an id on a broker not leading
its partition gets NOT_COORDINATOR; while the new leader loads, COORDINATOR_LOAD_IN_PROGRESS.

Markers go to every partition of an ending transaction through `Partition.write_marker`, and
to `__consumer_offsets` partitions through the group runtime's `complete_transaction`, which
also settles the group's pending transactional offsets.
"""
from __future__ import annotations

import logging
import re
from typing import Callable, Iterable

from kcoord.coordinator.clock import Timer
from kcoord.coordinator.config import offsets_partition_for
from kcoord.coordinator.events import EventKind, GroupEvent
from kcoord.coordinator.shards import NO_NODE, Shard, ShardedRuntime, ShardState
from kcoord.log.partition import AppendError
from kcoord.transaction import records as txn_records
from kcoord.transaction.coordinator import TransactionCoordinator, TxnConfig
from kcoord.transaction.state import TransactionMetadata
from wire import records as R
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.transaction")

TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
# As Kafka creates the topic (min.insync.replicas is transaction.state.log.min.isr, set by the app).
TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": "104857600",
                 "unclean.leader.election.enable": "false"}
# A partition is compacted in memory once it holds this many records more than after its last
# compaction (every transaction writes three or four).
COMPACT_EVERY_RECORDS = 20000


class ProducerIds:
    """Producer ids for idempotent and transactional producers, never handed out twice: after a
    restart the next one is above every id the log and __transaction_state hold."""

    def __init__(self, first: int = 1000):
        self._next = first

    def next(self) -> int:
        value = self._next
        self._next += 1
        return value

    def observe(self, producer_id: int) -> None:
        if producer_id >= self._next:
            self._next = producer_id + 1


class TransactionRuntime(ShardedRuntime):
    topic_name = TOPIC
    holds = "transactions"
    load_key_prefix = "txn"

    def __init__(self, timer: Timer, topics, config: TxnConfig, partitions: int, bus=None,
                 load_ms: int = 0, transaction_version: Callable[[], int] = lambda: 2):
        super().__init__(timer, topics, load_ms, partitions)
        self.config = config
        self.bus = bus
        self.transaction_version = transaction_version   # the finalized transaction.version
        self.producer_ids = ProducerIds()
        self.groups = None            # kcoord.coordinator.runtime.CoordinatorRuntime, set by the app
        self._compacted: dict[int, int] = {}   # partition -> records it held after its last compaction
        self._ticking = False

    # ------------------------------------------------------------ placement
    def partition_for(self, transactional_id: str) -> int:
        return offsets_partition_for(transactional_id, self.partition_count())

    def find(self, transactional_id: str) -> tuple[ErrorCode, int]:
        """FindCoordinator for a transactional id: the leader of its partition."""
        self.ensure_topic()
        partition = self.topics.partition(TOPIC, self.partition_for(transactional_id))
        if partition is None or partition.leader == NO_NODE:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
        return ErrorCode.NONE, partition.leader

    def coordinator_for(self, transactional_id: str, node: int | None) -> tuple[ErrorCode, TransactionCoordinator | None]:
        """The coordinator answering for `transactional_id` on broker `node` (None: wherever it is
        held, as the partition leaders' inter-broker calls reach it)."""
        index = self.partition_for(transactional_id)
        shard = self.shards.get(index)
        if shard is None and node is not None:
            # A partition nobody coordinates yet (the topic was just created) starts on its
            # leader when a request reaches it. A partition leader's inter-broker call (node
            # None) starts nothing: a killed coordinator's partition waits for its next leader.
            self.ensure_topic()
            partition = self.topics.partition(TOPIC, index)
            if partition is not None and partition.leader == node:
                shard = self._load_now(index, partition.leader, partition.leader_epoch)
        if shard is None or (node is not None and shard.node != node):
            return ErrorCode.NOT_COORDINATOR, None
        if shard.state is ShardState.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        return ErrorCode.NONE, shard.coordinator

    # ------------------------------------------------------ loading, unloading
    def _build(self, shard: Shard) -> TransactionCoordinator:
        coordinator = TransactionCoordinator(
            shard.partition, shard.epoch, self.timer.now_ms, self.config, self.producer_ids.next,
            write=lambda meta, index=shard.partition: self._write(index, meta),
            write_markers=lambda meta, commit, epoch, coordinator_epoch=shard.epoch:
                self.write_markers(meta.producer_id, epoch, coordinator_epoch, commit, meta.partitions),
            server_version=self.transaction_version, on_event=self._event,
            remove=lambda transactional_id, index=shard.partition: self._tombstone(index, transactional_id))
        metas = self._read(shard.partition)
        for meta in metas:
            for pid in (meta.producer_id, meta.prev_producer_id, meta.next_producer_id):
                self.producer_ids.observe(pid)
        coordinator.replay(metas)
        return coordinator

    def _loaded(self, shard: Shard) -> None:
        # Kafka's load: a transaction found in a Prepare state gets its markers and completes.
        shard.coordinator.finish_loaded()
        self._tick_soon()

    def observe_log(self) -> None:
        """After a restart: no producer id the partitions' producer states hold is handed out again."""
        for topic in list(self.topics.topics.values()):
            for partition in topic.partitions:
                for entry in partition.producers():
                    self.producer_ids.observe(entry[0])

    # ------------------------------------------------------------ the log
    def _read(self, index: int) -> list[TransactionMetadata]:
        latest: dict[str, TransactionMetadata | None] = {}
        for record in self.keyed_records(index):
            try:
                txn_id = txn_records.decode_key(record.key)
                latest[txn_id] = (None if record.value is None
                                  else txn_records.decode_value(txn_id, record.value)[1])
            except txn_records.TransactionRecordError as err:
                log.warning("skipping an unreadable record at %s-%d offset %d: %s", TOPIC, index,
                            record.offset, err)
        return [m for m in latest.values() if m is not None]

    def _write(self, index: int, meta: TransactionMetadata) -> None:
        """The record of `meta`, durable before it is held (an OSError: nothing written)."""
        version = 1 if self.transaction_version() >= 1 else 0
        self._append(index, txn_records.key_bytes(meta.transactional_id), txn_records.value_bytes(meta, version))

    def _tombstone(self, index: int, transactional_id: str) -> None:
        self._append(index, txn_records.key_bytes(transactional_id), None)

    def _append(self, index: int, key: bytes, value: bytes | None) -> None:
        partition = self.topics.partition(TOPIC, index)
        record = (key, value, self.timer.now_ms())
        data = R.build_batch([record], partition.high_watermark, partition_leader_epoch=partition.leader_epoch)
        try:
            partition.append(data)
        except AppendError as err:
            raise OSError(str(err)) from None
        self._maybe_compact(partition)

    def _maybe_compact(self, partition) -> None:
        held = partition.high_watermark - partition.log_start_offset
        if held - self._compacted.get(partition.index, 0) < COMPACT_EVERY_RECORDS:
            return
        latest: dict[bytes, tuple] = {}
        for stored in partition.batches:
            for record in R.decode_records(R.parse_batch(stored.data, validate_crc=False)):
                latest.pop(record.key, None)
                latest[record.key] = (record.key, record.value, record.timestamp, record.offset)
        partition.replace_batches([R.build_batch([(k, v, ts)], offset, partition_leader_epoch=partition.leader_epoch)
                                   for k, v, ts, offset in latest.values()])
        self._compacted[partition.index] = len(latest)

    def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                      partitions: Iterable[tuple[str, int]]) -> set:
        """The markers of a transaction's end; returns the partitions that could not take theirs
        now (no leader: retried). A partition that no longer exists needs none, as in Kafka."""
        now = self.timer.now_ms()
        failed = set()
        for topic, index in partitions:
            partition = self.topics.partition(topic, index)
            if partition is None:
                continue
            if not self._leader_running(partition):
                # Kafka's marker channel retries until the partition has a live leader again.
                failed.add((topic, index))
                continue
            try:
                if topic == OFFSETS_TOPIC and self.groups is not None:
                    self.groups.complete_transaction(index, producer_id, producer_epoch, coordinator_epoch,
                                                     commit, now)
                else:
                    partition.write_marker(producer_id, producer_epoch, coordinator_epoch, commit, now)
            except AppendError as err:
                if err.code_name == "KAFKA_STORAGE_ERROR":
                    failed.add((topic, index))
                else:
                    log.warning("the marker of producer %d in %s-%d was refused: %s", producer_id, topic, index, err)
        self.topics.notify_appended()
        return failed

    # ------------------------------------------------------------ timers
    def _tick_soon(self) -> None:
        if not self._ticking:
            self._ticking = True
            self.timer.schedule("txn-abort-timed-out", self.config.abort_interval_ms, self._tick)
            self.timer.schedule("txn-marker-retry", self.config.marker_retry_ms, self._retry)
            self.timer.schedule("txn-expire-ids", self.config.expiration_interval_ms, self._expire)

    def _expire(self) -> None:
        for shard in list(self.shards.values()):
            if shard.state is ShardState.ACTIVE:
                shard.coordinator.expire_ids()
        self.timer.schedule("txn-expire-ids", self.config.expiration_interval_ms, self._expire)

    def _tick(self) -> None:
        for shard in list(self.shards.values()):
            if shard.state is ShardState.ACTIVE:
                shard.coordinator.abort_timed_out()
        self.timer.schedule("txn-abort-timed-out", self.config.abort_interval_ms, self._tick)

    def _retry(self) -> None:
        for shard in list(self.shards.values()):
            if shard.state is ShardState.ACTIVE and shard.coordinator.pending_markers:
                shard.coordinator.retry_markers()
        self.timer.schedule("txn-marker-retry", self.config.marker_retry_ms, self._retry)

    def _event(self, kind: str, transactional_id: str, **details) -> None:
        if self.bus is None:
            return
        self.bus.publish(GroupEvent(EventKind(kind), self.timer.now_ms(), "", details.get("producer_epoch", -1),
                                    "", "", details=details, transactional_id=transactional_id))

    # ----------------------------------------------------- every partition's view
    def active(self) -> list[TransactionCoordinator]:
        return [s.coordinator for s in self.shards.values() if s.state is ShardState.ACTIVE]

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        shard = self.shards.get(self.partition_for(transactional_id))
        if shard is None or shard.state is not ShardState.ACTIVE:
            return None
        return shard.coordinator.txns.get(transactional_id)

    def list(self, node: int, producer_ids: set, states: set, min_duration_ms: int,
             regex: re.Pattern | None) -> tuple[ErrorCode, list[dict]]:
        mine = [s for s in self.shards.values() if s.node == node]
        if any(s.state is ShardState.LOADING for s in mine):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
        return ErrorCode.NONE, [row for s in mine for row in s.coordinator.list(producer_ids, states,
                                                                                 min_duration_ms, regex)]


class BrokerTransactions:
    """What one broker's handlers see of the transaction coordinator (`ctx.broker.transactions`)."""

    __slots__ = ("runtime", "node_id")

    def __init__(self, runtime: TransactionRuntime, node_id: int):
        self.runtime = runtime
        self.node_id = node_id

    @property
    def producer_ids(self) -> ProducerIds:
        return self.runtime.producer_ids

    def find(self, transactional_id: str) -> tuple[ErrorCode, int]:
        return self.runtime.find(transactional_id)

    def for_id(self, transactional_id: str) -> tuple[ErrorCode, TransactionCoordinator | None]:
        return self.runtime.coordinator_for(transactional_id, self.node_id)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: list[tuple[str, int]], add: bool, generic_errors: bool) -> dict:
        """What a partition leader learns from the transaction coordinator before it appends a
        transaction's first batch (KIP-890): per partition, NONE or the error the producer gets,
        mapped as Kafka's AddPartitionsToTxnManager maps the coordinator's answer."""
        error, coordinator = self.runtime.coordinator_for(transactional_id, None)
        if coordinator is None:
            return {p: ErrorCode.COORDINATOR_NOT_AVAILABLE if error == ErrorCode.NOT_COORDINATOR else error
                    for p in partitions}
        if add:
            code = coordinator.add_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                              client_version=2)
            answers = {p: code for p in partitions}
        else:
            answers = coordinator.verify(transactional_id, producer_id, producer_epoch, partitions)
        out = {}
        for p, code in answers.items():
            if code == ErrorCode.PRODUCER_FENCED:
                code = ErrorCode.INVALID_PRODUCER_EPOCH
            elif code == ErrorCode.TRANSACTION_ABORTABLE and not generic_errors:
                code = ErrorCode.INVALID_TXN_STATE
            out[p] = code
        return out

    def verify_or_add(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      partitions: list[tuple[str, int]], add: bool, generic_errors: bool = True) -> ErrorCode:
        """verify_partitions' first error (NONE if every partition may take the batch)."""
        answers = self.verify_partitions(transactional_id, producer_id, producer_epoch, partitions, add,
                                         generic_errors)
        return next((code for code in answers.values() if code != ErrorCode.NONE), ErrorCode.NONE)

    def list(self, producer_ids: set, states: set, min_duration_ms: int, regex) -> tuple[ErrorCode, list[dict]]:
        return self.runtime.list(self.node_id, producer_ids, states, min_duration_ms, regex)
