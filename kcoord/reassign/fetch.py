"""A cluster as the planner sees it, read from any Kafka-compatible cluster over the admin
protocol: Metadata for brokers, racks, replicas and ISR; DescribeLogDirs on every broker for
partition sizes (a partition's size is the largest any of its replicas reports)."""
from __future__ import annotations

from kcoord.protocol_client import Admin, ProtocolError
from kcoord.reassign.model import Cluster, Partition, by_topic
from wire.errors import ErrorCode


def replica_sizes(admin: Admin, brokers: dict[int, tuple[str, int]],
                  partitions: list[tuple[str, int]] | None = None
                  ) -> tuple[dict[tuple[str, int, int], int], list[str]]:
    """(topic, partition, broker) -> the bytes that broker holds of the partition (a replica
    being added: what it has copied so far), from DescribeLogDirs on each of `brokers`, for
    `partitions` (None: all); and one line per broker that could not say."""
    topics = None if partitions is None else \
        [{"topic": t, "partitions": ps} for t, ps in by_topic(partitions).items()]
    sizes: dict[tuple[str, int, int], int] = {}
    problems = []
    for node_id, (host, port) in sorted(brokers.items()):
        try:
            conn = admin.connect(host, port)
            answer = conn.call(35, conn.version(35, 4, 1), {"topics": topics})
        except (OSError, ProtocolError) as err:
            problems.append(f"broker {node_id}: DescribeLogDirs: {getattr(err, 'strerror', None) or err}")
            continue
        if answer.get("error_code", 0):
            problems.append(f"broker {node_id}: DescribeLogDirs: {ErrorCode(answer.error_code).name}")
            continue
        for result in answer.results:
            for t in result.topics:
                for p in t.partitions:
                    if not p.is_future_key:
                        key = (t.name, p.partition_index, node_id)
                        sizes[key] = max(sizes.get(key, 0), p.partition_size)
    return sizes, problems


def log_dir_sizes(admin: Admin, brokers: dict[int, tuple[str, int]]) -> tuple[dict[tuple[str, int], int], list[str]]:
    """(topic, partition) -> bytes, the largest any of its replicas reports, and one line per
    broker that could not say (its replicas then count as empty)."""
    sizes: dict[tuple[str, int], int] = {}
    per_replica, problems = replica_sizes(admin, brokers)
    for (topic, partition, _), size in per_replica.items():
        sizes[(topic, partition)] = max(sizes.get((topic, partition), 0), size)
    return sizes, problems


def cluster_id(admin: Admin) -> str | None:
    """The id Metadata gives the cluster (None from a broker too old to say)."""
    return admin.metadata([]).get("cluster_id")


def read_cluster(admin: Admin, include_internal: bool = False) -> tuple[Cluster, list[str]]:
    """The cluster (internal topics left out unless asked for) and what kept sizes unknown."""
    meta = admin.metadata(None)
    racks = {b.node_id: b.get("rack") for b in meta.brokers}
    brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
    sizes, problems = log_dir_sizes(admin, brokers)
    partitions = []
    for t in meta.topics:
        if t.error_code or (t.get("is_internal", False) and not include_internal):
            continue
        for p in t.partitions:
            partitions.append(Partition(t.name, p.partition_index, tuple(p.replica_nodes),
                                        sizes.get((t.name, p.partition_index), 0), tuple(p.isr_nodes)))
    return Cluster(racks, tuple(partitions)), problems
