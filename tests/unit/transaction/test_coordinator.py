"""The transaction coordinator's transitions, as Kafka 4.3's TransactionCoordinator makes them
(TV0/1 and TV2), over a hand-driven clock: what each request answers, what is written to
__transaction_state (in Kafka's record format) and which markers go out."""
from __future__ import annotations

import itertools
import re

import pytest

from kcoord.transaction import records as txn_records
from kcoord.transaction.coordinator import TransactionCoordinator, TxnConfig
from kcoord.transaction.state import MAX_EPOCH, TxnState
from wire.errors import ErrorCode as E


class Bed:
    def __init__(self, max_timeout_ms=900000):
        self.now = 1000
        self.written = []           # (state name, producer id, epoch) of each record, decoded back
        self.markers = []           # (producer id, epoch, commit, partitions)
        self.refuse_markers = set()
        self.fail_writes = False
        ids = itertools.count(500)
        self.removed = []
        self.c = TransactionCoordinator(3, 7, lambda: self.now, TxnConfig(max_timeout_ms=max_timeout_ms),
                                        lambda: next(ids), self._write, self._markers, server_version=lambda: 2,
                                        remove=self.removed.append)

    def _write(self, meta):
        if self.fail_writes:
            raise OSError("disk full")
        for version in (0, 1):
            # Every record is readable back in both value versions Kafka has.
            _, back = txn_records.decode_value(meta.transactional_id, txn_records.value_bytes(meta, version))
            assert (back.state, back.producer_id, back.producer_epoch) == (meta.state, meta.producer_id,
                                                                             meta.producer_epoch)
        self.written.append((meta.state.state_name, meta.producer_id, meta.producer_epoch))

    def _markers(self, meta, commit, epoch):
        self.markers.append((meta.producer_id, epoch, commit, sorted(meta.partitions)))
        return {p for p in meta.partitions if p in self.refuse_markers}

    def begin(self, tid="t", parts=(("a", 0),), version=0):
        code, pid, epoch = self.c.init_producer_id(tid, 60000, None)
        assert code == E.NONE
        assert self.c.add_partitions(tid, pid, epoch, parts, version) == E.NONE
        return pid, epoch


def test_init_gives_an_id_at_epoch_0_and_each_init_bumps_the_epoch():
    b = Bed()
    assert b.c.init_producer_id("t", 60000, None) == (E.NONE, 500, 0)
    assert b.c.init_producer_id("t", 60000, None) == (E.NONE, 500, 1)
    assert b.written == [("Empty", 500, 0), ("Empty", 500, 1)]
    assert b.c.init_producer_id("", 60000, None)[0] == E.INVALID_REQUEST
    assert b.c.init_producer_id("u", 900001, None)[0] == E.INVALID_TRANSACTION_TIMEOUT
    assert b.c.init_producer_id("u", 0, None)[0] == E.INVALID_TRANSACTION_TIMEOUT


def test_init_with_the_expected_epoch_retried_gets_the_same_epoch_and_a_stranger_is_fenced():
    b = Bed()
    b.c.init_producer_id("t", 60000, None)
    assert b.c.init_producer_id("t", 60000, (500, 0)) == (E.NONE, 500, 1)
    # KIP-360: a retry of that bump (the answer was lost) gets epoch 1 again, not 2.
    assert b.c.init_producer_id("t", 60000, (500, 0)) == (E.NONE, 500, 1)
    assert b.c.init_producer_id("t", 60000, (999, 0))[0] == E.PRODUCER_FENCED


def test_tv0_commit_writes_prepare_markers_complete_and_keeps_the_epoch():
    b = Bed()
    pid, epoch = b.begin(parts=[("a", 0), ("b", 1)])
    assert b.c.txns["t"].state is TxnState.ONGOING
    assert b.c.end_txn("t", pid, epoch, True, 0) == (E.NONE, -1, -1)
    assert b.written[-3:] == [("Ongoing", pid, 0), ("PrepareCommit", pid, 0), ("CompleteCommit", pid, 0)]
    assert b.markers == [(pid, 0, True, [("a", 0), ("b", 1)])]
    # A retried commit is answered NONE; an abort now is not a valid transition.
    assert b.c.end_txn("t", pid, epoch, True, 0)[0] == E.NONE
    assert b.c.end_txn("t", pid, epoch, False, 0)[0] == E.INVALID_TXN_STATE
    assert b.c.end_txn("t", pid, epoch + 1, True, 0)[0] == E.PRODUCER_FENCED
    assert b.c.end_txn("t", pid + 1, epoch, True, 0)[0] == E.INVALID_PRODUCER_ID_MAPPING
    assert b.c.end_txn("nobody", pid, epoch, True, 0)[0] == E.INVALID_PRODUCER_ID_MAPPING


