"""The transaction coordinator fails over as the group coordinator does: on a three-broker
kcoord, the broker coordinating a transactional id is killed (kill -9: its partitions keep it
as leader until the controller fences it) in the middle of a transaction and between
transactions; a confluent-kafka transactional producer finds the next coordinator, which
loaded the id's state from __transaction_state, and carries on. A read_committed reader then
sees exactly the records of the transactions whose commit succeeded, each once."""
from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

import kcoord.testing.brokers as kb
from kcoord.testing.plugin import KcoordHandle, start_server

RECORDS = 4   # per transaction


def _transaction(producer, topic: str, n: int) -> bool:
    """Transaction `n`, retried while the client says so; True if it committed."""
    producer.begin_transaction()
    for i in range(RECORDS):
        producer.produce(topic, f"{n}-{i}".encode(), partition=i % 2)
    deadline = time.monotonic() + 60
    while True:
        try:
            producer.commit_transaction(30)
            return True
        except KafkaException as err:
            error = err.args[0]
            if error.txn_requires_abort():
                producer.abort_transaction(30)
                return False
            if not error.retriable() or time.monotonic() > deadline:
                raise


def _read_committed(bootstrap: str, topic: str) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    ends = kb.end_offsets(bootstrap, topic)
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    values, deadline = [], time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
            positions = consumer.position([TopicPartition(topic, p) for p in ends])
            # read_committed stops at the last stable offset: past every marker means done.
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                break
    finally:
        consumer.close()
    return values


def test_a_killed_transaction_coordinator_hands_over_to_the_next_broker():
    handle = KcoordHandle(start_server(brokers=3, default_replication_factor=3, broker_session_timeout_ms=1000))
    try:
        topic, tid = f"t-{uuid.uuid4().hex[:6]}", f"txn-{uuid.uuid4().hex[:6]}"
        kb.create_topic(handle.brokers[0].bootstrap, topic, 2, replication_factor=3, wait=False)
        producer = Producer({"bootstrap.servers": handle.bootstrap, "transactional.id": tid,
                             "transaction.timeout.ms": 60000})
        producer.init_transactions(30)
        committed = [n for n in range(3) if _transaction(producer, topic, n)]
        first = handle.transaction_coordinator_of(tid)
        # Killed between two transactions: the next one starts on its successor.
        handle.brokers[first].kill()
        committed += [n for n in range(3, 6) if _transaction(producer, topic, n)]
        second = handle.transaction_coordinator_of(tid)
        assert second not in (first, -1)
        # Killed in the middle of one: its records are sent, its commit reaches the third broker,
        # which finds the transaction Ongoing in __transaction_state and ends it.
        handle.brokers[first].start()
        producer.begin_transaction()
        for i in range(RECORDS):
            producer.produce(topic, f"6-{i}".encode(), partition=i % 2)
        producer.flush(30)
        handle.brokers[second].kill()
        deadline = time.monotonic() + 60
        while True:
            try:
                producer.commit_transaction(30)
                committed.append(6)
                break
            except KafkaException as err:
                if err.args[0].txn_requires_abort():
                    producer.abort_transaction(30)
                    break
                assert err.args[0].retriable() and time.monotonic() < deadline, err
        third = handle.transaction_coordinator_of(tid)
        assert third not in (second, -1)
        committed += [n for n in range(7, 9) if _transaction(producer, topic, n)]
        producer.flush(10)
        assert 6 in committed and len(committed) >= 8, committed
        handle.brokers[second].start()
        got = _read_committed(handle.brokers[0].bootstrap, topic)
        assert sorted(got) == sorted(f"{n}-{i}" for n in committed for i in range(RECORDS))
    finally:
        handle._thread.stop()
