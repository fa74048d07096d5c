"""Transactional offsets in __consumer_offsets: the producer's transactional batch, markers,
replay at load (commit, abort, a plain commit in between, a transaction still open), compaction
that never runs past an open transaction, and the runtime ending a transaction wherever the
partition's coordinator is."""
from __future__ import annotations

from kcoord.coordinator import CoordinatorRuntime, EventBus, ManualTimer, OffsetCommitPartition
from kcoord.coordinator.config import CoordinatorConfig
from kcoord.coordinator.requests import TxnOffsetCommitRequest
from kcoord.log import consumer_offsets as co
from kcoord.log.offsets_loader import OffsetsPartitions, load_partition
from kcoord.log.topics import InternalTopic, TopicStore
from tests.unit.coordinator.harness import Harness
from wire import records as R
from wire.errors import ErrorCode as E

PID, EPOCH, COORDINATOR_EPOCH = 7000, 2, 5


def _recorded():
    """A coordinator writing to a real __consumer_offsets of one partition."""
    h = Harness()
    store = TopicStore()
    store.create("t", 3)
    h.topic = co.OffsetsTopic(store, 1, h.c.now)
    h.c.record_sink = h.topic
    h.store = store
    return h


def _partition(h):
    return h.store.get(co.TOPIC).partitions[0]


def _txn(h, offsets, pid=PID):
    result = h.c.txn_offset_commit(TxnOffsetCommitRequest(
        "g", pid, EPOCH, [OffsetCommitPartition("t", p, o, -1, "") for p, o in offsets]))
    assert {e for _, _, e in result.partitions} == {E.NONE}


def _end(h, commit, pid=PID):
    h.topic.write_marker(0, pid, EPOCH, COORDINATOR_EPOCH, commit, h.c.now())
    h.c.complete_transaction(pid, commit)


def _loaded(h):
    """A fresh coordinator loaded from what the partition holds: its fetch answers."""
    fresh = Harness()
    fresh.c.load(*load_partition(_partition(h), fresh.c.now()))
    return fresh


def _offsets(h, stable=True):
    error, out = h.c.fetch_offsets("g", [("t", p) for p in range(3)], require_stable=stable)
    assert error == E.NONE
    return [(f.offset, f.error) for f in out]


UNSTABLE = (-1, E.UNSTABLE_OFFSET_COMMIT)
NONE = (-1, E.NONE)


def test_a_transactional_commit_is_one_transactional_batch_with_the_producers_id_and_epoch():
    h = _recorded()
    h.commit(offsets=[("t", 2, 1)])
    _txn(h, [(0, 10), (1, 11)])
    partition = _partition(h)
    batch = R.parse_batch(partition.batches[-1].data)
    assert (batch.producer_id, batch.producer_epoch, batch.is_transactional, batch.is_control) == (PID, EPOCH, True, False)
    assert batch.base_offset == 1 and batch.records_count == 2
    assert partition.open_transactions() == {PID: 1}
    assert partition.last_stable_offset == 1
    assert [r["value"]["data"]["offset"] for _, r in co.decode_records(partition.read(0, 1 << 20))] == [1, 10, 11]
    marker = h.topic.write_marker(0, PID, EPOCH, COORDINATOR_EPOCH, True, h.c.now())
    assert marker == 3 and partition.open_transactions() == {} and partition.last_stable_offset == 4
    assert R.parse_marker(R.parse_batch(partition.batches[-1].data)) == (True, COORDINATOR_EPOCH)
    # Markers are not group records: the decoder leaves them out.
    assert len(list(co.decode_records(partition.read(0, 1 << 20)))) == 3


def test_load_replays_a_commit_marker_and_an_abort_marker():
    h = _recorded()
    _txn(h, [(0, 10)], pid=1)
    _txn(h, [(1, 20)], pid=2)
    _end(h, True, pid=1)
    _end(h, False, pid=2)
    assert _offsets(h) == [(10, E.NONE), NONE, NONE]
    assert _offsets(_loaded(h)) == [(10, E.NONE), NONE, NONE]


def test_load_orders_a_committed_transaction_against_a_plain_commit_by_record_offset():
    h = _recorded()
    _txn(h, [(0, 10), (1, 11)])
    h.commit(offsets=[("t", 0, 7)])       # after the transaction's record of partition 0
    _end(h, True)
    assert _offsets(h) == [(7, E.NONE), (11, E.NONE), NONE]
    assert _offsets(_loaded(h)) == [(7, E.NONE), (11, E.NONE), NONE]


def test_an_open_transaction_stays_pending_after_load_and_is_ended_there():
    h = _recorded()
    h.commit(offsets=[("t", 0, 5)])
    _txn(h, [(0, 10), (2, 12)])
    h.commit(offsets=[("t", 2, 3)])
    loaded = _loaded(h)
    assert _offsets(loaded) == [UNSTABLE, NONE, UNSTABLE]
    assert _offsets(loaded, stable=False) == [(5, E.NONE), NONE, (3, E.NONE)]
    assert loaded.group("g") is not None
    loaded.c.complete_transaction(PID, True)
    # Partition 2's plain commit came after the transaction's record: it stays, as in Kafka.
    assert _offsets(loaded) == [(10, E.NONE), NONE, (3, E.NONE)]


