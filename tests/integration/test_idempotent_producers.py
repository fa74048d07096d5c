"""Idempotent producers whose answers are lost: each retried batch is answered with its first
base offset and appended once (Kafka's producer state keeps a producer's last five batches
per partition), so the log holds every record exactly once, in order.

On kcoord the answers are lost with a `drop_after` fault rule; on both kcoord and the
reference Kafka with the recording proxy's `drop_after` (kcoord.conformance.recorder),
which lets the Produce reach the broker and hangs up instead of forwarding its answer."""
from __future__ import annotations

import time
import uuid

import pytest

from kcoord.conformance.recorder import ProxyThread
from kcoord.log.partition import AppendError
from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, read_partition
from tests.integration.clients import CLIENTS, produce
from wire import records as R
from wire.errors import ErrorCode

COUNT = 60
LOST_ANSWERS = 3


async def _create(server, topic, answers):
    server.app.broker.topics.create(topic, 1)
    partition = server.app.broker.topics.partition(topic, 0)
    append = partition.append

    def answered(blob):  # what the partition told each Produce: (error, base offset)
        try:
            base = append(blob)
        except AppendError as err:
            answers.append((err.code_name, -1))
            raise
        answers.append(("NONE", base))
        return base
    partition.append = answered


async def _values(server, topic):
    partition = server.app.broker.topics.partition(topic, 0)
    return [r.value for b in partition.batches for r in R.parse_batch(b.data).records()]


@pytest.mark.parametrize("client", CLIENTS)
def test_retried_batches_after_lost_answers_leave_no_duplicate(kcoord_server, client):
    topic = f"idem-{client}-{uuid.uuid4().hex[:6]}"
    answers: list[tuple[str, int]] = []
    kcoord_server.call(lambda: _create(kcoord_server, topic, answers))
    # The batch is appended, then the connection closes before its answer: the producer
    # reconnects and sends the same batch (same producer id, epoch and sequence) again.
    kcoord_server.fault(api="Produce", action="drop_after", times=LOST_ANSWERS)
    produce(client, kcoord_server.bootstrap, topic, COUNT, idempotent=True)
    assert len([f for f in kcoord_server.faults_fired() if f["action"] == "drop_after"]) == LOST_ANSWERS
    values = kcoord_server.call(lambda: _values(kcoord_server, topic))
    assert values == [b"v%d" % i for i in range(COUNT)]
    # Every retry got the success its first attempt had earned, with the same base offset.
    assert all(error == "NONE" for error, _ in answers), answers
    bases = [base for _, base in answers]
    assert len(bases) - len(set(bases)) >= LOST_ANSWERS, answers


@pytest.fixture(scope="module")
def proxies():
    with ProxyThread() as thread:
        yield thread


@pytest.mark.parametrize("client", CLIENTS)
def test_lost_produce_answers_through_the_proxy_leave_no_duplicate(broker_any, proxies, client):
    """The same scenario on kcoord and on the reference Kafka: the proxy lets LOST_ANSWERS
    Produce requests through and hangs up before their answers reach the producer."""
    topic = f"idem-proxy-{client}-{uuid.uuid4().hex[:6]}"
    create_topic(broker_any.bootstrap, topic, 1)
    proxy = proxies.proxy(broker_any.bootstrap)
    try:
        drops = proxy.drop_after("Produce", times=LOST_ANSWERS)
        produce(client, proxy.bootstrap, topic, COUNT, idempotent=True)
        assert len(drops.fired) == LOST_ANSWERS
        exchanges = [e for e in proxy.transcript.sorted() if e["api"] == "Produce"]
    finally:
        proxies.close_proxy(proxy)
    records = read_partition(broker_any.bootstrap, topic, 0)
    assert [r.value for r in records] == [b"v%d" % i for i in range(COUNT)]
    assert [r.key for r in records] == [b"k%d" % i for i in range(COUNT)]
    assert [r.offset for r in records] == list(range(COUNT))
    # Every answer, the dropped ones too, was a success; each dropped batch was sent again and
    # answered with the base offset its first attempt got.
    answers = [p for e in exchanges if e["response"] for t in e["response"]["responses"]
               for p in t["partition_responses"]]
    assert all(p["error_code"] == 0 for p in answers), answers
    assert sum(1 for e in exchanges if e.get("dropped")) == LOST_ANSWERS
    bases = [p["base_offset"] for p in answers]
    assert len(bases) - len(set(bases)) >= LOST_ANSWERS, bases


