"""Transactions with the three Python clients (issue 25), each case on kcoord and on the
reference Kafka (`broker_any`): the same scenario, the same expected outcome.

* Commits and aborts: a transactional producer commits some transactions and aborts others
  over two partitions; a read_committed consumer of the same client reads exactly the
  committed records, a read_uncommitted one every data record (never a marker), each
  reading to the partition's end so a record that should be hidden would show.
* Zombie fencing: a second producer with the same transactional.id initialises; the first
  one's next step fails with the client's own fenced error, its open transaction is aborted,
  and the new producer's transactions go on.
* Consume-transform-produce: a read_committed group member's records are written, transformed,
  to an output topic in transactions that also carry the member's offsets
  (send_offsets_to_transaction); at the end the group's committed offsets are the input's
  ends and the output is the input exactly once. A transaction with offsets that is aborted
  then leaves the committed offsets and the committed output as they were.

What each client offers:
* confluent-kafka (librdkafka) and kafka-python pass the consumer's group metadata
  (consumer_group_metadata() / group_metadata(): generation, member id, instance id) to
  send_offsets_to_transaction, so TxnOffsetCommit is checked against the live member (KIP-447).
* aiokafka's send_offsets_to_transaction takes a group id only: its TxnOffsetCommit carries no
  generation or member id, which the coordinator accepts as Kafka does. aiokafka speaks the
  transaction protocol of transaction version 1 (AddPartitionsToTxn before it produces),
  as kafka-python does; librdkafka is the client here that may use version 2.
* aiokafka has no init_transactions(): start() sets InitProducerId going, and the test waits
  for the producer id it brings (tests/integration/txn_clients.py).
"""
from __future__ import annotations

import uuid

import pytest

from kcoord.testing.brokers import create_topic
from tests.integration.clients import produce
from tests.integration.txn_clients import (READ_COMMITTED, READ_UNCOMMITTED, TXN_CLIENTS, stable_committed,
                                           txn_session, wait_stable, write_transactions)

PARTITIONS = [0, 1]
# (commit?, records per partition) of each transaction, in order; the last one is aborted so
# that a partition's end is an abort marker.
PLAN = [(True, 3), (False, 2), (True, 4), (False, 3)]


def _names(stem: str, client: str) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]  # the reference Kafka lives for the whole session
    return f"{stem}-{client}-{suffix}", f"tx-{stem}-{client}-{suffix}"


@pytest.mark.parametrize("client", TXN_CLIENTS)
def test_read_committed_sees_exactly_the_committed_transactions(broker_any, client):
    topic, txid = _names("txn", client)
    create_topic(broker_any.bootstrap, topic, len(PARTITIONS))
    with txn_session(client) as s:
        p = s.producer(broker_any.bootstrap, txid)
        try:
            written = write_transactions(p, topic, PARTITIONS, PLAN)
        finally:
            p.close()
        committed = s.read(broker_any.bootstrap, topic, READ_COMMITTED)
        everything = s.read(broker_any.bootstrap, topic, READ_UNCOMMITTED)
    assert committed == {part: [v for p, _, v, commit in written if p == part and commit] for part in PARTITIONS}
    assert everything == {part: [v for p, _, v, _ in written if p == part] for part in PARTITIONS}


def _fenced(client: str):
    """The client's own fenced error: (exception type, a check of the raised instance)."""
    if client == "confluent":
        from confluent_kafka import KafkaError, KafkaException

        # librdkafka turns PRODUCER_FENCED / INVALID_PRODUCER_EPOCH into its fatal _FENCED.
        return KafkaException, lambda e: e.args[0].code() == KafkaError._FENCED and e.args[0].fatal()
    if client == "kafka-python":
        from kafka.errors import ProducerFencedError

        return ProducerFencedError, lambda e: True
    from aiokafka.errors import ProducerFenced

    return ProducerFenced, lambda e: True


