"""APIs Java clients and Kafka's tools use beside the group ones, on kcoord and on the
reference Kafka: OffsetForLeaderEpoch."""
from __future__ import annotations

import uuid

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, end_offsets
from tests.integration.clients import produce
from wire.errors import ErrorCode

FETCH, LIST_OFFSETS, METADATA, OFFSET_FOR_LEADER_EPOCH = 1, 2, 3, 23


def _epochs(conn, topic) -> dict[int, int]:
    answer = conn.call(METADATA, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
    return {p.partition_index: p.leader_epoch for t in answer.topics for p in t.partitions}


def _end_of_epoch(conn, topic, asks, version=4) -> list[tuple[str, int, int]]:
    """(error, epoch, end offset) for each (partition, current epoch, epoch asked for)."""
    answer = conn.call(OFFSET_FOR_LEADER_EPOCH, version, {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
        {"partition": p, "current_leader_epoch": current, "leader_epoch": epoch} for p, current, epoch in asks]}]})
    [t] = answer.topics
    assert t.topic == topic
    assert [p.partition for p in t.partitions] == [p for p, _, _ in asks]
    return [(ErrorCode(p.error_code).name, p.leader_epoch, p.end_offset) for p in t.partitions]


def _fetch(conn, topic, partition, current_epoch, offset=0) -> tuple[str, bytes]:
    answer = conn.call(FETCH, 11, {
        "replica_id": -1, "max_wait_ms": 10, "min_bytes": 1, "max_bytes": 1 << 24, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": current_epoch,
                                                    "fetch_offset": offset, "log_start_offset": -1,
                                                    "partition_max_bytes": 1 << 24}]}]})
    [p] = answer.responses[0].partitions
    return ErrorCode(p.error_code).name, p.records or b""


def _latest(conn, topic, partition, current_epoch) -> tuple[str, int]:
    answer = conn.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "current_leader_epoch": current_epoch, "timestamp": -1}]}]})
    [p] = answer.topics[0].partitions
    return ErrorCode(p.error_code).name, p.offset


def test_offset_for_leader_epoch_answers_as_kafka_does(broker_any):
    topic = f"epochs-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, topic, 3)
    produce("confluent", broker_any.bootstrap, topic, 20)
    ends = end_offsets(broker_any.bootstrap, topic)
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        assert conn.versions[OFFSET_FOR_LEADER_EPOCH] == (2, 4)
        epochs = _epochs(conn, topic)
        assert set(epochs.values()) == {0}  # a fresh single-node partition: both brokers say 0
        for p in range(3):
            e = epochs[p]
            # The current epoch ends at the log end, whether or not the client names it.
            assert _end_of_epoch(conn, topic, [(p, -1, e), (p, e, e)]) == [("NONE", e, ends[p])] * 2
            assert _end_of_epoch(conn, topic, [(p, -1, e)], version=2) == [("NONE", e, ends[p])]
            # An epoch the partition never had (later, or none) is answered without an error but
            # with nothing known.
            assert _end_of_epoch(conn, topic, [(p, e, e + 1), (p, -1, -1)]) == [("NONE", -1, -1)] * 2
            # A client ahead of the leader, or behind it (-1 only means "not given"), is refused.
            assert _end_of_epoch(conn, topic, [(p, e + 1, e), (p, -2, e)]) == [
                ("UNKNOWN_LEADER_EPOCH", -1, -1), ("FENCED_LEADER_EPOCH", -1, -1)]
        assert _end_of_epoch(conn, topic, [(7, -1, 0)]) == [("UNKNOWN_TOPIC_OR_PARTITION", -1, -1)]
        assert _end_of_epoch(conn, f"no-{topic}", [(0, -1, 0)]) == [("UNKNOWN_TOPIC_OR_PARTITION", -1, -1)]

        # Fetch and ListOffsets fence by the same epoch; Fetch alone takes any negative one as unset.
        e = epochs[0]
        assert _fetch(conn, topic, 0, e + 1) == ("UNKNOWN_LEADER_EPOCH", b"")
        assert _fetch(conn, topic, 0, -2)[0] == _fetch(conn, topic, 0, e)[0] == "NONE"
        assert _latest(conn, topic, 0, e + 1) == ("UNKNOWN_LEADER_EPOCH", -1)
        assert _latest(conn, topic, 0, -2) == ("FENCED_LEADER_EPOCH", -1)
        assert _latest(conn, topic, 0, e) == ("NONE", ends[0])

    empty = f"epochs-empty-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, empty, 1)
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        assert _end_of_epoch(conn, empty, [(0, -1, 0)]) == [("NONE", 0, 0)]