def test_tv0_end_of_an_empty_transaction_is_an_invalid_transition():
    b = Bed()
    _, pid, epoch = b.c.init_producer_id("t", 60000, None)
    assert b.c.end_txn("t", pid, epoch, True, 0)[0] == E.INVALID_TXN_STATE
    assert b.c.end_txn("t", pid, epoch, False, 0)[0] == E.INVALID_TXN_STATE


def test_tv2_every_end_bumps_the_epoch_and_a_retry_gets_the_bumped_one():
    b = Bed()
    pid, epoch = b.begin(version=2)
    assert b.c.end_txn("t", pid, epoch, True, 2) == (E.NONE, pid, 1)
    assert b.markers[-1] == (pid, 1, True, [("a", 0)])   # the markers carry the new epoch
    assert b.c.end_txn("t", pid, epoch, True, 2) == (E.NONE, pid, 1)   # retry: same answer
    assert b.c.end_txn("t", pid, epoch, False, 2)[0] == E.INVALID_TXN_STATE
    # An abort with nothing added (TV2 allows it) bumps the epoch and writes no marker.
    markers = len(b.markers)
    assert b.c.end_txn("t", pid, 1, False, 2) == (E.NONE, pid, 2)
    assert len(b.markers) == markers
    assert b.c.end_txn("t", pid, 2, True, 2)[0] == E.INVALID_TXN_STATE   # commit of nothing
    assert b.c.end_txn("t", pid, 0, False, 2)[0] == E.PRODUCER_FENCED


def test_tv2_epoch_exhaustion_rotates_the_producer_id():
    b = Bed()
    pid, _ = b.begin(version=2)
    b.c.txns["t"].producer_epoch = MAX_EPOCH - 1
    code, new_pid, new_epoch = b.c.end_txn("t", pid, MAX_EPOCH - 1, True, 2)
    assert (code, new_epoch) == (E.NONE, 0) and new_pid != pid
    assert b.c.txns["t"].prev_producer_id == pid
    # The client retrying with the old id and its last epoch is answered, not fenced.
    assert b.c.end_txn("t", pid, MAX_EPOCH - 1, True, 2) == (E.NONE, new_pid, 0)


def test_init_during_an_ongoing_transaction_aborts_it_at_a_fenced_epoch_then_bumps_again():
    b = Bed()
    pid, epoch = b.begin()
    assert b.c.init_producer_id("t", 60000, None)[0] == E.CONCURRENT_TRANSACTIONS
    assert b.markers == [(pid, 1, False, [("a", 0)])]
    assert b.c.txns["t"].state is TxnState.COMPLETE_ABORT
    assert b.c.init_producer_id("t", 60000, None) == (E.NONE, pid, 2)
    # The old producer's epoch is fenced everywhere.
    assert b.c.add_partitions("t", pid, epoch, [("a", 1)], 0) == E.PRODUCER_FENCED
    assert b.c.end_txn("t", pid, epoch, True, 0)[0] == E.PRODUCER_FENCED


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced():
    b = Bed()
    pid, epoch = b.begin()
    b.now += 59000
    assert b.c.abort_timed_out() == []
    b.now += 2000
    assert b.c.abort_timed_out() == ["t"]
    assert b.c.txns["t"].state is TxnState.COMPLETE_ABORT
    assert b.markers == [(pid, epoch + 1, False, [("a", 0)])]
    assert b.c.end_txn("t", pid, epoch, True, 0)[0] == E.PRODUCER_FENCED


def test_a_partition_without_a_leader_keeps_the_transaction_preparing_until_its_marker_is_written():
    b = Bed()
    pid, epoch = b.begin(parts=[("a", 0), ("a", 1)])
    b.refuse_markers = {("a", 1)}
    assert b.c.end_txn("t", pid, epoch, True, 0)[0] == E.NONE
    assert b.c.txns["t"].state is TxnState.PREPARE_COMMIT
    assert b.c.add_partitions("t", pid, epoch, [("a", 2)], 0) == E.CONCURRENT_TRANSACTIONS
    assert b.c.end_txn("t", pid, epoch, True, 0)[0] == E.CONCURRENT_TRANSACTIONS
    assert b.c.init_producer_id("t", 60000, None)[0] == E.CONCURRENT_TRANSACTIONS
    b.refuse_markers = set()
    b.c.retry_markers()
    assert b.markers[-1] == (pid, 0, True, [("a", 1)])   # only the one still missing
    assert b.c.txns["t"].state is TxnState.COMPLETE_COMMIT