@pytest.mark.parametrize("client", TXN_CLIENTS)
def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker_any, client):
    topic, txid = _names("fence", client)
    create_topic(broker_any.bootstrap, topic, 1)
    error, check = _fenced(client)
    with txn_session(client) as s:
        first = s.producer(broker_any.bootstrap, txid)
        first.transact(topic, 0, b"first-committed")
        first.transact(topic, 0, b"zombie", end=None)
        # The second producer's InitProducerId aborts the first one's open transaction and
        # bumps the epoch: whatever the first does next is refused.
        second = s.producer(broker_any.bootstrap, txid)
        with pytest.raises(error) as raised:
            first.send(topic, 0, b"zombie-2")
            first.commit()
        assert check(raised.value), raised.value
        second.transact(topic, 0, b"second-committed")
        second.close()
        committed = s.read(broker_any.bootstrap, topic, READ_COMMITTED)
        everything = s.read(broker_any.bootstrap, topic, READ_UNCOMMITTED)
    assert committed == {0: [b"first-committed", b"second-committed"]}
    assert everything[0][:2] == [b"first-committed", b"zombie"] and everything[0][-1] == b"second-committed"


def _drain(consumer, ends: dict[int, int], seen: dict[int, int]) -> list[tuple[int, int, bytes]]:
    """Records polled until `seen` (partition -> next offset) reaches `ends`."""
    got = []
    for _ in range(240):
        if all(seen.get(p, 0) >= end for p, end in ends.items()):
            return got
        for partition, offset, value in consumer.poll():
            got.append((partition, offset, value))
            seen[partition] = offset + 1
    raise AssertionError(f"consumed to {seen}, not to {ends}")


@pytest.mark.parametrize("client", TXN_CLIENTS)
def test_consume_transform_produce_is_exactly_once_and_an_abort_keeps_the_offsets(broker_any, client):
    bootstrap = broker_any.bootstrap
    source, txid = _names("ctp-in", client)
    sink, group = f"{source}-out", f"{source}-group"
    for topic in (source, sink):
        create_topic(bootstrap, topic, len(PARTITIONS))
    produce(client, bootstrap, source, 30)
    ends = wait_stable(bootstrap, source, PARTITIONS)
    with txn_session(client) as s:
        producer = s.producer(bootstrap, txid)
        consumer = s.consumer(bootstrap, source, group)
        seen: dict[int, int] = {}
        try:
            for _ in range(240):
                if all(seen.get(p, 0) >= end for p, end in ends.items()):
                    break
                batch = consumer.poll()
                if not batch:
                    continue
                for partition, offset, _ in batch:
                    seen[partition] = offset + 1
                producer.begin()
                for partition, _, value in batch:
                    producer.send(sink, partition, b"out-" + value)
                producer.send_offsets({(source, p): o for p, o in seen.items()}, consumer)
                producer.commit()
            assert seen == ends
            assert stable_committed(bootstrap, group, source, PARTITIONS) == ends
            output = s.read(bootstrap, sink, READ_COMMITTED)
            source_records = s.read(bootstrap, source, READ_COMMITTED)
            assert output == {p: [b"out-" + v for v in source_records[p]] for p in PARTITIONS}

            # More input, consumed and written in a transaction with its offsets, then aborted.
            produce(client, bootstrap, source, 6)
            more = wait_stable(bootstrap, source, PARTITIONS)
            batch = _drain(consumer, more, seen)
            producer.begin()
            for partition, _, value in batch:
                producer.send(sink, partition, b"aborted-" + value)
            producer.flush()
            producer.send_offsets({(source, p): o for p, o in seen.items()}, consumer)
            producer.abort()
        finally:
            producer.close()
            consumer.close()
        assert stable_committed(bootstrap, group, source, PARTITIONS) == ends
        assert s.read(bootstrap, sink, READ_COMMITTED) == output
        assert sum(map(len, s.read(bootstrap, sink, READ_UNCOMMITTED).values())) == 30 + 6
