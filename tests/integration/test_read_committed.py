"""Transactions in a topic's log, read by real consumers (kcoord.log.partition, kcoord.api.fetch).

Transactional batches are appended to the partition directly and markers written with
`Partition.write_marker`, as the transaction coordinator will: producer A commits, B aborts, C
stays open, with plain records between them. read_committed consumers (confluent-kafka,
kafka-python) get exactly the committed records and stop at C's open transaction, then get
it once its commit marker is written; read_uncommitted ones get every data record; neither is
handed a control record. The raw answers (Fetch, ListOffsets, DescribeProducers) are checked
against what Kafka sends for the same log."""
from __future__ import annotations

import threading
import time
import uuid

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import read_batches
from wire import records as R
from wire.errors import ErrorCode

A, B, C = 910_001, 910_002, 910_003   # producer ids no InitProducerId of these tests hands out
COORDINATOR_EPOCH = 3
FETCH, LIST_OFFSETS, DESCRIBE_PRODUCERS = 1, 2, 61

# The log the scenario builds on partition 0 (offset: what is there).
#  0-1 p0 p1 | 2-3 A: a0 a1 | 4 B: b0 | 5 A: a2 | 6 A commit | 7 B abort | 8-9 C: c0 c1 (open) | 10 p2
COMMITTED = [b"p0", b"p1", b"a0", b"a1", b"a2"]
ALL_DATA = [b"p0", b"p1", b"a0", b"a1", b"b0", b"a2", b"c0", b"c1", b"p2"]
AFTER_C_COMMITS = [b"c0", b"c1", b"p2"]
LSO, HIGH_WATERMARK = 8, 11


async def _on_loop(fn):
    return fn()


class _Txns:
    """Batches of transactional producers for one partition, appended as a Produce would."""

    def __init__(self, partition):
        self.partition = partition
        self.sequences: dict[int, int] = {}

    def send(self, producer_id: int | None, *values: bytes) -> int:
        now = int(time.time() * 1000)
        if producer_id is None:
            return self.partition.append(R.build_batch([(None, v, now) for v in values]))
        first = self.sequences.get(producer_id, 0)
        self.sequences[producer_id] = first + len(values)
        return self.partition.append(R.build_batch([(None, v, now) for v in values], producer_id=producer_id,
                                                   producer_epoch=0, base_sequence=first, transactional=True))

    def end(self, producer_id: int, commit: bool) -> int:
        return self.partition.write_marker(producer_id, 0, COORDINATOR_EPOCH, commit, int(time.time() * 1000))


def _build(server, topic: str) -> None:
    def build():
        store = server.app.broker.topics
        store.create(topic, 1)
        txns = _Txns(store.partition(topic, 0))
        txns.send(None, b"p0", b"p1")
        txns.send(A, b"a0", b"a1")
        txns.send(B, b"b0")
        txns.send(A, b"a2")
        assert txns.end(A, True) == 6
        assert txns.end(B, False) == 7
        txns.send(C, b"c0", b"c1")
        txns.send(None, b"p2")
        store.notify_appended()
    server.call(lambda: _on_loop(build))


def _commit_c(server, topic: str) -> None:
    def commit():
        store = server.app.broker.topics
        # The marker's writer tells the store, as after a Produce: parked fetches look again.
        offset = store.partition(topic, 0).write_marker(C, 0, COORDINATOR_EPOCH, True, int(time.time() * 1000))
        store.notify_appended()
        return offset
    assert server.call(lambda: _on_loop(commit)) == HIGH_WATERMARK


