"""Admin APIs stock clients call, on kcoord and on the reference Kafka: CreatePartitions."""
from __future__ import annotations

import time
import uuid

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, describe, partitions, produce_batch
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


def test_grown_partitions_deleted_records_and_the_rest_survive_a_restart(tmp_path):
    from kcoord.testing.plugin import start_server
    from tests.integration.clients import produce

    server = start_server(data_dir=str(tmp_path))
    try:
        create_topic(server.bootstrap, "kept", 1)
        assert _grow(server.bootstrap, ("kept", 3)) == {"kept": ("NONE", None)}
        produce("confluent", server.bootstrap, "kept", 30)
        hw = {p.index: p.high_watermark for p in server.app.broker.topics.get("kept").partitions}
        assert _delete_records(server.bootstrap, "kept", {0: -1, 1: 1}) == {0: ("NONE", hw[0]), 1: ("NONE", 1)}
        before = {p.index: (p.log_start_offset, p.high_watermark) for p in server.app.broker.topics.get("kept").partitions}
    finally:
        server.stop()
    assert len(before) == 3 and sum(hw.values()) == 30
    server = start_server(data_dir=str(tmp_path))
    try:
        kept = server.app.broker.topics.get("kept").partitions
        assert {p.index: (p.log_start_offset, p.high_watermark) for p in kept} == before
        assert _fetch_error_and_earliest(server.bootstrap, "kept", hw[0]) == ("NONE", hw[0], hw[0])
    finally:
        server.stop()


DELETE_RECORDS, FETCH, LIST_OFFSETS = 21, 1, 2


def _delete_records(bootstrap: str, topic: str, offsets: dict[int, int]) -> dict[int, tuple[str, int]]:
    with Connection.to(bootstrap, 10.0) as conn:
        v = conn.version(DELETE_RECORDS, 2)
        answer = conn.call(DELETE_RECORDS, v, {"topics": [{"name": topic, "partitions": [
            {"partition_index": p, "offset": o} for p, o in offsets.items()]}], "timeout_ms": 10000})
    return {p.partition_index: (ErrorCode(p.error_code).name, p.low_watermark) for p in answer.topics[0].partitions}


def _fetch_error_and_earliest(bootstrap: str, topic: str, offset: int) -> tuple[str, int, int]:
    """Fetch's error and log start offset at `offset`, and ListOffsets' earliest."""
    with Connection.to(bootstrap, 10.0) as conn:
        f = conn.call(FETCH, 11, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                  "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                      {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                                       "log_start_offset": -1,
                                                                       "partition_max_bytes": 1 << 20}]}],
                                  "forgotten_topics_data": [], "rack_id": ""})
        part = f.responses[0].partitions[0]
        lo = conn.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -2}]}]})
    return ErrorCode(part.error_code).name, part.log_start_offset, lo.topics[0].partitions[0].offset


def test_delete_records_moves_the_log_start_as_kafka_does(broker_any):
    from tests.integration.clients import consume

    topic = f"trim-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, topic, 2)
    from wire.records import build_batch
    # 10 records on partition 0, one per batch. Stamped now: Kafka's time retention (checked
    # every 5 min) deletes records stamped 1970, which once emptied the partition while the
    # consumer below read it.
    now = int(time.time() * 1000)
    assert [produce_batch(broker_any.bootstrap, topic, 0, build_batch([(None, b"v%d" % i, now)]))
            for i in range(10)] == list(range(10))
    assert _delete_records(broker_any.bootstrap, topic, {0: 4, 1: 0}) == {0: ("NONE", 4), 1: ("NONE", 0)}
    assert _delete_records(broker_any.bootstrap, topic, {0: 2}) == {0: ("NONE", 4)}  # never moves back
    assert _delete_records(broker_any.bootstrap, topic, {0: 11, 1: 1}) == {
        0: ("OFFSET_OUT_OF_RANGE", -1), 1: ("OFFSET_OUT_OF_RANGE", -1)}
    assert _delete_records(broker_any.bootstrap, f"{topic}-none", {0: 0}) == {0: ("UNKNOWN_TOPIC_OR_PARTITION", -1)}
    # Out of range: the fetch learns no offsets (-1), ListOffsets gives the new start.
    assert _fetch_error_and_earliest(broker_any.bootstrap, topic, 2) == ("OFFSET_OUT_OF_RANGE", -1, 4)
    assert _fetch_error_and_earliest(broker_any.bootstrap, topic, 4)[0] == "NONE"
    # A new group starting from the earliest offset reads from the new start.
    got = consume("confluent", broker_any.bootstrap, topic, f"g-{uuid.uuid4().hex[:8]}", 6)
    assert sorted(got) == [(0, o) for o in range(4, 10)]
    assert _delete_records(broker_any.bootstrap, topic, {0: -1}) == {0: ("NONE", 10)}
    assert _fetch_error_and_earliest(broker_any.bootstrap, topic, 10) == ("NONE", 10, 10)


INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS, DESCRIBE_CONFIGS = 44, 33, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _incremental(conn, topic, *ops, validate_only=False):
    r = conn.call(INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{"resource_type": 2, "resource_name": topic, "configs": [
        {"name": n, "config_operation": op, "value": v} for n, op, v in ops]}], "validate_only": validate_only})
    return [(ErrorCode(x.error_code).name, x.error_message) for x in r.responses]


