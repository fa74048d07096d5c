"""Kafka Streams 4.3.1 with processing.guarantee=exactly_once_v2 on kcoord and on the reference
Kafka: two instances of a count (a repartition through groupBy, a store with its changelog,
tests/integration/java/KcoordStreamsCount.java), one killed with kill -9 mid-run. The survivor
restores the killed one's tasks from the changelog and the committed offsets; a read_committed
reader of the output then finds, for every key, each count from 1 to the final one exactly once:
nothing counted twice, nothing lost."""
from __future__ import annotations

import collections
import time
import uuid
from pathlib import Path

import pytest

from kcoord.testing import streams
from kcoord.testing.brokers import create_topic
from tests.integration.clients import produce
from tests.integration.javaclient import program_start
from tests.integration.test_transactions_java import TXN_BROKER_CONFIG

SOURCE = Path(__file__).with_name("java") / "KcoordStreamsCount.java"
KEYS = 10
RECORDS = 600   # input values v0..v599 counted by their last digit: 60 per key
RECORD_DELAY_MS = 15

pytestmark = pytest.mark.kcoord(kafka_config=TXN_BROKER_CONFIG)


def _produce_digits(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, key=b"k%d" % i, value=b"d%d" % (i % KEYS))
    assert producer.flush(30) == 0


def _committed_counts(bootstrap: str, topic: str, until_final: bool, timeout: float) -> dict[str, list[int]]:
    """key -> the counts a read_committed consumer finds for it, in order; read until every key
    has reached its final count (`until_final`) or nothing new came for a while, within `timeout`."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    final = RECORDS // KEYS
    counts: dict[str, list[int]] = collections.defaultdict(list)
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        deadline, quiet_since = time.monotonic() + timeout, time.monotonic()
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error():
                done = len(counts) == KEYS and all(c[-1] >= final for c in counts.values())
                if (until_final and done) or (not until_final and time.monotonic() - quiet_since > 3):
                    break
                continue
            quiet_since = time.monotonic()
            counts[message.key().decode()].append(int(message.value()))
    finally:
        consumer.close()
    return dict(counts)


def test_exactly_once_v2_counts_survive_a_killed_instance(broker_any, tmp_path):
    classpath = streams.classpath()
    bootstrap, tag = broker_any.bootstrap, uuid.uuid4().hex[:6]
    source, sink, app = f"eos-in-{tag}", f"eos-out-{tag}", f"eos-app-{tag}"
    create_topic(bootstrap, source, 4)
    create_topic(bootstrap, sink, 4)
    instances = [program_start(SOURCE, "streams-count", classpath, bootstrap, app, source, sink,
                               str(tmp_path / f"state-{i}"), str(RECORD_DELAY_MS)) for i in range(2)]
    try:
        for instance in instances:
            instance.wait_for(lambda e: e.get("state") == "RUNNING", timeout=90)
        _produce_digits(bootstrap, source)
        victim, survivor = instances
        victim.wait_for(lambda e: e["event"] == "processed" and e["count"] >= 100, timeout=60)
        victim.kill()
        counts = _committed_counts(bootstrap, sink, until_final=True, timeout=120)
        survivor.proc.terminate()  # closes cleanly (a shutdown hook), so exits with SIGTERM's status
        survivor.proc.wait(60)
        assert not [e for e in survivor.snapshot() if e["event"] == "error"]
    finally:
        for instance in instances:
            if instance.proc.poll() is None:
                instance.kill()
    processed_by_victim = max(e["count"] for e in victim.snapshot() if e["event"] == "processed")
    assert processed_by_victim < RECORDS
    # Read again to the end: no count past the final one came after the survivor's last commit.
    assert _committed_counts(bootstrap, sink, until_final=False, timeout=60) == counts
    assert counts == {f"d{k}": list(range(1, RECORDS // KEYS + 1)) for k in range(KEYS)}
