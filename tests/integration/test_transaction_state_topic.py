"""`__transaction_state` on kcoord as on the reference Kafka: the same transactions (a commit,
an abort, an empty abort, a fenced producer) from kafka-python and confluent-kafka on both,
their records read back with Kafka's own console consumer and TransactionLogMessageFormatter,
and with kcoord's decoder. Timestamps and producer ids are each broker's own; everything else
(states, epochs, partitions, versions, timeouts, the order of the records) must be equal."""
from __future__ import annotations

import json
import uuid

import pytest

from kcoord.coordinator.config import offsets_partition_for
from kcoord.testing.brokers import create_topic, read_partition
from kcoord.testing.kafka_tools import ToolSession
from kcoord.transaction import records as txn_records
from kcoord.transaction.runtime import TOPIC

FORMATTER = "org.apache.kafka.tools.consumer.TransactionLogMessageFormatter"
PARTITIONS = 50   # transaction.state.log.num.partitions on both brokers


@pytest.fixture(scope="module")
def tools():
    with ToolSession() as session:
        yield session


@pytest.fixture
def both(kcoord_server, reference_kafka):
    return kcoord_server.bootstrap, reference_kafka.bootstrap


def _kafka_python(bootstrap: str, topic: str, tid: str) -> None:
    from kafka import KafkaProducer
    from kafka.errors import ProducerFencedError

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, transaction_timeout_ms=30000)
    producer.init_transactions()
    producer.begin_transaction()
    # One at a time: whether the client adds the two partitions in one AddPartitionsToTxn or two
    # (one record or two) is otherwise its batching's timing.
    producer.send(topic, b"committed", partition=0).get(10)
    producer.send(topic, b"committed", partition=1).get(10)
    producer.commit_transaction()
    producer.begin_transaction()
    # Sent for sure before the abort (else the client may drop it, and add no partition).
    producer.send(topic, b"aborted", partition=1).get(10)
    producer.abort_transaction()
    newer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, transaction_timeout_ms=30000)
    newer.init_transactions()
    with pytest.raises(ProducerFencedError):
        producer.begin_transaction()
        producer.send(topic, b"zombie", partition=0).get(10)
        producer.commit_transaction()
    newer.close()


def _confluent(bootstrap: str, topic: str, tid: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 30000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"committed", partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.abort_transaction(30)   # nothing sent: no record on either broker
    producer.begin_transaction()
    producer.produce(topic, b"aborted", partition=1)
    producer.flush(30)
    producer.abort_transaction(30)


def _formatted(tools, bootstrap: str, tid: str) -> list[dict]:
    partition = offsets_partition_for(tid, PARTITIONS)
    # --timeout-ms: the tool's wait for a next record, its first one included; 4 s was too short
    # for the first under a loaded full run (2026-11-26).
    result = tools.run("console-consumer", bootstrap, "--topic", TOPIC, "--partition", str(partition),
                       "--offset", "earliest", "--formatter", FORMATTER, "--timeout-ms", "10000", timeout=90)
    decoder, text, pos, out = json.JSONDecoder(), result.stdout.strip(), 0, []
    while pos < len(text):
        obj, end = decoder.raw_decode(text, pos)
        if obj["key"]["data"]["transactionalId"] == tid:
            out.append(obj)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    assert out, f"no record of {tid} in {TOPIC}-{partition}: {result.stderr[-2000:]}"
    return out


def _comparable(records: list[dict]) -> list[dict]:
    """Each broker's own ids and times replaced by their order of appearance."""
    ids: dict[int, str] = {}
    out = []
    for r in records:
        data = dict(r["value"]["data"])
        for field in ("producerId", "previousProducerId", "nextProducerId"):
            if field in data:
                data[field] = ids.setdefault(data[field], f"id{len(ids)}")
        data["transactionLastUpdateTimestampMs"] = "<time>"
        if data["transactionStartTimestampMs"] != -1:
            data["transactionStartTimestampMs"] = "<time>"
        if data.get("transactionPartitions"):
            data["transactionPartitions"] = sorted(
                ({"topic": "<topic>", "partitionIds": sorted(p["partitionIds"])} for p in data["transactionPartitions"]),
                key=json.dumps)
        out.append({"key": r["key"], "value": {"version": r["value"]["version"], "data": data}})
    return out


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_transaction_state_records_are_kafkas(tools, both, client):
    run = {"kafka-python": _kafka_python, "confluent": _confluent}[client]
    suffix = uuid.uuid4().hex[:8]
    topic, tid = f"txn-state-{suffix}", f"txn-state-{client}-{suffix}"
    formatted = []
    for bootstrap in both:
        create_topic(bootstrap, topic, 2)
        run(bootstrap, topic, tid)
        formatted.append(_formatted(tools, bootstrap, tid))
    kcoord, kafka = (_comparable(f) for f in formatted)
    lines = lambda records: "\n".join(json.dumps(r["value"]) for r in records)
    assert kcoord == kafka, f"kcoord:\n{lines(kcoord)}\nkafka:\n{lines(kafka)}"
    # kcoord's own decoder prints what Kafka's formatter prints from the same bytes.
    records = [r for r in read_partition(both[0], TOPIC, offsets_partition_for(tid, PARTITIONS))
               if txn_records.decode_key(r.key) == tid]
    assert [txn_records.as_json(r.key, r.value) for r in records] == formatted[0]