def _fetch(conn, topic: str, offset: int, isolation_level: int, max_wait_ms: int = 0, max_bytes: int = 1 << 20):
    answer = conn.call(FETCH, 11, {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes,
        "isolation_level": isolation_level, "session_id": 0, "session_epoch": -1, "topics": [
            {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "log_start_offset": -1,
                                             "partition_max_bytes": max_bytes, "current_leader_epoch": -1}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    part = answer.responses[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    return part


def _offsets(batches) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for b in batches]


def test_the_log_holds_the_markers_as_control_batches(kcoord_server):
    topic = f"rc-log-{uuid.uuid4().hex[:6]}"
    _build(kcoord_server, topic)
    batches = read_batches(kcoord_server.bootstrap, topic)
    assert _offsets(batches) == [(0, 1), (2, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 9), (10, 10)]
    assert [b.is_transactional for b in batches] == [False, True, True, True, True, True, True, False]
    markers = [(b.producer_id, b.producer_epoch, R.parse_marker(b)) for b in batches if b.is_control]
    assert markers == [(A, 0, (True, COORDINATOR_EPOCH)), (B, 0, (False, COORDINATOR_EPOCH))]


def test_fetch_list_offsets_and_describe_producers_answer_as_kafka(kcoord_server):
    topic = f"rc-raw-{uuid.uuid4().hex[:6]}"
    _build(kcoord_server, topic)
    with Connection.to(kcoord_server.bootstrap) as conn:
        committed = _fetch(conn, topic, 0, isolation_level=1)
        assert (committed.high_watermark, committed.last_stable_offset) == (HIGH_WATERMARK, LSO)
        assert _offsets(R.iter_batches(committed.records)) == [(0, 1), (2, 3), (4, 4), (5, 5), (6, 6), (7, 7)]
        assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(B, 4)]
        # B's transaction ends at its marker (7), so a read from 6 still lists it, as Kafka does
        # (last offset >= fetch offset); a read of the first batch alone ends before B began.
        after_b = _fetch(conn, topic, 6, isolation_level=1)
        assert _offsets(R.iter_batches(after_b.records)) == [(6, 6), (7, 7)]
        assert [(t.producer_id, t.first_offset) for t in after_b.aborted_transactions] == [(B, 4)]
        first = _fetch(conn, topic, 0, isolation_level=1, max_bytes=1)
        assert _offsets(R.iter_batches(first.records)) == [(0, 1)] and first.aborted_transactions == []
        # At the LSO nothing is read at all.
        at_lso = _fetch(conn, topic, LSO, isolation_level=1)
        assert (at_lso.records or b"", at_lso.aborted_transactions) == (b"", [])
        # read_uncommitted: everything, no aborted list (null, as Kafka sends), the LSO all the same.
        uncommitted = _fetch(conn, topic, 0, isolation_level=0)
        assert uncommitted.last_stable_offset == LSO and uncommitted.aborted_transactions is None
        assert _offsets(R.iter_batches(uncommitted.records))[-1] == (10, 10)

        def latest(isolation_level):
            answer = conn.call(LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": isolation_level, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
            return answer.topics[0].partitions[0].offset
        assert (latest(1), latest(0)) == (LSO, HIGH_WATERMARK)

        answer = conn.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
        producers = {p.producer_id: (p.producer_epoch, p.last_sequence, p.coordinator_epoch,
                                     p.current_txn_start_offset)
                     for p in answer.topics[0].partitions[0].active_producers}
        assert producers == {A: (0, 2, COORDINATOR_EPOCH, -1), B: (0, 0, COORDINATOR_EPOCH, -1),
                             C: (0, 1, -1, 8)}


def _drain(poll, until: list[bytes], quiet_polls: int) -> list[bytes]:
    """Values from `poll()` (a list per call) until as many as `until` has have come, then
    from `quiet_polls` more calls: whatever the consumer hands out past them shows."""
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < len(until) and time.monotonic() < deadline:
        got += poll()
    for _ in range(quiet_polls):
        got += poll()
    return got


def _confluent(bootstrap: str, topic: str, isolation: str):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, 0, 0)])

    def poll() -> list[bytes]:
        got = []
        for m in consumer.consume(num_messages=100, timeout=0.5):
            assert m.error() is None, m.error()
            got.append(m.value())
        return got
    return consumer, poll


def _kafka_python(bootstrap: str, topic: str, isolation: str):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             fetch_max_wait_ms=100, group_id=None)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)

    def poll() -> list[bytes]:
        return [r.value for records in consumer.poll(timeout_ms=500).values() for r in records]
    return consumer, poll


CONSUMERS = {"confluent": (_confluent, "read_committed", "read_uncommitted"),
             "kafka-python": (_kafka_python, "read_committed", "read_uncommitted")}


def _consumers_read_what_they_may(server, client: str) -> None:
    topic = f"rc-{client}-{uuid.uuid4().hex[:6]}"
    _build(server, topic)
    make, committed_level, uncommitted_level = CONSUMERS[client]
    committed, poll_committed = make(server.bootstrap, topic, committed_level)
    uncommitted, poll_uncommitted = make(server.bootstrap, topic, uncommitted_level)
    try:
        # Every data record, C's open ones too, and no control record.
        assert _drain(poll_uncommitted, ALL_DATA, quiet_polls=2) == ALL_DATA
        # The committed ones only: B's aborted b0 dropped, nothing from C's open transaction on,
        # though the same polls of the other consumer had c0, c1 and p2.
        assert _drain(poll_committed, COMMITTED, quiet_polls=4) == COMMITTED
        _commit_c(server, topic)
        assert _drain(poll_committed, AFTER_C_COMMITS, quiet_polls=2) == AFTER_C_COMMITS
    finally:
        committed.close()
        uncommitted.close()


def test_confluent_read_committed_gets_the_committed_records_only(kcoord_server):
    _consumers_read_what_they_may(kcoord_server, "confluent")


def test_kafka_python_read_committed_gets_the_committed_records_only(kcoord_server):
    _consumers_read_what_they_may(kcoord_server, "kafka-python")


