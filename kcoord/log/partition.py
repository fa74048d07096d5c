"""One partition's log: record batches (v2) held in memory, offsets assigned on append.

Beside the batches a partition keeps what Kafka's ProducerStateManager and transaction index
keep: each producer's epoch and latest batches (to deduplicate an idempotent producer's
retries), the transactions open in it (which hold the last stable offset back), and the
aborted ones, which a read_committed Fetch lists so the consumer drops their records."""
from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass, field
from typing import NamedTuple

from wire import records as R


class AppendError(Exception):
    def __init__(self, code_name: str, message: str):
        self.code_name = code_name  # an ErrorCode member name
        super().__init__(message)


class StoredBatch(NamedTuple):
    # A tuple, not a dataclass: a partition holds tens of thousands of these between two
    # compactions (one per OffsetCommit in __consumer_offsets), and the cyclic GC stops
    # tracking a tuple of ints and bytes, where it walks every object on each full collection.
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


# How many of a producer's latest batches a partition remembers, to answer a retried one with
# its first answer (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN).
BATCHES_REMEMBERED = 5
_SEQUENCE_MASK = 0x7FFFFFFF  # sequences wrap at Integer.MAX_VALUE


@dataclass(frozen=True)
class _BatchSeen:
    first_sequence: int
    last_sequence: int
    base_offset: int
    max_timestamp: int


@dataclass
class _ProducerState:
    """A producer's state on one partition (Kafka's ProducerStateEntry); whether it has a
    transaction open here is the partition's `_open`."""
    epoch: int
    batches: collections.deque = field(default_factory=lambda: collections.deque(maxlen=BATCHES_REMEMBERED))
    last_timestamp: int = -1
    coordinator_epoch: int = -1     # of the last marker written for it here

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    def take_epoch(self, epoch: int) -> None:
        # A new epoch starts its sequences afresh (Kafka's maybeUpdateProducerEpoch).
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()

    def duplicate_of(self, first_sequence: int, last_sequence: int) -> _BatchSeen | None:
        return next((b for b in self.batches
                     if (b.first_sequence, b.last_sequence) == (first_sequence, last_sequence)), None)


def _last_sequence(b) -> int:
    return (b.base_sequence + b.last_offset_delta) & _SEQUENCE_MASK if b.base_sequence >= 0 else -1


_CONTROL = 0x20        # RecordBatch attribute bits
_TRANSACTIONAL = 0x10


class _AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int    # the abort marker's offset


