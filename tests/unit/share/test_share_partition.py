"""SharePartition, Kafka's record state machine of a share group on one partition, over a manual
clock and a real kcoord Partition: acquisition (batch_optimized and record_limit), the
acknowledge types, lock expiry, the delivery count limit, the start offset and the state that
persists (what a restarted broker delivers from)."""
from __future__ import annotations

import collections

import pytest

from kcoord.coordinator.clock import ManualTimer
from kcoord.log.partition import Partition
from kcoord.share.partition import (ACCEPT, GAP, REJECT, RELEASE, RENEW, AckBatch, Acquired, RecordState,
                                    ShareError, SharePartition, ShareSettings)
from wire import records as R
from wire.errors import ErrorCode

A, Q, K, X = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
BIG = 1 << 20


def log_of(*sizes: int) -> Partition:
    """A partition whose log holds one batch per size, offsets from 0."""
    p = Partition(0)
    for n in sizes:
        append(p, n)
    return p


def append(p: Partition, n: int) -> None:
    p.append(R.build_batch([(b"k", b"v", 0) for _ in range(n)], 0))


def share(p: Partition, timer: ManualTimer | None = None, start: int = 0, batches=(), **settings) -> SharePartition:
    s = ShareSettings(**{"lock_duration_ms": 1000, **settings})
    return SharePartition("g", "t", p, timer or ManualTimer(), lambda: s, start, list(batches))


def acq(sp: SharePartition, member: str = "m1", max_records: int = 500, batch_size: int = 500,
        record_limit: bool = False) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for a in sp.acquire(member, max_records, batch_size, record_limit, BIG).acquired]


def states(sp: SharePartition) -> list[tuple]:
    """Runs of (first, last, state, delivery count), neighbours alike joined."""
    out = []
    for first, last, state, count, _ in sp.record_states():
        if out and out[-1][1] + 1 == first and out[-1][2:] == (state, count):
            out[-1] = (out[-1][0], last, state, count)
        else:
            out.append((first, last, state, count))
    return out


def test_acquisition_takes_whole_log_batches_and_returns_their_bytes():
    p = log_of(5, 5, 5)
    sp = share(p)
    result = sp.acquire("m1", 7, 500, False, BIG)
    # batch_optimized: max_records is a soft limit, the log batch holding the 7th record ends it.
    assert result.acquired == [Acquired(0, 9, 1)]
    assert result.records == p.read(0, BIG)[:len(p.batches[0].data) + len(p.batches[1].data)]
    assert acq(sp, "m2") == [(10, 14, 1)]
    assert acq(sp, "m3") == []
    assert states(sp) == [(0, 14, Q, 1)]


def test_batch_size_splits_the_acquired_ranges_at_log_batch_boundaries():
    sp = share(log_of(2, 2, 2, 2))
    assert acq(sp, batch_size=3) == [(0, 3, 1), (4, 7, 1)]


def test_record_limit_acquires_exactly_max_records_and_leaves_the_rest_available():
    sp = share(log_of(10))
    assert acq(sp, max_records=3, record_limit=True) == [(0, 2, 1)]
    assert states(sp) == [(0, 2, Q, 1), (3, 9, A, 0)]
    assert acq(sp, "m2", max_records=4, record_limit=True) == [(3, 6, 1)]
    assert acq(sp, "m3", max_records=100, record_limit=True) == [(7, 9, 1)]


def test_accept_moves_the_start_offset_and_nothing_is_delivered_again():
    sp = share(log_of(5, 5))
    acq(sp)
    sp.acknowledge("m1", [AckBatch(0, 9, [ACCEPT])])
    assert sp.start_offset == 10 and sp.record_states() == []
    assert acq(sp, "m2") == []


def test_per_offset_types_release_and_reject_and_gap():
    sp = share(log_of(5))
    acq(sp)
    sp.acknowledge("m1", [AckBatch(0, 4, [ACCEPT, RELEASE, REJECT, GAP, ACCEPT])])
    assert states(sp) == [(1, 1, A, 1), (2, 3, X, 1), (4, 4, K, 1)]
    assert sp.start_offset == 1
    # The released record comes again, its delivery count bumped.
    assert acq(sp, "m2") == [(1, 1, 2)]


