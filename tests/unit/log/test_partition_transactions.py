"""A partition's transactions (kcoord.log.partition), as Kafka's ProducerStateManager and
transaction index keep them: transactional batches open a producer's transaction, markers end
it, the last stable offset stops at the oldest open one, aborted ones are listed for the range
a read_committed fetch reads, and all of it comes back from the stored batches after a restart."""
from __future__ import annotations

import pytest

from kcoord.log.partition import AppendError, Partition
from wire import records as R

A, B, C = 1000, 2000, 3000   # producer ids


class Producer:
    """A transactional producer's batches for one partition, with its sequences."""

    def __init__(self, producer_id: int, epoch: int = 0):
        self.id, self.epoch, self.sequence = producer_id, epoch, 0

    def batch(self, *values: bytes, transactional: bool = True, sequence: int | None = None) -> bytes:
        first = self.sequence if sequence is None else sequence
        self.sequence = first + len(values)
        return R.build_batch([(None, v, 1_000 + i) for i, v in enumerate(values)], producer_id=self.id,
                             producer_epoch=self.epoch, base_sequence=first, transactional=transactional)

    def bumped(self) -> None:
        """What a TV2 marker does to the producer: a new epoch, sequences from 0."""
        self.epoch += 1
        self.sequence = 0


def plain(*values: bytes) -> bytes:
    return R.build_batch([(None, v, 1_000) for v in values])


def values_below(partition: Partition, end: int) -> list[bytes]:
    return [r.value for b in R.iter_batches(partition.read(0, 1 << 30)) if not b.is_control
            for r in b.records() if r.offset < end]


def test_a_transactional_batch_opens_a_transaction_at_its_base_offset():
    p, a = Partition(0), Producer(A)
    p.append(plain(b"x", b"y"))
    assert p.open_transactions() == {} and p.last_stable_offset == 2
    p.append(a.batch(b"a0", b"a1"))
    p.append(a.batch(b"a2"))     # the same transaction: it stays open from offset 2
    assert p.open_transactions() == {A: 2}
    assert p.last_stable_offset == 2 and p.high_watermark == 5


def test_commit_ends_the_transaction_and_moves_the_lso_to_the_high_watermark():
    p, a = Partition(0), Producer(A)
    p.append(a.batch(b"a0", b"a1"))
    offset = p.write_marker(A, 0, 7, True, 5_000)
    assert offset == 2 and p.high_watermark == 3
    assert p.open_transactions() == {} and p.last_stable_offset == 3
    assert p.aborted_transactions(0, 3) == []
    marker = R.parse_batch(p.batches[-1].data)
    assert marker.is_control and marker.is_transactional and marker.base_offset == 2
    assert (marker.producer_id, marker.producer_epoch, marker.max_timestamp) == (A, 0, 5_000)
    assert R.parse_marker(marker) == (True, 7)


def test_abort_goes_to_the_aborted_index_up_to_its_marker():
    p, a = Partition(0), Producer(A)
    p.append(plain(b"x"))
    p.append(a.batch(b"a0", b"a1"))
    assert p.write_marker(A, 0, 0, False, 5_000) == 3
    assert p.last_stable_offset == 4
    assert p.aborted_transactions(0, 4) == [(A, 1)]
    # Any overlap of [first=1, last=3] with [start, end) lists it.
    assert p.aborted_transactions(3, 4) == [(A, 1)]
    assert p.aborted_transactions(0, 2) == [(A, 1)]
    assert p.aborted_transactions(0, 1) == []
    assert p.aborted_transactions(4, 10) == []


def test_interleaved_producers_hold_the_lso_at_the_oldest_open_transaction():
    p, a, b, c = Partition(0), Producer(A), Producer(B), Producer(C)
    p.append(a.batch(b"a0"))          # 0
    p.append(b.batch(b"b0"))          # 1
    p.append(plain(b"x"))             # 2: not in a transaction, but above the LSO all the same
    p.append(a.batch(b"a1"))          # 3
    p.append(c.batch(b"c0"))          # 4
    assert p.open_transactions() == {A: 0, B: 1, C: 4}
    assert p.last_stable_offset == 0
    p.write_marker(B, 0, 0, False, 1)         # 5: B aborted; A still holds the LSO
    assert p.last_stable_offset == 0
    p.write_marker(A, 0, 0, True, 1)          # 6
    assert p.last_stable_offset == 4          # C's transaction
    assert p.open_transactions() == {C: 4}
    assert p.aborted_transactions(0, 4) == [(B, 1)]
    assert p.aborted_transactions(2, 4) == [(B, 1)]    # B's range [1, 5] reaches past 2
    assert p.aborted_transactions(6, 7) == []
    p.write_marker(C, 0, 0, True, 1)          # 7
    assert p.last_stable_offset == p.high_watermark == 8
    assert values_below(p, p.last_stable_offset) == [b"a0", b"b0", b"x", b"a1", b"c0"]


