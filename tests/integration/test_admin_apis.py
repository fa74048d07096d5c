"""Admin APIs stock clients call, on kcoord and on the reference Kafka: CreatePartitions."""
from __future__ import annotations

import time
import uuid

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, describe, partitions
from wire.errors import ErrorCode

CREATE_PARTITIONS = 37


def _grow(bootstrap: str, *topics: tuple[str, int], validate_only: bool = False) -> dict[str, tuple[str, str | None]]:
    """Each topic's (error, message). By name: Kafka's order of results follows its hash sets."""
    with Connection.to(bootstrap, 10.0) as conn:
        v = conn.version(CREATE_PARTITIONS, 3)
        answer = conn.call(CREATE_PARTITIONS, v, {
            "topics": [{"name": name, "count": count, "assignments": None} for name, count in topics],
            "timeout_ms": 10000, "validate_only": validate_only})
    results = {r.name: (ErrorCode(r.error_code).name, r.error_message) for r in answer.results}
    assert len(results) == len(answer.results), answer.results  # one entry per name
    return results


def test_create_partitions_validates_and_grows_as_kafka_does(broker_any):
    topic = f"grow-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, topic, 2)
    assert _grow(broker_any.bootstrap, (topic, 4), validate_only=True) == {topic: ("NONE", None)}
    assert len(partitions(broker_any.bootstrap, topic)) == 2  # validate-only changed nothing
    assert _grow(broker_any.bootstrap, (topic, 4)) == {topic: ("NONE", None)}
    deadline = time.monotonic() + 10
    while len(partitions(broker_any.bootstrap, topic)) != 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(partitions(broker_any.bootstrap, topic)) == 4
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    not_more = ("INVALID_PARTITIONS", f"The topic {topic} currently has 4 partition(s); 3 would not be an increase.")
    # A name given twice gets one entry.
    assert _grow(broker_any.bootstrap, (missing, 1), (topic, 3), (topic, 4)) == {
        topic: ("INVALID_REQUEST", "Duplicate topic name."), missing: ("UNKNOWN_TOPIC_OR_PARTITION", None)}
    assert _grow(broker_any.bootstrap, (topic, 3), (missing, 2)) == {
        topic: not_more, missing: ("UNKNOWN_TOPIC_OR_PARTITION", None)}
    assert _grow(broker_any.bootstrap, (topic, 3), validate_only=True) == {topic: not_more}
    assert _grow(broker_any.bootstrap, (topic, 4)) == {topic: ("INVALID_PARTITIONS", "Topic already has 4 partition(s).")}


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_subscribed_consumers_rebalance_onto_new_partitions(broker_any, client):
    topic, group = f"grown-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, topic, 2)
    consumer = _consumer(client, broker_any.bootstrap, topic, group)
    try:
        assert _assigned(consumer, client, broker_any.bootstrap, group, 2) == [(topic, 0), (topic, 1)]
        assert _grow(broker_any.bootstrap, (topic, 5)) == {topic: ("NONE", None)}
        # The consumer's metadata refresh sees 5 partitions; it rejoins and gets them all.
        assert _assigned(consumer, client, broker_any.bootstrap, group, 5) == [(topic, p) for p in range(5)]
    finally:
        consumer.close()


def _consumer(client, bootstrap, topic, group):
    if client == "kafka-python":
        from kafka import KafkaConsumer

        from kcoord.conformance.member import subscribe_kafka_python

        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, metadata_max_age_ms=1000,
                          session_timeout_ms=10000, heartbeat_interval_ms=500)
        subscribe_kafka_python(c, [topic])
        return c
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "topic.metadata.refresh.interval.ms": 1000,
                  "session.timeout.ms": 10000})
    c.subscribe([topic])
    return c


def _assigned(consumer, client, bootstrap, group, count, timeout=60):
    """The group's Stable assignment once it covers `count` partitions (polling the consumer)."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        if client == "kafka-python":
            consumer.poll(timeout_ms=200)
        else:
            consumer.poll(0.2)
        view = describe(bootstrap, group)
        if view.state == "Stable":
            seen = sorted(tp for m in view.members for tp in m["assignment"])
            if len(seen) == count:
                return seen
    raise AssertionError(f"the group's assignment never covered {count} partitions (last seen {seen})")


def test_grown_partitions_and_their_records_survive_a_restart(tmp_path):
    from kcoord.testing.plugin import start_server
    from tests.integration.clients import produce

    server = start_server(data_dir=str(tmp_path))
    try:
        create_topic(server.bootstrap, "kept", 1)
        assert _grow(server.bootstrap, ("kept", 3)) == {"kept": ("NONE", None)}
        produce("confluent", server.bootstrap, "kept", 30)
        before = {p.index: p.high_watermark for p in server.app.broker.topics.get("kept").partitions}
    finally:
        server.stop()
    assert len(before) == 3 and sum(before.values()) == 30
    server = start_server(data_dir=str(tmp_path))
    try:
        assert {p.index: p.high_watermark for p in server.app.broker.topics.get("kept").partitions} == before
    finally:
        server.stop()