def test_a_subset_of_a_batch_can_be_acknowledged_and_the_rest_later():
    sp = share(log_of(10))
    acq(sp)
    sp.acknowledge("m1", [AckBatch(0, 3, [ACCEPT])])
    assert sp.start_offset == 4
    sp.acknowledge("m1", [AckBatch(4, 9, [ACCEPT])])
    assert sp.start_offset == 10 and sp.record_states() == []


def test_errors_as_kafka_answers_them_and_nothing_applied_on_error():
    sp = share(log_of(5, 5))
    acq(sp, max_records=1)          # 0-4
    with pytest.raises(ShareError) as err:
        sp.acknowledge("m2", [AckBatch(0, 4, [ACCEPT])])
    assert err.value.code == ErrorCode.INVALID_RECORD_STATE      # not the owner
    with pytest.raises(ShareError) as err:
        sp.acknowledge("m1", [AckBatch(3, 7, [ACCEPT])])
    assert err.value.code == ErrorCode.INVALID_REQUEST           # past the acquired records
    with pytest.raises(ShareError) as err:
        sp.acknowledge("m1", [AckBatch(0, 1, [ACCEPT]), AckBatch(20, 21, [ACCEPT])])
    assert err.value.code == ErrorCode.INVALID_REQUEST
    assert states(sp) == [(0, 4, Q, 1)]                          # the first batch was rolled back
    sp.acknowledge("m1", [AckBatch(0, 4, [ACCEPT])])
    # Below the start offset: already acknowledged or archived; Kafka skips such a batch, no error.
    assert sp.acknowledge("m1", [AckBatch(2, 3, [ACCEPT])]) == collections.Counter()
    acq(sp)
    sp.acknowledge("m1", [AckBatch(5, 9, [RELEASE])])
    with pytest.raises(ShareError) as err:                       # released: no longer acquired
        sp.acknowledge("m1", [AckBatch(5, 9, [ACCEPT])])
    assert err.value.code == ErrorCode.INVALID_RECORD_STATE


def test_lock_expiry_makes_records_available_again_without_a_delivery():
    timer = ManualTimer()
    sp = share(log_of(5), timer)
    acq(sp)
    timer.advance(999)
    assert states(sp) == [(0, 4, Q, 1)]
    timer.advance(1)
    assert states(sp) == [(0, 4, A, 1)]
    with pytest.raises(ShareError):
        sp.acknowledge("m1", [AckBatch(0, 4, [ACCEPT])])
    assert acq(sp, "m2") == [(0, 4, 2)]


def test_renew_extends_the_lock():
    timer = ManualTimer()
    sp = share(log_of(5), timer)
    acq(sp)
    timer.advance(800)
    sp.acknowledge("m1", [AckBatch(0, 4, [RENEW])])
    timer.advance(900)          # 1700 ms after the acquisition, 900 after the renewal
    assert states(sp) == [(0, 4, Q, 1)]
    timer.advance(100)
    assert states(sp) == [(0, 4, A, 1)]


def test_renew_when_the_group_disabled_it():
    sp = share(log_of(5), renew_enabled=False)
    acq(sp)
    with pytest.raises(ShareError) as err:
        sp.acknowledge("m1", [AckBatch(0, 4, [RENEW])])
    assert err.value.code == ErrorCode.INVALID_RECORD_STATE


def test_the_delivery_count_limit_archives_a_poison_record():
    timer = ManualTimer()
    sp = share(log_of(1), timer, delivery_count_limit=3)
    for delivery in (1, 2, 3):
        assert acq(sp) == [(0, 0, delivery)]
        sp.acknowledge("m1", [AckBatch(0, 0, [RELEASE])])
    assert sp.record_states() == [] and sp.start_offset == 1       # archived, the start moved past it
    assert acq(sp) == []


def test_lock_expiry_at_the_limit_archives():
    timer = ManualTimer()
    sp = share(log_of(2), timer, delivery_count_limit=2)
    acq(sp)
    timer.advance(1000)
    acq(sp)
    timer.advance(1000)
    assert sp.start_offset == 2 and acq(sp) == []


