"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) against a three-broker
kcoord. As raw requests: a move in progress while a follower throttle holds the copy back (List,
Metadata, DescribeLogDirs per broker report it as Kafka does), done once the throttle goes (the
removed leader hands over), a cancel, and Kafka's refusals. With Kafka's own
`kafka-reassign-partitions`: --execute with --throttle, --verify in progress then completed
(the throttles cleared), --cancel, and `kafka-leader-election` after a reordering. Across restarts
with a data dir: a move in progress and a broker's own throttle come back, and the move finishes.
With ACLs on: Alter on the cluster to move, Describe to list."""
from __future__ import annotations

import json
import time
import uuid

from kafka import KafkaProducer

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic
from kcoord.testing.failover import KcoordCluster
from kcoord.testing.kafka_tools import ToolSession
from wire.errors import ErrorCode

BROKER = 4
SET, DELETE = 0, 1
DEFAULT_CONFIG = 5   # DescribeConfigs' ConfigSource


def _address(cluster, node: int) -> str:
    return "%s:%d" % cluster.app.cluster.node(node).advertised


def _filled_topic(cluster) -> str:
    """A new topic with partitions on [0, 1] and [1, 0], 25 records of 100 bytes in each."""
    topic = f"r-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.bootstrap, topic, assignment=[[0, 1], [1, 0]], wait=False)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(50):
        producer.send(topic, value=b"v" * 100, partition=i % 2)
    producer.close()
    return topic


def _alter(cluster, moves: dict[tuple[str, int], list[int] | None], version: int = 1, **extra):
    topics: dict[str, list] = {}
    for (topic, index), replicas in moves.items():
        topics.setdefault(topic, []).append({"partition_index": index, "replicas": replicas})
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(45, version, {"timeout_ms": 30000, "topics": [
            {"name": t, "partitions": ps} for t, ps in topics.items()], **extra})
    assert answer.error_code == ErrorCode.NONE
    return {(t.name, p.partition_index): (ErrorCode(p.error_code).name, p.error_message)
            for t in answer.responses for p in t.partitions}


def _list(cluster, topics=None):
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(46, 0, {"timeout_ms": 30000, "topics": topics})
    assert answer.error_code == ErrorCode.NONE
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in answer.topics for p in t.partitions}


def _metadata(cluster, topic: str):
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    # The ISR is a set: its order is Kafka's history of AlterPartition, kcoord's replica order.
    return {p.partition_index: (p.leader_id, list(p.replica_nodes), sorted(p.isr_nodes))
            for t in answer.topics for p in t.partitions}


def _log_dir_sizes(cluster, node: int, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (size, offset lag) that broker `node` reports for its replicas of `topic`."""
    with Connection.to(_address(cluster, node)) as conn:
        answer = conn.call(35, 4, {"topics": [{"topic": topic, "partitions": [0, 1]}]})
    return {p.partition_index: (p.partition_size, p.offset_lag)
            for d in answer.results for t in d.topics for p in t.partitions}