def _alter(conn, topic, *configs):
    r = conn.call(ALTER_CONFIGS, 2, {"resources": [{"resource_type": 2, "resource_name": topic, "configs": [
        {"name": n, "value": v} for n, v in configs]}], "validate_only": False})
    return [(ErrorCode(x.error_code).name, x.error_message) for x in r.responses]


def _own_configs(conn, topic):
    """The topic's own configs (source DYNAMIC_TOPIC_CONFIG), as DescribeConfigs reports them."""
    r = conn.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": 2, "resource_name": topic,
                                                       "configuration_keys": None}],
                                        "include_synonyms": False, "include_documentation": False})
    return {c.name: c.value for c in r.results[0].configs if c.config_source == 1}


def _settled(read, expected, timeout_s=10.0):
    """What `read()` gives once it equals `expected`, or its last answer after `timeout_s`. Kafka's
    controller accepts an alter before the broker's metadata image (which DescribeConfigs reads)
    has it, so a describe right after the alter may still show the old value there."""
    deadline = time.monotonic() + timeout_s
    got = read()
    while got != expected and time.monotonic() < deadline:
        time.sleep(0.1)
        got = read()
    return got


def _configs_settle(conn, topic, expected):
    return _settled(lambda: _own_configs(conn, topic), expected)


def test_topic_configs_are_altered_and_refused_as_kafka_does(broker_any):
    topic = f"cfg-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, topic, 1)
    ok = [("NONE", None)]
    with Connection.to(broker_any.bootstrap, 10.0) as c:
        assert _incremental(c, topic, ("retention.ms", SET, "1000"), ("cleanup.policy", SET, "compact")) == ok
        expect = {"retention.ms": "1000", "cleanup.policy": "compact"}
        assert _configs_settle(c, topic, expect) == expect
        assert _incremental(c, topic, ("cleanup.policy", APPEND, "delete")) == ok
        expect = {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
        assert _configs_settle(c, topic, expect) == expect
        assert _incremental(c, topic, ("cleanup.policy", SUBTRACT, "compact")) == ok
        expect = {"retention.ms": "1000", "cleanup.policy": "delete"}
        assert _configs_settle(c, topic, expect) == expect
        assert _incremental(c, topic, ("retention.ms", DELETE, None)) == ok
        assert _configs_settle(c, topic, {"cleanup.policy": "delete"}) == {"cleanup.policy": "delete"}
        assert _incremental(c, topic, ("retention.ms", SET, "7"), validate_only=True) == ok
        assert _own_configs(c, topic) == {"cleanup.policy": "delete"}
        assert _incremental(c, topic, ("foo.bar", SET, "1")) == [("INVALID_CONFIG", "Unknown topic config name: foo.bar")]
        assert _incremental(c, topic, ("retention.ms", SET, "abc")) == [
            ("INVALID_CONFIG", "Invalid value abc for configuration retention.ms: Not a number of type LONG")]
        assert _incremental(c, topic, ("retention.ms", APPEND, "5")) == [
            ("INVALID_CONFIG", "Can't APPEND to key retention.ms because its type is not LIST.")]
        assert _incremental(c, topic, ("cleanup.policy", SET, "bogus")) == [
            ("INVALID_CONFIG", "Invalid value bogus for configuration cleanup.policy: String must be one of: "
                               "compact, delete")]
        assert _incremental(c, topic, ("compression.type", SET, "brotli")) == [
            ("INVALID_CONFIG", "Invalid value brotli for configuration compression.type: String must be one of: "
                               "uncompressed, zstd, lz4, snappy, gzip, producer")]
        assert _incremental(c, topic, ("retention.ms", SET, "7"), ("retention.ms", SET, "8")) == [
            ("INVALID_REQUEST", "Error due to duplicate config keys")]
        assert _incremental(c, f"{topic}-none", ("retention.ms", SET, "1")) == [
            ("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{topic}-none' does not exist.")]
        assert _own_configs(c, topic) == {"cleanup.policy": "delete"}  # nothing refused was applied
        # AlterConfigs replaces the whole set.
        assert _alter(c, topic, ("segment.ms", "100000"), ("retention.ms", "5000")) == ok
        expect = {"segment.ms": "100000", "retention.ms": "5000"}
        assert _configs_settle(c, topic, expect) == expect
        assert _alter(c, topic, ("foo", "1")) == [("INVALID_CONFIG", "Unknown topic config name: foo")]
        assert _alter(c, f"{topic}-none", ("retention.ms", "1")) == [
            ("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{topic}-none' does not exist.")]


def test_confluent_admin_client_grows_configures_and_trims(broker_any):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       NewPartitions)

    from tests.integration.clients import produce

    topic = f"adm-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, topic, 1)
    produce("confluent", broker_any.bootstrap, topic, 5)
    admin = AdminClient({"bootstrap.servers": broker_any.bootstrap})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)

    def retention():
        described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
        return next(iter(described.values())).result(30)["retention.ms"].value

    assert _settled(retention, "60000") == "60000"
    deleted = admin.delete_records([TopicPartition(topic, 0, 3)])
    low = next(iter(deleted.values())).result(30)
    assert low.low_watermark == 3
    deadline = time.monotonic() + 10
    while len(partitions(broker_any.bootstrap, topic)) != 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(partitions(broker_any.bootstrap, topic)) == 3