def test_a_record_on_its_last_delivery_goes_alone():
    sp = share(log_of(4), delivery_count_limit=5)
    for _ in range(3):
        acq(sp)
        sp.acknowledge("m1", [AckBatch(0, 3, [RELEASE])])
    # Delivered three times; throttling (from ceil(5/2)=3 deliveries) halves the records given out.
    assert acq(sp) == [(0, 1, 4)]
    sp.acknowledge("m1", [AckBatch(0, 1, [RELEASE])])
    assert acq(sp) == [(0, 0, 5)]       # the last delivery of 0 goes alone


def test_release_member_returns_its_records_without_a_delivery():
    sp = share(log_of(5, 5))
    acq(sp, "m1", max_records=1)
    acq(sp, "m2", max_records=1)
    assert sp.release_member("m1")
    assert states(sp) == [(0, 4, A, 1), (5, 9, Q, 1)]
    assert acq(sp, "m3") == [(0, 4, 2)]
    assert not sp.release_member("m1")


def test_max_record_locks_bounds_the_records_in_flight():
    sp = share(log_of(100, 100), max_record_locks=100)
    assert acq(sp) == [(0, 99, 1)]
    assert acq(sp, "m2") == []
    sp.acknowledge("m1", [AckBatch(0, 99, [ACCEPT])])
    assert acq(sp, "m2") == [(100, 199, 1)]


def test_deleted_records_move_the_start_offset_and_archive_what_was_available():
    sp = share(log_of(5, 5, 5))
    acq(sp, max_records=1)            # 0-4
    acq(sp, "m2", max_records=1)      # 5-9
    sp.acknowledge("m2", [AckBatch(5, 9, [RELEASE])])
    sp.log.delete_records(12)
    assert acq(sp, "m3") == [(12, 14, 1)]
    assert sp.start_offset == 12      # 5-11 archived; 0-4 still acquired by m1 do not hold it back
    changed, batches = sp.take_changes()
    assert changed


def test_start_offset_latest_delivers_only_new_records():
    p = log_of(5)
    sp = share(p, start=p.high_watermark)
    assert acq(sp) == []
    append(p, 2)
    assert acq(sp) == [(5, 6, 1)]


def test_read_committed_skips_aborted_transactions_and_stops_at_open_ones():
    p = Partition(0)
    append(p, 2)                                                        # 0-1
    txn = R.build_batch([(b"k", b"a", 0), (b"k", b"b", 0)], 0, producer_id=7, producer_epoch=0,
                        base_sequence=0, transactional=True)
    p.append(txn)                                                       # 2-3
    p.write_marker(7, 0, 0, False, 0)                                   # 4: abort
    append(p, 1)                                                        # 5
    p.append(R.build_batch([(b"k", b"c", 0)], 0, producer_id=8, producer_epoch=0, base_sequence=0,
                           transactional=True))                         # 6: open
    sp = share(p, read_committed=True)
    got = sp.acquire("m1", 500, 500, False, BIG)
    assert [(a.first_offset, a.last_offset) for a in got.acquired] == [(0, 1), (4, 5)]
    assert (2, 3, X, 1) in states(sp)
    sp.acknowledge("m1", [AckBatch(0, 1, [ACCEPT]), AckBatch(4, 4, [GAP]), AckBatch(5, 5, [ACCEPT])])
    assert sp.start_offset == 6


def test_persisted_state_gives_the_same_next_deliveries():
    """What a restart loads (ACQUIRED persisted as AVAILABLE) delivers what the running one would
    have once the locks expired: no acknowledged record again, no acquired one lost."""
    timer = ManualTimer()
    p = log_of(5, 5, 5)
    sp = share(p, timer)
    acq(sp, max_records=1)                                  # 0-4
    acq(sp, "m2", max_records=1)                            # 5-9
    sp.acknowledge("m1", [AckBatch(0, 4, [ACCEPT, RELEASE, ACCEPT, REJECT, ACCEPT])])
    sp.acknowledge("m2", [AckBatch(5, 6, [ACCEPT])])
    loaded = share(p, ManualTimer(), start=sp.start_offset, batches=sp.state_batches())
    timer.advance(1000)                                     # the running one: 7-9 expire
    assert acq(loaded, "m3") == acq(sp, "m3")
    assert states(loaded) == states(sp)