def _alter_configs(address: str, resource_type: int, name: str, ops: list[tuple[str, int, str | None]]) -> None:
    with Connection.to(address) as conn:
        answer = conn.call(44, 1, {"resources": [{
            "resource_type": resource_type, "resource_name": name,
            "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}],
            "validate_only": False})
    assert answer.responses[0].error_code == ErrorCode.NONE, answer.responses[0].error_message


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_move_held_by_a_throttle_then_done_then_cancelled_and_kafkas_refusals():
    with KcoordCluster() as cluster:
        topic = _filled_topic(cluster)
        size = _log_dir_sizes(cluster, 0, topic)[0][0]
        assert size > 0 and _log_dir_sizes(cluster, 2, topic) == {}, "broker 2 holds no replica yet"

        # Broker 2's follower throttle holds the copy of partition 0 to 1 byte a second.
        _alter_configs(_address(cluster, 2), BROKER, "2", [("follower.replication.throttled.rate", SET, "1")])
        _alter_configs(cluster.bootstrap, 2, topic, [("follower.replication.throttled.replicas", SET, "0:2")])
        assert _alter(cluster, {(topic, 0): [2, 1]}) == {(topic, 0): ("NONE", None)}
        assert _list(cluster) == {(topic, 0): ([2, 1, 0], [2], [0])}
        assert _list(cluster, [{"name": topic, "partition_indexes": [1]}]) == {}
        assert _metadata(cluster, topic)[0] == (0, [2, 1, 0], [0, 1])
        copied, lag = _log_dir_sizes(cluster, 2, topic)[0]
        assert copied < size and lag > 0

        # Without the throttle it copies at the copy rate; then 0 goes and 2, first in sync, leads.
        _alter_configs(_address(cluster, 2), BROKER, "2", [("follower.replication.throttled.rate", DELETE, None)])
        _wait(lambda: not _list(cluster), "the reassignment never completed")
        assert _metadata(cluster, topic)[0] == (2, [2, 1], [1, 2])
        assert _log_dir_sizes(cluster, 2, topic) == {0: (size, 0)}
        assert 0 not in _log_dir_sizes(cluster, 0, topic)

        # A cancel puts back the replicas before the move.
        _alter_configs(_address(cluster, 2), BROKER, "2", [("follower.replication.throttled.rate", SET, "1")])
        _alter_configs(cluster.bootstrap, 2, topic, [("follower.replication.throttled.replicas", SET, "*")])
        assert _alter(cluster, {(topic, 1): [2, 0]}) == {(topic, 1): ("NONE", None)}
        assert _list(cluster) == {(topic, 1): ([2, 0, 1], [2], [1])}
        assert _alter(cluster, {(topic, 1): None}) == {(topic, 1): ("NONE", None)}
        # As Kafka's PartitionReassignmentRevert: the replicas without the added ones, in their order.
        assert _list(cluster) == {} and _metadata(cluster, topic)[1] == (1, [0, 1], [0, 1])

        assert _alter(cluster, {
            (topic, 1): None, (topic, 5): [0], ("nope", 0): [0], (topic, 0): [0, 9],
        }) == {
            (topic, 1): ("NO_REASSIGNMENT_IN_PROGRESS", "No partition reassignment is in progress."),
            (topic, 5): ("UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find partition {topic}:5."),
            ("nope", 0): ("UNKNOWN_TOPIC_OR_PARTITION", "Unable to find a topic named nope."),
            (topic, 0): ("INVALID_REPLICA_ASSIGNMENT",
                         "The manual partition assignment includes broker 9, but no such broker is registered."),
        }
        assert _alter(cluster, {(topic, 0): [1, 1]}) == {(topic, 0): (
            "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes the broker 1 more than once.")}
        assert _alter(cluster, {(topic, 0): []}, version=0) == {(topic, 0): (
            "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty replica list.")}
        assert _alter(cluster, {(topic, 0): [0, 1, 2]}, allow_replication_factor_change=False) == {(topic, 0): (
            "INVALID_REPLICATION_FACTOR", "The replication factor is changed from 2 to 3")}
        assert _list(cluster) == {}


def _plan(tmp_path, name: str, topic: str, moves: dict[int, list[int]]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": rs, "log_dirs": ["any"] * len(rs)} for p, rs in moves.items()]}))
    return str(path)


def _broker_throttles(cluster) -> dict[int, dict[str, str]]:
    """Each broker's replication throttle rates set on it, as DescribeConfigs reports them."""
    out = {}
    for node in range(3):
        with Connection.to(_address(cluster, node)) as conn:
            answer = conn.call(32, 4, {"resources": [{"resource_type": BROKER, "resource_name": str(node),
                                                      "configuration_keys": [
                                                          "leader.replication.throttled.rate",
                                                          "follower.replication.throttled.rate"]}],
                                       "include_synonyms": False, "include_documentation": False})
        out[node] = {c.name: c.value for c in answer.results[0].configs if c.config_source != DEFAULT_CONFIG}
    return out


def test_kafka_reassign_partitions_executes_verifies_and_cancels_on_kcoord(tmp_path):
    with KcoordCluster() as cluster, ToolSession() as tools:
        topic = _filled_topic(cluster)

        def tool(*args):
            result = tools.run("reassign-partitions", cluster.bootstrap, *args)
            return result.code, (result.stdout + result.stderr).replace(topic, "T")

        move = _plan(tmp_path, "move", topic, {0: [2, 1]})
        code, out = tool("--reassignment-json-file", move, "--execute", "--throttle", "1")
        assert code == 0 and "Successfully started partition reassignment for T-0" in out, out
        throttled = _broker_throttles(cluster)
        assert all(throttled[n] == {"leader.replication.throttled.rate": "1",
                                    "follower.replication.throttled.rate": "1"} for n in range(3)), throttled
        code, out = tool("--reassignment-json-file", move, "--verify")
        assert code == 0 and "Reassignment of partition T-0 is still in progress." in out, out

        # Resubmitted with a higher throttle (--additional), as Kafka's tool says to.
        code, out = tool("--reassignment-json-file", move, "--execute", "--additional", "--throttle", "100000000")
        assert code == 0, out
        _wait(lambda: not _list(cluster), "the reassignment never completed")
        code, out = tool("--reassignment-json-file", move, "--verify")
        assert code == 0 and "Reassignment of partition T-0 is completed." in out, out
        assert "Clearing broker-level throttles on brokers 0,1,2" in out and "Clearing topic-level throttles" in out
        assert _broker_throttles(cluster) == {0: {}, 1: {}, 2: {}}
        assert _metadata(cluster, topic)[0] == (2, [2, 1], [1, 2])

        # The preferred leader of a reordered partition takes over with kafka-leader-election.
        code, out = tool("--reassignment-json-file", _plan(tmp_path, "reorder", topic, {0: [1, 2]}), "--execute")
        assert code == 0 and _metadata(cluster, topic)[0] == (2, [1, 2], [1, 2]), out
        election = tools.run("leader-election", cluster.bootstrap, "--election-type", "preferred",
                             "--topic", topic, "--partition", "0")
        assert election.code == 0, election.stdout + election.stderr
        assert _metadata(cluster, topic)[0][0] == 1

        back = _plan(tmp_path, "back", topic, {1: [2, 0]})
        code, out = tool("--reassignment-json-file", back, "--execute", "--throttle", "1")
        assert code == 0 and _list(cluster) == {(topic, 1): ([2, 0, 1], [2], [1])}, out
        code, out = tool("--reassignment-json-file", back, "--cancel")
        assert code == 0 and "Successfully cancelled partition reassignment for: T-1" in out, out
        assert _list(cluster) == {} and _metadata(cluster, topic)[1] == (1, [0, 1], [0, 1])
        code, out = tool("--reassignment-json-file", back, "--verify")
        assert "There is no active reassignment of partition T-1, but replica set is 0,1 rather than 2,0" in out, out


def test_reassignments_need_alter_and_listing_needs_describe_on_the_cluster():
    from kcoord.security.acls import CLUSTER_NAME, WILDCARD, Acl, Operation, PatternType, Permission, ResourceType
    from kcoord.testing.plugin import start_server

    server = start_server(acls=True)
    try:
        with Connection.to(server.bootstrap) as conn:
            def alter():
                return conn.call(45, 1, {"timeout_ms": 30000, "topics": [
                    {"name": "t", "partitions": [{"partition_index": 0, "replicas": [0]}]}]})

            def listing():
                return conn.call(46, 0, {"timeout_ms": 30000, "topics": None})

            denied = "Cluster authorization failed."
            a = alter()
            assert (a.error_code, a.error_message) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied)
            assert [(p.error_code, p.error_message) for t in a.responses for p in t.partitions] == [
                (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied)]
            assert (listing().error_code, listing().error_message) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied)
            server.app.server.acls.create([Acl(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL,
                                               "User:ANONYMOUS", WILDCARD, Operation.named("Describe"),
                                               Permission.ALLOW)])
            assert listing().error_code == ErrorCode.NONE
            assert alter().error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    finally:
        server.stop()


def test_a_move_in_progress_and_a_brokers_throttle_survive_a_restart(tmp_path):
    settings = {"data_dir": str(tmp_path / "data")}
    with KcoordCluster(**settings) as cluster:
        topic = _filled_topic(cluster)
        _alter_configs(_address(cluster, 2), BROKER, "2", [("follower.replication.throttled.rate", SET, "1")])
        _alter_configs(cluster.bootstrap, 2, topic, [("follower.replication.throttled.replicas", SET, "*")])
        assert _alter(cluster, {(topic, 0): [2, 1]}) == {(topic, 0): ("NONE", None)}
    with KcoordCluster(**settings) as cluster:
        assert _list(cluster) == {(topic, 0): ([2, 1, 0], [2], [0])}
        assert _metadata(cluster, topic)[0] == (0, [2, 1, 0], [0, 1])
        assert _broker_throttles(cluster)[2] == {"follower.replication.throttled.rate": "1"}
        _alter_configs(_address(cluster, 2), BROKER, "2", [("follower.replication.throttled.rate", DELETE, None)])
        _wait(lambda: not _list(cluster), "the reassignment never completed after the restart")
        assert _metadata(cluster, topic)[0] == (2, [2, 1], [1, 2])
    with KcoordCluster(**settings) as cluster:
        assert _list(cluster) == {} and _metadata(cluster, topic)[0] == (2, [2, 1], [1, 2])