class Partition:
    def __init__(self, index: int, leader: int = 0):
        self.index = index
        # Who holds it, who is in sync, who leads (kcoord.cluster moves these; every replica
        # shares this one log, so a follower is always caught up).
        self.replicas: list[int] = [leader]
        self.isr: list[int] = [leader]
        self.leader = leader
        # A reassignment in progress (kcoord.cluster): the replicas being added (in `replicas`,
        # not yet caught up) and being removed (still in `replicas` until the adding ones are in
        # sync); the bytes copied so far by each replica that catches up (out of the ISR).
        # Restored ones start over: progress is not kept.
        self.adding: list[int] = []
        self.removing: list[int] = []
        self.copied: dict[int, int] = {}
        self.leader_epoch = 0
        # (epoch, the offset its first record got or will get), oldest first: Kafka's leader
        # epoch cache, which OffsetForLeaderEpoch reads.
        self.epochs: list[tuple[int, int]] = [(0, 0)]
        self.log_start_offset = 0
        self.high_watermark = 0          # the offset the next record will get
        self.batches: list[StoredBatch] = []
        self._last_offsets: list[int] = []  # parallel to batches, for bisect
        # producer id -> its epoch and latest batches, for idempotent producers
        self._producers: dict[int, _ProducerState] = {}
        # producer id -> the first offset of its transaction open here
        self._open: dict[int, int] = {}
        # Aborted transactions in the order of their markers, so by last offset (Kafka's
        # transaction index); `_aborted_last` is parallel to it, for bisect.
        self._aborted: list[_AbortedTxn] = []
        self._aborted_last: list[int] = []
        # Told of every batch stored, offsets assigned, before the producer hears back (durable state).
        self.on_append = None
        # Told of a new log start offset before it takes effect (durable state).
        self.on_log_start = None

    def append(self, blob: bytes) -> int:
        """Append every batch in `blob`; returns the base offset of the first. A retry of one of
        an idempotent producer's latest batches is not appended again: its first base offset
        is the answer, as Kafka gives it."""
        try:
            batches = list(R.iter_batches(blob))
        except R.RecordsError as err:
            # Produce v3+ must carry magic v2 batches: Kafka answers INVALID_RECORD
            # for older message formats and CORRUPT_MESSAGE for a bad CRC or size.
            code = "INVALID_RECORD" if isinstance(err, R.UnsupportedMagicError) else "CORRUPT_MESSAGE"
            raise AppendError(code, str(err)) from None
        if not batches:
            raise AppendError("INVALID_RECORD", "produce request carried no record batch")
        if len(batches) == 1:
            seen = self._duplicate(batches[0])
            if seen is not None:
                return seen.base_offset
        # producer id -> (epoch, last sequence, in a transaction) after its batches so far in this request
        earlier: dict[int, tuple[int, int, bool]] = {}
        for b in batches:
            if b.attributes & _CONTROL:
                # Only a transaction coordinator writes markers (LogValidator refuses them from clients).
                raise AppendError("INVALID_RECORD", "Clients are not allowed to write control records")
            if b.producer_id >= 0:
                earlier[b.producer_id] = self._check_producer(b, earlier.get(b.producer_id))
        first = base = self.high_watermark
        stored = []
        for b in batches:
            # Stamped with the leader epoch, as Kafka does: a consumer commits the epoch of the
            # last record it read and later validates its position with OffsetForLeaderEpoch.
            data = R.rewrite_leader_epoch(R.rewrite_base_offset(b.raw, base), self.leader_epoch)
            stored.append(StoredBatch(base, base + b.last_offset_delta, b.max_timestamp, data))
            base += b.last_offset_delta + 1
        self._write_through(stored)
        for kept, b in zip(stored, batches):
            self._keep(kept, b)
        return first

    def restore(self, data: bytes) -> None:
        """Put back a batch stored before a restart, at the offsets it was given (records
        deleted before it may leave a gap at the start). Its producer's state comes back with
        it, as Kafka rebuilds it by reading the log: epochs, sequences, the transactions a
        transactional batch opened and a marker ended, the aborted ones."""
        b = R.parse_batch(data)
        stored = StoredBatch(b.base_offset, b.base_offset + b.last_offset_delta, b.max_timestamp, data)
        if not b.attributes & _CONTROL:
            self._keep(stored, b)
            return
        self._store(stored)
        try:
            commit, coordinator_epoch = R.parse_marker(b)
        except R.RecordsError:
            return  # an empty control batch (Kafka's cleaner leaves them) ends nothing
        self._end_transaction(b.producer_id, b.producer_epoch, coordinator_epoch, commit,
                              stored.base_offset, stored.max_timestamp)

    def put_built(self, data: bytes, count: int, max_timestamp: int, producer_id: int = -1,
                  producer_epoch: int = -1, transactional: bool = False) -> None:
        """Take a batch of `count` records that its builder made at this partition's log end
        (the coordinator's own records): nothing to parse or check, the builder has checked
        its producer's epoch. A transactional one opens its producer's transaction here, as
        `append` does."""
        base = self.high_watermark
        stored = StoredBatch(base, base + count - 1, max_timestamp, data)
        self.batches.append(stored)
        self._last_offsets.append(stored.last_offset)
        self.high_watermark = stored.last_offset + 1
        if producer_id >= 0:
            self._track(producer_id, producer_epoch, -1, -1, stored, transactional)

    def write_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                     timestamp_ms: int) -> int:
        """Write the marker that commits or aborts producer `producer_id`'s transaction here
        (a control batch at the log end, durable first) and end that transaction; returns the
        marker's offset. The marker's epoch becomes the producer's: under transaction version
        2 it is the bumped one, whose first batch starts at sequence 0. A marker for a producer
        with no transaction open here is written all the same, as Kafka writes it; it ends
        nothing. The caller then calls its TopicStore's `notify_appended()`: the last stable
        offset may have moved, and parked read_committed fetches wait for that.

        AppendError: INVALID_PRODUCER_EPOCH for an epoch older than the producer's,
        TRANSACTION_COORDINATOR_FENCED for a coordinator epoch older than the one of the
        producer's last marker here (Kafka's ProducerAppendInfo checks), KAFKA_STORAGE_ERROR
        when the data dir refused it."""
        state = self._producers.get(producer_id)
        if state is not None:
            if producer_epoch < state.epoch:
                raise AppendError("INVALID_PRODUCER_EPOCH",
                                  f"marker epoch {producer_epoch} of producer {producer_id} is older than {state.epoch}")
            if coordinator_epoch < state.coordinator_epoch:
                raise AppendError("TRANSACTION_COORDINATOR_FENCED",
                                  f"marker of producer {producer_id} from coordinator epoch {coordinator_epoch}, "
                                  f"older than {state.coordinator_epoch}")
        offset = self.high_watermark
        data = R.build_marker_batch(producer_id, producer_epoch, coordinator_epoch, commit, offset, timestamp_ms,
                                    self.leader_epoch)
        stored = StoredBatch(offset, offset, timestamp_ms, data)
        self._write_through([stored])
        self._store(stored)
        self._end_transaction(producer_id, producer_epoch, coordinator_epoch, commit, offset, timestamp_ms)
        return offset

    def _write_through(self, stored: list[StoredBatch]) -> None:
        if self.on_append is not None:
            # Durable first: a batch the disk refused is neither readable nor acknowledged.
            try:
                self.on_append(stored)
            except OSError as err:
                raise AppendError("KAFKA_STORAGE_ERROR", f"writing the batch to the data dir failed: {err}") from None

    def _end_transaction(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                         offset: int, timestamp: int) -> None:
        first = self._open.pop(producer_id, None)
        if first is not None and not commit:
            self._aborted.append(_AbortedTxn(producer_id, first, offset))
            self._aborted_last.append(offset)
        state = self._producers.get(producer_id)
        if state is None:
            state = self._producers[producer_id] = _ProducerState(producer_epoch)
        state.take_epoch(producer_epoch)
        state.coordinator_epoch = coordinator_epoch
        state.last_timestamp = timestamp

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest transaction open here (not below the log start),
        else the high watermark: a read_committed consumer reads no further."""
        if not self._open:
            return self.high_watermark
        return min(max(min(self._open.values()), self.log_start_offset), self.high_watermark)

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> the first offset of its transaction open here."""
        return dict(self._open)

    def aborted_transactions(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of each aborted transaction with a record in
        [start, end), in the order of their markers: what Fetch lists for that range."""
        i = bisect.bisect_left(self._aborted_last, start)
        return [(t.producer_id, t.first_offset) for t in self._aborted[i:] if t.first_offset < end]

    def replace_batches(self, batches: list[bytes]) -> None:
        """Compaction: the partition holds `batches` (at their own offsets, in order) instead;
        the log end stays where it was."""
        end = self.high_watermark
        self.batches, self._last_offsets = [], []
        for data in batches:
            b = R.parse_batch(data)
            last = b.base_offset + b.last_offset_delta
            self.batches.append(StoredBatch(b.base_offset, last, b.max_timestamp, data))
            self._last_offsets.append(last)
        self.high_watermark = end

    def restore_log_start(self, start: int) -> None:
        """Put back the log start offset after the batches; every record may have been deleted."""
        if start > self.log_start_offset:
            self.high_watermark = max(self.high_watermark, start)
            self.delete_records(start)

    def _store(self, stored: StoredBatch) -> None:
        self.batches.append(stored)
        self._last_offsets.append(stored.last_offset)
        self.high_watermark = stored.last_offset + 1

    def _keep(self, stored: StoredBatch, b) -> None:
        self._store(stored)
        if b.producer_id >= 0:
            self._track(b.producer_id, b.producer_epoch, b.base_sequence, _last_sequence(b), stored,
                        bool(b.attributes & _TRANSACTIONAL))

    def _track(self, producer_id: int, epoch: int, first_sequence: int, last_sequence: int,
               stored: StoredBatch, transactional: bool) -> None:
        """A data batch of a producer was stored (Kafka's ProducerAppendInfo.appendDataBatch)."""
        state = self._producers.get(producer_id)
        if state is None:
            state = self._producers[producer_id] = _ProducerState(epoch)
        state.take_epoch(epoch)
        if first_sequence >= 0:
            state.batches.append(_BatchSeen(first_sequence, last_sequence, stored.base_offset, stored.max_timestamp))
        state.last_timestamp = stored.max_timestamp
        if transactional and producer_id not in self._open:
            self._open[producer_id] = stored.base_offset

    def _duplicate(self, b) -> _BatchSeen | None:
        """The earlier append of `b`, when it is a retry of one of its producer's latest batches."""
        if b.producer_id < 0 or b.base_sequence < 0:
            return None
        state = self._producers.get(b.producer_id)
        if state is None or state.epoch != b.producer_epoch:
            return None
        return state.duplicate_of(b.base_sequence, _last_sequence(b))

    def _check_producer(self, b, earlier: tuple[int, int, bool] | None) -> tuple[int, int, bool]:
        """Kafka's ProducerAppendInfo checks of a client's batch, against its producer's state
        here or (`earlier`) after its batch before this one in the same request: no older
        epoch; a producer this partition never saw may start at any sequence (its earlier
        batches may be gone); a new epoch starts at 0; within an epoch each batch follows the
        last; while its transaction is open, only transactional batches. Returns the state
        after `b`: (epoch, last sequence, in a transaction)."""
        transactional = bool(b.attributes & _TRANSACTIONAL)
        if earlier is not None:
            epoch, last_sequence, in_txn = earlier
        else:
            state = self._producers.get(b.producer_id)
            in_txn = b.producer_id in self._open
            if state is None:
                return b.producer_epoch, _last_sequence(b), in_txn or transactional
            epoch, last_sequence = state.epoch, state.last_sequence
        if b.producer_epoch < epoch:
            raise AppendError("INVALID_PRODUCER_EPOCH",
                              f"producer {b.producer_id} epoch {b.producer_epoch} is older than {epoch}")
        if b.base_sequence >= 0:
            if b.producer_epoch > epoch:
                if b.base_sequence != 0:
                    raise AppendError("OUT_OF_ORDER_SEQUENCE_NUMBER",
                                      f"producer {b.producer_id} starts epoch {b.producer_epoch} at sequence "
                                      f"{b.base_sequence}, not 0")
            else:
                expected = (last_sequence + 1) & _SEQUENCE_MASK
                if b.base_sequence != expected:
                    raise AppendError("OUT_OF_ORDER_SEQUENCE_NUMBER",
                                      f"expected sequence {expected} from producer {b.producer_id}, "
                                      f"got {b.base_sequence}")
        if in_txn and not transactional:
            raise AppendError("INVALID_TXN_STATE",
                              f"expected a transactional batch from producer {b.producer_id}: "
                              f"its transaction is open in this partition")
        return b.producer_epoch, _last_sequence(b), in_txn or transactional

    def set_leader(self, leader: int) -> None:
        """A new leader (NO_LEADER: none) in a new epoch, which starts at the log end. Epochs that
        got no record are forgotten, as Kafka's cache drops an entry a later one starts at."""
        self.leader = leader
        self.leader_epoch += 1
        while self.epochs and self.epochs[-1][1] >= self.high_watermark:
            self.epochs.pop()
        self.epochs.append((self.leader_epoch, self.high_watermark))

    def restore_leadership(self, leader: int, epoch: int, isr: list[int], epochs: list) -> None:
        """Put back the leader, epoch, ISR and epoch history kept before a restart."""
        self.leader, self.leader_epoch, self.isr = leader, epoch, list(isr)
        self.epochs = [tuple(e) for e in epochs]

    def restore_replicas(self, replicas: list[int] | None, adding: list[int], removing: list[int]) -> None:
        """Put back the replicas a reassignment left (None: kept by an older kcoord, which had none)."""
        if replicas is not None:
            self.replicas, self.adding, self.removing = list(replicas), list(adding), list(removing)
            self.copied = {b: 0 for b in self.replicas if b not in self.isr} if adding or removing else {}

    def end_of_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's leader epoch cache answers:
        the current epoch ends at the log end; an older one where the next known epoch starts,
        named by the newest known epoch at or below it; -1s for -1 or an epoch newer than all."""
        if epoch < 0:
            return -1, -1
        if epoch == self.leader_epoch:
            return epoch, self.high_watermark
        later = next(((e, start) for e, start in self.epochs if e > epoch), None)
        if later is None:
            return -1, -1
        floor = [e for e, _ in self.epochs if e <= epoch]
        return (floor[-1] if floor else epoch), later[1]

    def epoch_error(self, current_epoch: int) -> str | None:
        """The ErrorCode name fencing a client that believes the leader epoch is `current_epoch`
        (-1: it does not say), or None. A client ahead of the broker may know of a leader
        change not yet seen here; one behind has old metadata."""
        if current_epoch == -1 or current_epoch == self.leader_epoch:
            return None
        return "UNKNOWN_LEADER_EPOCH" if current_epoch > self.leader_epoch else "FENCED_LEADER_EPOCH"

    def size_bytes(self) -> int:
        """The bytes of the batches kept, as they are stored and fetched."""
        return sum(len(b.data) for b in self.batches)

    def producers(self) -> list[tuple[int, int, int, int, int, int]]:
        """Each producer seen: (producer id, epoch, last sequence (-1: none), last timestamp
        (-1: none), coordinator epoch of its last marker (-1: none yet), first offset of its
        open transaction (-1: none)), as DescribeProducers lists them."""
        return [(pid, s.epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch, self._open.get(pid, -1))
                for pid, s in self._producers.items()]

    def delete_records(self, before: int) -> int:
        """Move the log start offset up to `before` (DeleteRecords); returns the new start.
        Batches wholly below it are dropped; records below it in the first kept batch stay
        in that batch, as in a Kafka segment, and consumers skip them."""
        if before <= self.log_start_offset:
            return self.log_start_offset
        if self.on_log_start is not None:
            self.on_log_start(before)  # durable first
        self.log_start_offset = before
        drop = bisect.bisect_left(self._last_offsets, before)
        del self.batches[:drop]
        del self._last_offsets[:drop]
        # An aborted transaction wholly below the start has no record left to skip.
        drop = bisect.bisect_left(self._aborted_last, before)
        del self._aborted[:drop]
        del self._aborted_last[:drop]
        return before

    def read(self, offset: int, max_bytes: int, at_least_one: bool = True) -> bytes:
        """Whole batches from the one containing `offset`, up to `max_bytes`."""
        return b"".join(self._read(offset, max_bytes, at_least_one, len(self.batches))[0])

    def read_committed(self, offset: int, max_bytes: int, at_least_one: bool = True) -> tuple[bytes, list]:
        """What a read_committed Fetch reads: the whole batches `read` would, but none past the
        last stable offset; and the aborted transactions with a record in what was read, as
        (producer id, first offset), for the consumer to drop their records."""
        stop = bisect.bisect_left(self._last_offsets, self.last_stable_offset)
        out, after = self._read(offset, max_bytes, at_least_one, stop)
        if not out:
            return b"", []
        return b"".join(out), self.aborted_transactions(offset, self.batches[after - 1].last_offset + 1)

    def _read(self, offset: int, max_bytes: int, at_least_one: bool, stop: int) -> tuple[list[bytes], int]:
        """The data of whole batches from the one containing `offset`, up to `max_bytes`,
        before the batch at index `stop`; and the index of the batch after them."""
        i = bisect.bisect_left(self._last_offsets, offset)
        out = []
        size = 0
        while i < stop:
            data = self.batches[i].data
            if size + len(data) > max_bytes and (out or not at_least_one):
                break
            out.append(data)
            size += len(data)
            i += 1
        return out, i

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """The first offset whose batch holds a record at or after `timestamp`."""
        for b in self.batches:
            if b.max_timestamp >= timestamp:
                for offset, ts in R.record_timestamps(b.data):
                    if ts >= timestamp and offset >= self.log_start_offset:
                        return offset, ts
        return -1, -1

    def max_timestamp(self) -> tuple[int, int]:
        best = (-1, -1)
        for b in self.batches:
            for offset, ts in R.record_timestamps(b.data):
                if ts > best[1] and offset >= self.log_start_offset:
                    best = (offset, ts)
        return best
