"""APIs Java clients and Kafka's tools use beside the group ones, on kcoord and on the
reference Kafka: OffsetForLeaderEpoch, DescribeLogDirs, DescribeProducers. Values that are
the broker's own (producer ids, the log dir, the volume's bytes) are compared by shape."""
from __future__ import annotations

import os
import time
import uuid

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, end_offsets
from tests.integration.clients import produce
from wire import records as R
from wire.errors import ErrorCode

FETCH, LIST_OFFSETS, METADATA, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_LOG_DIRS, DESCRIBE_PRODUCERS = 1, 2, 3, 23, 35, 61


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
        # Stored batches carry the epoch they were written in: consumers commit it with their
        # offsets and validate their position against it (OffsetForLeaderEpoch) when resuming.
        error, records = _fetch(conn, topic, 0, e)
        assert {b.partition_leader_epoch for b in R.iter_batches(records)} == {e}

    empty = f"epochs-empty-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, empty, 1)
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        assert _end_of_epoch(conn, empty, [(0, -1, 0)]) == [("NONE", 0, 0)]


def _log_dirs(conn, topics, version):
    answer = conn.call(DESCRIBE_LOG_DIRS, version, {"topics": topics})
    assert answer.get("error_code", 0) == 0
    [result] = answer.results  # one log dir on both brokers
    assert result.error_code == 0 and result.log_dir
    return result, {(t.name, p.partition_index): p for t in result.topics for p in t.partitions}


def test_describe_log_dirs_sizes_are_the_stored_batches(broker_any):
    topic = f"dirs-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, topic, 2)
    produce("confluent", broker_any.bootstrap, topic, 30)
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        assert conn.versions[DESCRIBE_LOG_DIRS] == (1, 5)
        # What a fetch from the start returns is what the log holds, byte for byte.
        stored = {p: len(_fetch(conn, topic, p, -1)[1]) for p in range(2)}
        assert all(stored.values())
        for version in (1, 3, 4, 5):
            # Partitions and topics the broker does not hold are left out without an error.
            result, parts = _log_dirs(conn, [{"topic": topic, "partitions": [0, 1, 9]},
                                             {"topic": f"no-{topic}", "partitions": [0]}], version)
            assert [t.name for t in result.topics] == [topic]
            assert {k: (p.partition_size, p.offset_lag, p.is_future_key) for k, p in parts.items()} == {
                (topic, 0): (stored[0], 0, False), (topic, 1): (stored[1], 0, False)}
            if version >= 4:
                # Kafka gives its volume's bytes; kcoord in memory has no volume (-1).
                assert result.total_bytes >= result.usable_bytes >= -1
                assert (result.total_bytes == -1) == (result.usable_bytes == -1)
        result, _ = _log_dirs(conn, [], 4)
        assert result.topics == []
        _, parts = _log_dirs(conn, None, 4)  # every topic
        assert {k for k in parts if k[0] == topic} == {(topic, 0), (topic, 1)}


def test_describe_log_dirs_names_the_data_dir(tmp_path):
    from kcoord.api.describe_log_dirs import IN_MEMORY
    from kcoord.testing.plugin import start_server

    for data_dir in (None, str(tmp_path)):
        server = start_server(data_dir=data_dir)
        try:
            create_topic(server.bootstrap, "kept", 1)
            produce("confluent", server.bootstrap, "kept", 5)
            with Connection.to(server.bootstrap, 10.0) as conn:
                result, parts = _log_dirs(conn, [{"topic": "kept", "partitions": [0]}], 4)
            [partition] = server.app.broker.topics.get("kept").partitions
            assert parts[("kept", 0)].partition_size == partition.size_bytes() > 0
            if data_dir is None:
                assert (result.log_dir, result.total_bytes, result.usable_bytes) == (IN_MEMORY, -1, -1)
            else:
                assert result.log_dir == os.path.abspath(data_dir)
                assert result.total_bytes >= result.usable_bytes > 0
        finally:
            server.stop()


def _producers(conn, *asks) -> dict[tuple[str, int], tuple[str, str | None, list]]:
    answer = conn.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": t, "partition_indexes": ps} for t, ps in asks]})
    assert [t.name for t in answer.topics] == [t for t, _ in asks]
    return {(t.name, p.partition_index): (ErrorCode(p.error_code).name, p.error_message, p.active_producers)
            for t in answer.topics for p in t.partitions}


def test_describe_producers_shows_idempotent_producers_state(broker_any):
    idempotent, plain = f"idem-{uuid.uuid4().hex[:8]}", f"plain-{uuid.uuid4().hex[:8]}"
    create_topic(broker_any.bootstrap, idempotent, 2)
    create_topic(broker_any.bootstrap, plain, 1)
    before = int(time.time() * 1000) - 1000
    produce("confluent", broker_any.bootstrap, idempotent, 40, idempotent=True)
    produce("confluent", broker_any.bootstrap, plain, 5)
    after = int(time.time() * 1000) + 1000
    ends = end_offsets(broker_any.bootstrap, idempotent)
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        assert conn.versions[DESCRIBE_PRODUCERS] == (0, 0)
        seen = _producers(conn, (idempotent, [0, 1, 9]), (plain, [0]), (f"no-{plain}", [0]))
    ids = set()
    for p in (0, 1):
        error, message, [state] = seen[(idempotent, p)]
        assert (error, message) == ("NONE", None)
        ids.add(state.producer_id)
        # One producer session from sequence 0: its last sequence is the partition's last offset.
        assert (state.producer_epoch, state.last_sequence, state.coordinator_epoch, state.current_txn_start_offset) == (
            0, ends[p] - 1, -1, -1)
        assert before <= state.last_timestamp <= after
    assert len(ids) == 1 and ids.pop() >= 0
    assert seen[(plain, 0)] == ("NONE", None, [])  # records without a producer id leave no state
    # Kafka words the two kinds of "unknown" differently.
    assert seen[(idempotent, 9)] == ("UNKNOWN_TOPIC_OR_PARTITION", None, [])
    assert seen[(f"no-{plain}", 0)] == ("UNKNOWN_TOPIC_OR_PARTITION",
                                        "This server does not host this topic-partition.", [])
