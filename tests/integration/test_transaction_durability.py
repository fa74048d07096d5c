"""Transactions across kill -9 of `kcoord serve --data-dir`: no committed transaction is lost,
no half transaction is ever visible to a read_committed reader, and what was open goes on as
on Kafka after the restart (the coordinator finds it Ongoing in __transaction_state and
aborts it at its timeout; a new producer with the same id fences and aborts it at once).
Transactional offset commits pending at the kill stay pending, then go with their transaction."""
from __future__ import annotations

import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, end_offsets
from kcoord.testing.reference_kafka import free_port
from kcoord.testing.serve_process import kill, serve

TIMEOUT_MS = 4000


def _read_committed(bootstrap: str, topic: str, partitions: int = 2) -> list[str]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=1500)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    try:
        return sorted(m.value.decode() for m in consumer)
    finally:
        consumer.close()


def _last_stable(bootstrap: str, topic: str) -> dict[int, int]:
    """ListOffsets LATEST at read_committed: each partition's last stable offset."""
    with Connection.to(bootstrap) as conn:
        answer = conn.call(2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in range(2)]}]})
    return {p.partition_index: p.offset for p in answer.topics[0].partitions}


def _pending_offsets(bootstrap: str, group: str, topic: str) -> list[int]:
    """OffsetFetch with require_stable: each partition's error code."""
    with Connection.to(bootstrap) as conn:
        answer = conn.call(9, 8, {"groups": [{"group_id": group, "topics": [
            {"name": topic, "partition_indexes": [0, 1]}]}], "require_stable": True})
    return [p.error_code for p in answer.groups[0].topics[0].partitions]


def _wait_stable(bootstrap: str, topic: str, timeout: float = 30) -> None:
    """Until no transaction holds the last stable offset back (every marker written)."""
    deadline = time.monotonic() + timeout
    while _last_stable(bootstrap, topic) != end_offsets(bootstrap, topic) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _last_stable(bootstrap, topic) == end_offsets(bootstrap, topic)


def test_kill_9_keeps_committed_transactions_and_never_shows_a_half_one(tmp_path):
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    extra = ("--config", "transaction.abort.timed.out.transaction.cleanup.interval.ms=500")
    server = serve(tmp_path, port, extra=extra)
    topic, group = f"d-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    try:
        create_topic(bootstrap, topic, 2)
        committer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="durable-commits")
        committer.init_transactions()
        for n in range(3):
            committer.begin_transaction()
            for p in range(2):
                committer.send(topic, f"c{n}-{p}".encode(), partition=p)
            committer.commit_transaction()
        committer.begin_transaction()
        committer.send(topic, b"aborted", partition=0).get(10)
        committer.abort_transaction()
        # Left open at the kill, with a timeout no restart outlasts: records in both partitions
        # and offsets pending in a group.
        hanging = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="durable-open",
                                transaction_timeout_ms=120000)
        hanging.init_transactions()
        hanging.begin_transaction()
        for p in range(2):
            hanging.send(topic, f"open-{p}".encode(), partition=p).get(10)
        hanging.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(5, "", -1)}, group)
        committed = [f"c{n}-{p}" for n in range(3) for p in range(2)]
        assert _read_committed(bootstrap, topic) == committed
        stable_before = _last_stable(bootstrap, topic)
        kill(server)
        committer.close(timeout=0)
        hanging.close(timeout=0)

        server = serve(tmp_path, port, extra=extra)
        # Every committed record, none of the aborted or open ones; the LSO where it was, the
        # group's offset still pending.
        assert _read_committed(bootstrap, topic) == committed
        assert _last_stable(bootstrap, topic) == stable_before
        assert _pending_offsets(bootstrap, group, topic) == [88, 0]   # UNSTABLE_OFFSET_COMMIT on partition 0
        # A new producer with the id finds the transaction Ongoing in the reloaded
        # __transaction_state, fences its producer and aborts it (CONCURRENT_TRANSACTIONS, retried).
        newer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="durable-open")
        newer.init_transactions()
        newer.close()
        _wait_stable(bootstrap, topic)
        assert _read_committed(bootstrap, topic) == committed
        assert _pending_offsets(bootstrap, group, topic) == [0, 0]
        with Connection.to(bootstrap) as conn:
            fetched = conn.call(9, 8, {"groups": [{"group_id": group, "topics": [
                {"name": topic, "partition_indexes": [0]}]}], "require_stable": True})
        assert fetched.groups[0].topics[0].partitions[0].committed_offset == -1   # aborted: never committed

        # The same id commits after the restart; then one left open at the next kill is aborted
        # at its timeout by the coordinator that reloaded it.
        again = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="durable-commits",
                              transaction_timeout_ms=TIMEOUT_MS)
        again.init_transactions()
        again.begin_transaction()
        again.send(topic, b"after-0", partition=0)
        again.commit_transaction()
        again.begin_transaction()
        again.send(topic, b"timed-out-0", partition=0).get(10)
        kill(server)
        again.close(timeout=0)
        server = serve(tmp_path, port, extra=extra)
        _wait_stable(bootstrap, topic)
        assert _read_committed(bootstrap, topic) == sorted(committed + ["after-0"])
    finally:
        server.kill()
        server.wait(10)