def test_a_read_committed_long_poll_waits_for_the_marker(kcoord_server):
    """Records above the LSO only: the long poll parks (it neither answers at once nor spins
    re-reading) and the commit marker wakes it with C's records."""
    topic = f"rc-poll-{uuid.uuid4().hex[:6]}"
    _build(kcoord_server, topic)
    partition = kcoord_server.app.broker.topics.partition(topic, 0)
    reads = []
    read_committed = partition.read_committed

    def counted(*args, **kwargs):
        reads.append(args[0])
        return read_committed(*args, **kwargs)
    partition.read_committed = counted
    try:
        with Connection.to(kcoord_server.bootstrap, timeout=60) as conn:
            # Its max wait out: one read, one more when the time is up, nothing in between
            # (a little slack for wake-ups by other partitions' appends).
            quiet = _fetch(conn, topic, LSO, isolation_level=1, max_wait_ms=500)
            assert (quiet.records or b"", quiet.last_stable_offset) == (b"", LSO)
            assert 2 <= len(reads) <= 4, reads
            answers = []
            parked = threading.Thread(target=lambda: answers.append(
                _fetch(conn, topic, LSO, isolation_level=1, max_wait_ms=120_000)))
            reads.clear()
            parked.start()
            deadline = time.monotonic() + 30
            while not reads and time.monotonic() < deadline:
                time.sleep(0.01)
            _commit_c(kcoord_server, topic)
            # Woken by the marker, long before its max wait of two minutes.
            parked.join(60)
            assert not parked.is_alive()
            [woken] = answers
            assert woken.last_stable_offset == HIGH_WATERMARK + 1
            assert _offsets(R.iter_batches(woken.records)) == [(8, 9), (10, 10), (11, 11)]
            assert woken.aborted_transactions == []
    finally:
        del partition.read_committed


D = 910_004
_KEEPS_A_LOG_AND_DIES = """
import sys, time
from kcoord.testing.plugin import KcoordHandle, start_server
from tests.integration.test_read_committed import D, _build, _on_loop, _Txns

server = KcoordHandle(start_server(data_dir=sys.argv[1]))
_build(server, "rc-durable")
# Compacted: the snapshot holds the markers so far; D's abort after it goes to the log's tail.
server.call(lambda: _on_loop(server.app.storage.compact))
def abort_d():
    txns = _Txns(server.app.broker.topics.partition("rc-durable", 0))
    txns.send(D, b"d0")
    txns.end(D, False)
server.call(lambda: _on_loop(abort_d))
print("ready", flush=True)
time.sleep(600)
"""


def test_transactions_come_back_after_a_kill_9(tmp_path):
    """A kcoord killed with SIGKILL after a compaction comes back from its data dir with C's
    transaction still open, the aborted ones indexed and every producer's epochs, so its
    read_committed consumers read as before and C's commit marker ends C."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from kcoord.testing.plugin import KcoordHandle, start_server

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", _KEEPS_A_LOG_AND_DIES, str(tmp_path)], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line == "ready\n", (line, proc.stderr.read() if proc.poll() is not None else "")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    thread = start_server(data_dir=str(tmp_path))
    server = KcoordHandle(thread)
    try:
        partition = server.app.broker.topics.partition("rc-durable", 0)
        assert partition.high_watermark == HIGH_WATERMARK + 2
        assert partition.open_transactions() == {C: LSO} and partition.last_stable_offset == LSO
        assert partition.aborted_transactions(0, partition.high_watermark) == [(B, 4), (D, 11)]
        by_id = {p[0]: p for p in partition.producers()}
        assert {pid: (p[1], p[2], p[4], p[5]) for pid, p in by_id.items()} == {
            A: (0, 2, COORDINATOR_EPOCH, -1), B: (0, 0, COORDINATOR_EPOCH, -1), C: (0, 1, -1, LSO),
            D: (0, 0, COORDINATOR_EPOCH, -1)}
        with Connection.to(server.bootstrap) as conn:
            committed = _fetch(conn, "rc-durable", 0, isolation_level=1)
            assert committed.last_stable_offset == LSO
            assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(B, 4)]
            offset = server.call(lambda: _on_loop(lambda: partition.write_marker(
                C, 0, COORDINATOR_EPOCH, True, int(time.time() * 1000))))
            assert offset == HIGH_WATERMARK + 2 and partition.last_stable_offset == offset + 1
            rest = _fetch(conn, "rc-durable", LSO, isolation_level=1)
            assert _offsets(R.iter_batches(rest.records)) == [(8, 9), (10, 10), (11, 11), (12, 12), (13, 13)]
            assert [(t.producer_id, t.first_offset) for t in rest.aborted_transactions] == [(D, 11)]
    finally:
        thread.stop()
