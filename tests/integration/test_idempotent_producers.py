"""Idempotent producers whose answers are lost: each retried batch is answered with its first
base offset and appended once (Kafka's producer state keeps a producer's last five batches
per partition), so the log holds every record exactly once, in order.

On kcoord the answers are lost with a `drop_after` fault rule; on both kcoord and the
reference Kafka with the recording proxy's `drop_after` (kcoord.conformance.recorder),
which lets the Produce reach the broker and hangs up instead of forwarding its answer."""
from __future__ import annotations

import uuid

import pytest

from kcoord.conformance.recorder import ProxyThread
from kcoord.log.partition import AppendError
from kcoord.testing.brokers import create_topic, read_partition
from tests.integration.clients import CLIENTS, produce
from wire import records as R

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
