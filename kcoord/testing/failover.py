"""A three-broker cluster under test, kcoord's or Kafka's, behind one surface: what the failover
scenarios do to a cluster and ask of it, so that each runs unchanged on both.

    with KcoordCluster() as cluster:                 # 3 brokers in one in-process kcoord
        ...
    cluster = KafkaCluster(reference_kafka_cluster)   # the three-node reference Kafka
    cluster.create_topic("t", 6)                     # replication factor 3
    node = cluster.coordinator_of("g")               # FindCoordinator, as a client asks
    cluster.stop(node); cluster.start(node)          # controlled shutdown, and back
    cluster.kill(node)                               # kill -9 (fenced after its session)
    cluster.wait_coordinator_moved("g", node)        # until another broker answers for g

Group ids coordinated by one broker: `groups_on(node, n, prefix)`, from the __consumer_offsets
partition leaders Metadata reports and Kafka's group-to-partition hash.
"""
from __future__ import annotations

import time

from kcoord.config import ServerConfig
from kcoord.coordinator.config import offsets_partition_for


def _find(bootstrap: str, group: str) -> int:
    """The node id FindCoordinator names (-1: none), asking each broker until one answers."""
    from kcoord.protocol_client import Connection, ProtocolError

    for address in bootstrap.split(","):
        try:
            with Connection.to(address, timeout=5) as conn:
                answer = conn.call(10, conn.version(10, 3), {"key": group, "key_type": 0})
                return answer.node_id if answer.error_code == 0 else -1
        except (OSError, ProtocolError):
            continue
    return -1


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> leader of `topic`, from the first broker that answers Metadata."""
    from kcoord.protocol_client import Connection, ProtocolError

    for address in bootstrap.split(","):
        try:
            with Connection.to(address, timeout=5) as conn:
                answer = conn.call(3, min(conn.version(3, 12), 12), {"topics": [{"name": topic}],
                                                                      "allow_auto_topic_creation": False})
                [t] = answer.topics
                return {p.partition_index: p.leader_id for p in t.partitions}
        except (OSError, ProtocolError, ValueError):
            continue
    return {}


def _elect_preferred(bootstrap: str) -> None:
    """ElectLeaders (preferred) for every partition, as `kafka-leader-election
    --all-topic-partitions --election-type preferred` asks."""
    from kcoord.protocol_client import Connection, ProtocolError

    try:
        with Connection.to(bootstrap, timeout=10) as conn:
            conn.call(43, min(conn.version(43, 2), 2), {"election_type": 0, "topic_partitions": None,
                                                         "timeout_ms": 10000})
    except (OSError, ProtocolError):
        pass   # the next look at the leaders says whether it is needed again


class _Cluster:
    kind = ""
    bootstrap = ""
    size = 3

    def coordinator_of(self, group: str) -> int:
        return _find(self.bootstrap, group)

    def groups_on(self, node: int, count: int, prefix: str) -> list[str]:
        """`count` group ids whose __consumer_offsets partition `node` leads. Preferred leaders are
        elected first: after an earlier test's bounces `node` may lead nothing until then."""
        _find(self.bootstrap, f"{prefix}-warmup")   # creates __consumer_offsets if need be
        deadline = time.monotonic() + 60
        while True:
            _elect_preferred(self.bootstrap)
            leaders = _leaders(self.bootstrap, "__consumer_offsets")
            if leaders and all(leader >= 0 for leader in leaders.values()) and node in leaders.values():
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {node} leads no partition of __consumer_offsets: {leaders}")
            time.sleep(0.5)
        out, i = [], 0
        while len(out) < count:
            group = f"{prefix}-{i}"
            if leaders[offsets_partition_for(group, len(leaders))] == node:
                out.append(group)
            i += 1
        return out

    def wait_coordinator_moved(self, group: str, away_from: int, timeout: float = 60.0) -> int:
        """Until FindCoordinator names a broker other than `away_from`; that broker."""
        deadline = time.monotonic() + timeout
        while True:
            node = self.coordinator_of(group)
            if node not in (-1, away_from):
                return node
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group} still coordinated by broker {node} after {timeout:g}s")
            time.sleep(0.2)


class KcoordCluster(_Cluster):
    """An in-process kcoord with three brokers (kcoord.testing.server_thread), with the settings
    the scenarios give the reference Kafka too."""

    kind = "kcoord"

    def __init__(self, size: int = 3, kafka_config: dict | None = None, **settings):
        """`settings`: ServerConfig fields; `kafka_config`: Kafka config names (the dict a
        reference Kafka is started with), set over them."""
        from kcoord.testing.plugin import with_kafka_config
        from kcoord.testing.server_thread import ServerThread

        self.size = size
        settings = {"listen_port": 0, "initial_rebalance_delay_ms": 0, "group_min_session_timeout_ms": 1000,
                    **settings}
        self.thread = ServerThread(with_kafka_config(ServerConfig(brokers=size, **settings), kafka_config))

    def __enter__(self) -> "KcoordCluster":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.thread.stop()

    @property
    def app(self):
        return self.thread.app

    @property
    def bootstrap(self) -> str:
        return self.thread.bootstrap

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 3) -> None:
        from kcoord.testing.brokers import create_topic

        create_topic(self.bootstrap, topic, partitions, replication_factor=replication_factor, wait=False)

    def stop(self, node: int) -> None:
        self.thread.call(lambda: self.app.controls.stop(node))

    def kill(self, node: int) -> None:
        self.thread.call(lambda: self.app.controls.kill(node))

    def start(self, node: int) -> None:
        self.thread.call(lambda: self.app.controls.start(node))

    def running(self, node: int) -> bool:
        return self.app.cluster.node(node).running


class KafkaCluster(_Cluster):
    """The three-node reference Kafka (kcoord.testing.reference_kafka.ReferenceKafkaCluster)."""

    kind = "kafka"

    def __init__(self, reference):
        self.reference = reference
        self.size = reference.size

    @property
    def bootstrap(self) -> str:
        return self.reference.bootstrap

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 3) -> None:
        self.reference.create_topic(topic, partitions, replication_factor)

    def stop(self, node: int) -> None:
        self.reference.stop(node)

    def kill(self, node: int) -> None:
        self.reference.kill(node)

    def start(self, node: int) -> None:
        self.reference.start(node)

    def running(self, node: int) -> bool:
        return self.reference.running(node)
