"""What a broker answers about partitions it does not lead, and about leader epochs, on a
three-broker kcoord and on the three-node reference Kafka, request by request, compared.

One partition with three replicas: requests to its leader and to a follower (Produce, Fetch,
ListOffsets, OffsetForLeaderEpoch, DeleteRecords), with the client's leader epoch current, old
and new; then the leader shuts down and the same questions go to the new leader, the epoch
that ended among them. Kafka's answers are the reference; kcoord's must be the same."""
from __future__ import annotations

import time
import uuid

from kcoord.protocol_client import Connection
from kcoord.testing.failover import KafkaCluster, KcoordCluster, _leaders
from wire import records as R
from wire.errors import ErrorCode

PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH, DELETE_RECORDS, METADATA = 0, 1, 2, 23, 21, 3


def _address(cluster, node: int) -> str:
    """Broker `node`'s address, from Metadata."""
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(METADATA, 9, {"topics": [], "allow_auto_topic_creation": False,
                                         "include_cluster_authorized_operations": False,
                                         "include_topic_authorized_operations": False})
        return next(f"{b.host}:{b.port}" for b in answer.brokers if b.node_id == node)


def _state(cluster, topic: str) -> tuple[int, int, list[int]]:
    """(leader, leader epoch, replicas) of partition 0."""
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(METADATA, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                         "include_cluster_authorized_operations": False,
                                         "include_topic_authorized_operations": False})
        [p] = answer.topics[0].partitions
        return p.leader_id, p.leader_epoch, list(p.replica_nodes)


def _batch(n: int) -> bytes:
    now = int(time.time() * 1000)   # Kafka's time retention deletes records stamped long ago
    return R.build_batch([(f"k{i}".encode(), f"v{i}".encode(), now) for i in range(n)], 0)


def _ask(cluster, node: int, topic: str, epoch: int) -> dict:
    """Every question about partition 0 asked of broker `node`, the client naming `epoch` as the
    leader epoch where the request has one; each answer's error (and what else must agree)."""
    out = {}
    with Connection.to(_address(cluster, node)) as conn:
        produced = conn.call(PRODUCE, 10, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": _batch(2)}]}]})
        p = produced.responses[0].partition_responses[0]
        leader = p.get("current_leader")
        # Which broker leads differs between the clusters (placement): whether the answer names
        # the partition's leader and its epoch is what compares.
        current = None if leader is None or leader.leader_id < 0 else (leader.leader_id, leader.leader_epoch)
        out["produce"] = (ErrorCode(p.error_code).name, None if current is None else current == _state(cluster, topic)[:2])
        for version in (10, 12):
            fetched = conn.call(FETCH, version, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": epoch,
                                                            "fetch_offset": 0, "log_start_offset": -1,
                                                            "partition_max_bytes": 1 << 20}]}]})
            f = fetched.responses[0].partitions[0]
            out[f"fetch v{version}"] = ErrorCode(f.error_code).name
        listed = conn.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": epoch, "timestamp": -1}]}]})
        out["list offsets"] = ErrorCode(listed.topics[0].partitions[0].error_code).name
        asked = conn.call(OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
            {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": epoch,
                                             "leader_epoch": max(epoch, 0)}]}]})
        e = asked.topics[0].partitions[0]
        out["offset for leader epoch"] = (ErrorCode(e.error_code).name, e.leader_epoch)
        deleted = conn.call(DELETE_RECORDS, 2, {"timeout_ms": 5000, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}]})
        out["delete records"] = ErrorCode(deleted.topics[0].partitions[0].error_code).name
    return out


def _questions(cluster, topic: str) -> dict:
    leader, epoch, replicas = _state(cluster, topic)
    follower = next(b for b in replicas if b != leader)
    return {
        "leader, current epoch": _ask(cluster, leader, topic, epoch),
        "leader, no epoch": _ask(cluster, leader, topic, -1),
        "follower, current epoch": _ask(cluster, follower, topic, epoch),
        "leader, new epoch": _ask(cluster, leader, topic, epoch + 1),
    }


def _scenario(cluster) -> dict:
    topic = f"leaders-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 1)
    answers = {"before": _questions(cluster, topic)}
    leader, epoch, _ = _state(cluster, topic)
    cluster.stop(leader)
    try:
        deadline = time.monotonic() + 60
        while _leaders(cluster.bootstrap, topic).get(0) in (None, -1, leader):
            assert time.monotonic() < deadline, "no new leader"
            time.sleep(0.2)
        new_leader, new_epoch, _ = _state(cluster, topic)
        with Connection.to(_address(cluster, new_leader)) as conn:
            # The epoch that ended: answered with where the next one starts (what was written by then).
            asked = conn.call(OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": new_epoch,
                                                 "leader_epoch": epoch}]}]})
            e = asked.topics[0].partitions[0]
            answers["after"] = {"epoch went up": new_epoch > epoch, "old leader still leads": new_leader == leader,
                                "the ended epoch": (ErrorCode(e.error_code).name, e.leader_epoch == epoch, e.end_offset),
                                "new leader, old epoch": _ask(cluster, new_leader, topic, epoch),
                                "new leader, its epoch": _ask(cluster, new_leader, topic, new_epoch)}
    finally:
        cluster.start(leader)
    return answers


def test_answers_about_leadership_and_epochs_match_kafka(reference_kafka_cluster):
    kafka = _scenario(KafkaCluster(reference_kafka_cluster))
    with KcoordCluster() as kcoord:
        ours = _scenario(kcoord)
    assert ours == kafka