def test_a_failed_write_changes_nothing():
    b = Bed()
    pid, epoch = b.begin()
    b.fail_writes = True
    assert b.c.end_txn("t", pid, epoch, True, 0)[0] == E.COORDINATOR_NOT_AVAILABLE
    assert b.c.txns["t"].state is TxnState.ONGOING and b.markers == []
    assert b.c.init_producer_id("new", 60000, None)[0] == E.COORDINATOR_NOT_AVAILABLE
    assert "new" not in b.c.txns


def test_loading_a_preparing_transaction_writes_its_markers_and_completes_it():
    b = Bed()
    pid, epoch = b.begin()
    b.refuse_markers = {("a", 0)}
    b.c.end_txn("t", pid, epoch, False, 0)
    prepared = b.c.txns["t"]
    again = Bed()
    again.c.replay([prepared])
    again.c.finish_loaded()
    assert again.markers == [(pid, epoch, False, [("a", 0)])]
    assert again.c.txns["t"].state is TxnState.COMPLETE_ABORT


def test_verify_says_which_partitions_are_in_the_transaction():
    b = Bed()
    pid, epoch = b.begin(parts=[("a", 0)])
    assert b.c.verify("t", pid, epoch, [("a", 0), ("a", 1)]) == {("a", 0): E.NONE, ("a", 1): E.TRANSACTION_ABORTABLE}
    assert b.c.verify("t", pid, epoch + 1, [("a", 0)]) == {("a", 0): E.PRODUCER_FENCED}
    assert b.c.verify("x", pid, epoch, [("a", 0)]) == {("a", 0): E.INVALID_PRODUCER_ID_MAPPING}


def test_describe_and_list_filter_as_kafka():
    b = Bed()
    b.begin("t1", parts=[("a", 0), ("a", 2), ("b", 1)])
    b.c.init_producer_id("t2", 60000, None)
    d = b.c.describe("t1")
    assert (d["transaction_state"], d["topics"]) == ("Ongoing", [{"topic": "a", "partitions": [0, 2]},
                                                                 {"topic": "b", "partitions": [1]}])
    assert b.c.describe("zz")["error_code"] == E.TRANSACTIONAL_ID_NOT_FOUND
    ids = lambda rows: sorted(r["transactional_id"] for r in rows)
    assert ids(b.c.list(set(), set(), -1, None)) == ["t1", "t2"]
    assert ids(b.c.list(set(), {"Ongoing"}, -1, None)) == ["t1"]
    assert ids(b.c.list(set(), set(), -1, re.compile("t"))) == []      # a whole-id match
    assert ids(b.c.list(set(), set(), -1, re.compile("t.*1"))) == ["t1"]
    b.now += 5000
    # Only those running longer than the duration (measured from start time -1 when Empty, as Kafka).
    assert ids(b.c.list(set(), set(), 5500, None)) == ["t2"]


@pytest.mark.parametrize("version", [0, 1])
def test_records_round_trip_in_both_value_versions(version):
    b = Bed()
    b.begin(parts=[("a", 0), ("a", 3), ("b", 1)], version=2)
    meta = b.c.txns["t"]
    key = txn_records.key_bytes("t")
    assert txn_records.decode_key(key) == "t"
    got_version, back = txn_records.decode_value("t", txn_records.value_bytes(meta, version))
    assert got_version == version and back.partitions == meta.partitions
    assert back.client_version == (2 if version == 1 else 0)
    shown = txn_records.as_json(key, txn_records.value_bytes(meta, version))
    assert shown["value"]["data"]["transactionPartitions"] == [{"topic": "a", "partitionIds": [0, 3]},
                                                                {"topic": "b", "partitionIds": [1]}]
    with pytest.raises(txn_records.TransactionRecordError):
        txn_records.decode_value("t", txn_records.value_bytes(meta, version)[:-3])


def test_ids_with_no_transaction_going_expire_after_the_expiration_time():
    b = Bed()
    pid, epoch = b.begin("ongoing")
    b.c.init_producer_id("idle", 60000, None)
    done_pid, done_epoch = b.begin("done")
    b.c.end_txn("done", done_pid, done_epoch, True, 0)
    b.now += TxnConfig().id_expiration_ms - 1
    assert b.c.expire_ids() == []
    b.now += 1
    assert sorted(b.c.expire_ids()) == ["done", "idle"] and sorted(b.removed) == ["done", "idle"]
    assert sorted(b.c.txns) == ["ongoing"]   # an Ongoing one waits for its timeout instead
    # An expired id starts afresh: a new producer id at epoch 0.
    assert b.c.init_producer_id("idle", 60000, None)[2] == 0