def test_a_new_transaction_after_a_marker_opens_at_its_own_first_batch():
    p, a = Partition(0), Producer(A)
    p.append(a.batch(b"a0"))
    p.write_marker(A, 0, 0, False, 1)
    p.append(a.batch(b"a1"))
    assert p.open_transactions() == {A: 2}
    p.write_marker(A, 0, 0, False, 1)
    assert p.aborted_transactions(0, 10) == [(A, 0), (A, 2)]
    assert p.aborted_transactions(2, 10) == [(A, 2)]


def test_a_tv2_marker_carries_the_bumped_epoch_and_the_next_epoch_starts_at_sequence_0():
    p, a = Partition(0), Producer(A, epoch=3)
    p.append(a.batch(b"a0", b"a1"))
    p.write_marker(A, 4, 2, True, 9_000)       # the coordinator bumped the epoch to 4
    assert p.producers() == [(A, 4, -1, 9_000, 2, -1)]
    a.bumped()
    with pytest.raises(AppendError) as err:
        p.append(a.batch(b"a2", sequence=2))
    assert err.value.code_name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    p.append(a.batch(b"a2", sequence=0))
    assert p.producers() == [(A, 4, 0, 1_000, 2, 3)]
    with pytest.raises(AppendError) as err:   # the old epoch is fenced
        p.append(R.build_batch([(None, b"z", 1)], producer_id=A, producer_epoch=3, base_sequence=2,
                               transactional=True))
    assert err.value.code_name == "INVALID_PRODUCER_EPOCH"


def test_a_tv1_marker_keeps_the_epoch_and_the_sequences_continue():
    p, a = Partition(0), Producer(A, epoch=3)
    p.append(a.batch(b"a0", b"a1"))
    p.write_marker(A, 3, 0, True, 9_000)
    p.append(a.batch(b"a2"))                  # sequence 2
    assert p.producers() == [(A, 3, 2, 1_000, 0, 3)]


def test_a_marker_older_than_the_producer_epoch_is_refused_and_not_written():
    p, a = Partition(0), Producer(A, epoch=5)
    p.append(a.batch(b"a0"))
    with pytest.raises(AppendError) as err:
        p.write_marker(A, 4, 0, False, 1)
    assert err.value.code_name == "INVALID_PRODUCER_EPOCH"
    assert p.high_watermark == 1 and p.open_transactions() == {A: 0}


def test_a_marker_from_an_older_coordinator_epoch_is_fenced():
    p, a = Partition(0), Producer(A)
    p.append(a.batch(b"a0"))
    p.write_marker(A, 0, 5, True, 1)
    p.append(a.batch(b"a1"))
    with pytest.raises(AppendError) as err:
        p.write_marker(A, 0, 4, True, 1)
    assert err.value.code_name == "TRANSACTION_COORDINATOR_FENCED"
    assert p.open_transactions() == {A: 2}


def test_a_marker_with_no_open_transaction_is_written_and_ends_nothing():
    p = Partition(0)
    p.append(plain(b"x"))
    assert p.write_marker(A, 2, 1, False, 1) == 1
    assert p.high_watermark == 2 and p.aborted_transactions(0, 2) == []
    assert p.producers() == [(A, 2, -1, 1, 1, -1)]


def test_a_client_may_not_write_a_control_batch():
    p = Partition(0)
    marker = R.build_marker_batch(A, 0, 0, True, 0, 1)
    with pytest.raises(AppendError) as err:
        p.append(marker)
    assert err.value.code_name == "INVALID_RECORD"
    assert p.high_watermark == 0


def test_a_non_transactional_batch_while_the_transaction_is_open_is_invalid_txn_state():
    p, a = Partition(0), Producer(A)
    p.append(a.batch(b"a0"))
    with pytest.raises(AppendError) as err:
        p.append(a.batch(b"a1", transactional=False))
    assert err.value.code_name == "INVALID_TXN_STATE"
    # Also within one request: its first batch opens the transaction.
    q, b = Partition(0), Producer(B)
    with pytest.raises(AppendError) as err:
        q.append(b.batch(b"b0") + b.batch(b"b1", transactional=False))
    assert err.value.code_name == "INVALID_TXN_STATE"
    assert q.high_watermark == 0 and q.open_transactions() == {}


def test_a_retried_transactional_batch_is_answered_with_its_first_offset():
    p, a = Partition(0), Producer(A)
    batch = a.batch(b"a0", b"a1")
    p.append(plain(b"x"))
    assert p.append(batch) == 1
    assert p.append(batch) == 1
    assert p.high_watermark == 3 and p.open_transactions() == {A: 1}


def test_put_built_transactional_opens_the_transaction_as_append_does():
    p = Partition(0)
    p.put_built(R.build_plain_batch([(b"k", b"v")], 0, 1), 1, 1)       # no producer
    data = R.build_batch([(b"k", b"v", 1), (b"k2", b"v2", 1)], 1, producer_id=A, producer_epoch=2,
                         transactional=True)
    p.put_built(data, 2, 1, producer_id=A, producer_epoch=2, transactional=True)
    assert p.open_transactions() == {A: 1} and p.last_stable_offset == 1
    assert p.producers() == [(A, 2, -1, 1, -1, 1)]
    p.write_marker(A, 2, 0, False, 1)
    assert p.aborted_transactions(0, 4) == [(A, 1)] and p.last_stable_offset == 4