INIT_PRODUCER_ID, PRODUCE = 22, 0


class _RawProducer:
    """An idempotent producer by hand: InitProducerId, then Produce with batches built with the
    producer id, epoch and base sequence a test chooses; answers are (error, base offset, message)."""

    def __init__(self, conn, topic):
        self.conn, self.topic = conn, topic
        self.init_version = conn.version(INIT_PRODUCER_ID, 4)
        self.produce_version = conn.version(PRODUCE, 9, 3)
        self.pid, self.epoch = self.init()

    def init(self, pid=-1, epoch=-1):
        a = self.conn.call(INIT_PRODUCER_ID, self.init_version, {
            "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": pid, "producer_epoch": epoch})
        assert a.error_code == 0, a
        return a.producer_id, a.producer_epoch

    def send(self, seq, records=2, epoch=None, pid=None):
        # Stamped now: Kafka's time retention deletes records stamped 1970 (and moves the log start).
        now = int(time.time() * 1000)
        batch = R.build_batch([(None, b"s%d" % (seq + i), now) for i in range(records)],
                              producer_id=self.pid if pid is None else pid,
                              producer_epoch=self.epoch if epoch is None else epoch, base_sequence=seq)
        a = self.conn.call(PRODUCE, self.produce_version, {
            "transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": self.topic, "partition_data": [{"index": 0, "records": batch}]}]})
        r = a.responses[0].partition_responses[0]
        return ErrorCode(r.error_code).name, r.base_offset, r.get("error_message")


def test_raw_sequence_and_epoch_answers_are_kafkas(broker_any):
    """What the reference Kafka 4.3.1 answers, hand-built batch by batch (each two records)."""
    topic = f"idem-raw-{uuid.uuid4().hex[:6]}"
    create_topic(broker_any.bootstrap, topic, 1)
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        p = _RawProducer(conn, topic)
        assert p.epoch == 0
        assert [p.send(seq) for seq in range(0, 12, 2)] == [("NONE", off, None) for off in range(0, 12, 2)]
        # A retry of one of the last five batches: its first answer, nothing appended.
        assert p.send(6) == ("NONE", 6, None)
        assert p.send(10) == ("NONE", 10, None)
        # The first batch is no longer remembered; a batch starting like a remembered one but
        # of another length is not that batch: both are out of order.
        assert p.send(0) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, None)
        assert p.send(6, records=1) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, None)
        assert p.send(14) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, None)  # a gap: 12 is next
        assert p.send(12) == ("NONE", 12, None)
        # The producer bumps its epoch itself and starts again at 0; the older epoch is fenced,
        # and a newer epoch must start at sequence 0.
        assert p.send(0, epoch=1) == ("NONE", 14, None)
        assert p.send(14, epoch=0) == ("INVALID_PRODUCER_EPOCH", -1, None)
        assert p.send(3, epoch=2) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, None)
        # A producer id the partition never saw may start at any sequence (its earlier
        # batches may be gone), then goes on from there.
        stranger = p.pid + 500_000
        assert p.send(7, pid=stranger, epoch=0) == ("NONE", 16, None)
        assert p.send(11, pid=stranger, epoch=0) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, None)
        assert p.send(9, pid=stranger, epoch=0) == ("NONE", 18, None)
        # Without a transactional id, InitProducerId naming an id and epoch gets a new id at epoch 0.
        pid, epoch = p.init(p.pid, 1)
        assert pid != p.pid and epoch == 0
    values = [r.value for r in read_partition(broker_any.bootstrap, topic, 0)]
    assert values == [b"s%d" % i for i in range(14)] + [b"s0", b"s1", b"s7", b"s8", b"s9", b"s10"]