def test_a_transactional_offset_of_a_group_with_no_other_record_makes_a_simple_group_at_load():
    h = _recorded()
    _txn(h, [(1, 9)])
    loaded = _loaded(h)
    assert loaded.group("g") is not None and _offsets(loaded) == [NONE, UNSTABLE, NONE]


def _compaction_keeps_what_load_sees(read_back: bool):
    h = _recorded()
    h.commit(offsets=[("t", 0, 1), ("t", 1, 1), ("t", 2, 1)])
    _txn(h, [(0, 10), (1, 11)], pid=1)
    _txn(h, [(2, 12)], pid=2)
    h.commit(offsets=[("t", 1, 4)])
    partition = _partition(h)
    before = list(partition.batches)
    if read_back:
        h.topic._live.clear()
    assert h.topic.compact_partition(partition) is False        # transactions are open
    assert partition.batches == before
    _end(h, True, pid=1)
    _end(h, False, pid=2)
    expected = [(10, E.NONE), (4, E.NONE), (1, E.NONE)]
    assert _offsets(h) == expected and _offsets(_loaded(h)) == expected
    if read_back:
        h.topic._live.clear()
    assert h.topic.compact_partition(partition) is True
    batches = [R.parse_batch(b.data) for b in partition.batches]
    assert not any(b.is_control or b.is_transactional for b in batches)
    kept = {(r["key"]["data"]["partition"], r["value"]["data"]["offset"])
            for _, r in co.decode_records(partition.read(0, 1 << 20))}
    assert kept == {(0, 10), (1, 4), (2, 1)}    # no aborted record, no superseded one
    assert _offsets(_loaded(h)) == expected


def test_compaction_from_what_was_appended_never_runs_past_an_open_transaction():
    _compaction_keeps_what_load_sees(read_back=False)


def test_compaction_reading_the_log_back_never_runs_past_an_open_transaction():
    _compaction_keeps_what_load_sees(read_back=True)


# ------------------------------------------------------------------ the runtime

def _runtime(load_ms=0):
    timer = ManualTimer()
    store = TopicStore(1)
    store.internal[co.TOPIC] = InternalTopic(1, dict(co.TOPIC_CONFIGS), 1)
    store.create("t", 3)
    runtime = CoordinatorRuntime(timer, CoordinatorConfig(offsets_topic_partitions=1), store, EventBus(),
                                 load_ms=load_ms)
    sink = co.OffsetsTopic(store, 1, timer.now_ms)
    runtime.record_sink, runtime.log = sink, OffsetsPartitions(sink)
    return runtime, timer, store


def _runtime_txn(runtime):
    coordinator = runtime.coordinator_for("g", 0)
    result = coordinator.txn_offset_commit(TxnOffsetCommitRequest(
        "g", PID, EPOCH, [OffsetCommitPartition("t", 0, 42, -1, "")]))
    assert result.partitions == [("t", 0, E.NONE)]


def test_runtime_complete_transaction_writes_the_marker_and_applies_the_offsets():
    runtime, timer, store = _runtime()
    _runtime_txn(runtime)
    offset = runtime.complete_transaction(0, PID, EPOCH, COORDINATOR_EPOCH, True, timer.now_ms())
    partition = store.get(co.TOPIC).partitions[0]
    assert offset == 1 and partition.high_watermark == 2 and partition.open_transactions() == {}
    assert runtime.committed("g")[("t", 0)].offset == 42


def test_a_partition_loading_when_the_marker_comes_replays_it_at_load():
    runtime, timer, store = _runtime(load_ms=1000)
    _runtime_txn(runtime)
    runtime.leader_changed(0, 0, 1)          # moved: loading for a second
    assert runtime.coordinator_for("g", 0).availability("g") == E.COORDINATOR_LOAD_IN_PROGRESS
    runtime.complete_transaction(0, PID, EPOCH, COORDINATOR_EPOCH, True, timer.now_ms())
    timer.advance(1000)
    assert runtime.committed("g")[("t", 0)].offset == 42
    error, out = runtime.coordinator_for("g", 0).fetch_offsets("g", [("t", 0)], require_stable=True)
    assert [(f.offset, f.error) for f in out] == [(42, E.NONE)]


def test_an_older_producer_epochs_marker_is_refused_and_applies_nothing():
    runtime, timer, store = _runtime()
    _runtime_txn(runtime)
    runtime.complete_transaction(0, PID, EPOCH + 1, COORDINATOR_EPOCH, False, timer.now_ms())
    try:
        runtime.complete_transaction(0, PID, EPOCH, COORDINATOR_EPOCH, True, timer.now_ms())
    except Exception as err:   # the log's AppendError
        assert getattr(err, "code_name", None) == "INVALID_PRODUCER_EPOCH"
    else:
        raise AssertionError("a marker of an older epoch was written")
    assert ("t", 0) not in runtime.committed("g")