def test_the_marker_goes_through_on_append_first():
    p, a = Partition(0), Producer(A)
    p.leader_epoch = 3
    seen = []
    p.on_append = seen.extend
    p.append(a.batch(b"a0"))
    p.write_marker(A, 0, 0, True, 1)
    stored = R.parse_batch(seen[-1].data)
    assert stored.is_control and stored.base_offset == 1 and stored.partition_leader_epoch == 3

    p.append(a.batch(b"a1"))                  # 2: the next transaction

    def refuse(_):
        raise OSError("disk full")
    p.on_append = refuse
    with pytest.raises(AppendError) as err:
        p.write_marker(A, 0, 0, True, 1)
    assert err.value.code_name == "KAFKA_STORAGE_ERROR"
    assert p.high_watermark == 3 and p.open_transactions() == {A: 2}


def test_restore_rebuilds_transactions_epochs_and_the_aborted_index():
    p, a, b, c = Partition(0), Producer(A), Producer(B, epoch=1), Producer(C)
    p.append(a.batch(b"a0"))
    p.append(b.batch(b"b0"))
    p.append(c.batch(b"c0"))
    p.write_marker(A, 1, 4, True, 7)           # committed, TV2 bump to epoch 1
    p.write_marker(B, 1, 4, False, 8)          # aborted, same epoch (TV1): B's sequences go on
    p.append(plain(b"x"))
    restored = Partition(0)
    for stored in p.batches:
        restored.restore(stored.data)
    assert restored.high_watermark == p.high_watermark == 6
    assert restored.open_transactions() == {C: 2}
    assert restored.last_stable_offset == 2
    assert restored.aborted_transactions(0, 6) == [(B, 1)]
    assert sorted(restored.producers()) == sorted(p.producers()) == [
        (A, 1, -1, 7, 4, -1), (B, 1, 0, 8, 4, -1), (C, 0, 0, 1_000, -1, 2)]
    # The restored state keeps checking as before: A's old epoch is fenced, C may continue.
    with pytest.raises(AppendError):
        restored.write_marker(A, 0, 4, True, 9)
    restored.append(c.batch(b"c1"))
    assert restored.open_transactions() == {C: 2}


def test_delete_records_drops_aborted_transactions_wholly_below_the_new_start():
    p, a, b = Partition(0), Producer(A), Producer(B)
    p.append(a.batch(b"a0"))                  # 0
    p.write_marker(A, 0, 0, False, 1)         # 1
    p.append(b.batch(b"b0"))                  # 2
    p.append(plain(b"x"))                     # 3
    p.write_marker(B, 0, 0, False, 1)         # 4
    assert p.aborted_transactions(0, 5) == [(A, 0), (B, 2)]
    p.delete_records(3)
    assert p.aborted_transactions(0, 5) == [(B, 2)]
    p.delete_records(5)
    assert p.aborted_transactions(0, 5) == []


def test_the_lso_does_not_fall_below_the_log_start():
    p, a = Partition(0), Producer(A)
    p.append(a.batch(b"a0"))
    p.append(plain(b"x"))
    p.append(plain(b"y"))
    p.delete_records(2)
    assert p.last_stable_offset == 2


def offsets_of(blob: bytes) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for b in R.iter_batches(blob)]


def test_read_committed_reads_whole_batches_below_the_lso_and_the_aborted_ones_in_them():
    p, a, b, c = Partition(0), Producer(A), Producer(B), Producer(C)
    p.append(a.batch(b"a0", b"a1"))      # 0-1
    p.append(plain(b"x"))                # 2
    p.write_marker(A, 0, 0, False, 1)    # 3
    p.append(b.batch(b"b0"))             # 4
    p.write_marker(B, 0, 0, True, 1)     # 5
    p.append(c.batch(b"c0"))             # 6: open
    p.append(plain(b"y"))                # 7
    assert p.last_stable_offset == 6
    data, aborted = p.read_committed(0, 1 << 20)
    assert offsets_of(data) == [(0, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    assert aborted == [(A, 0)]
    data, aborted = p.read_committed(4, 1 << 20)
    assert offsets_of(data) == [(4, 4), (5, 5)] and aborted == []
    # Nothing at or past the LSO, though records are there; read_uncommitted reads them.
    assert p.read_committed(6, 1 << 20) == (b"", [])
    assert p.read_committed(7, 1 << 20) == (b"", [])
    assert offsets_of(p.read(6, 1 << 20)) == [(6, 6), (7, 7)]
    # At least one batch below the LSO, however small the limit; only what was read is listed.
    data, aborted = p.read_committed(2, 1)
    assert offsets_of(data) == [(2, 2)] and aborted == [(A, 0)]
    assert p.read_committed(0, 1, at_least_one=False) == (b"", [])
    p.write_marker(C, 0, 0, True, 1)     # 8
    data, _ = p.read_committed(6, 1 << 20)
    assert offsets_of(data) == [(6, 6), (7, 7), (8, 8)]
