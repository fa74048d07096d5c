"""Kafka's own `kafka-reassign-partitions --generate` as a planner for bench/reassign.py.

The generated cluster is set up on a multi-broker kcoord (one broker per broker id, on its
rack), its topics created with exactly their replica lists; Kafka's tool, started from the
reference Kafka's jars (kcoord.testing.kafka_tools), proposes a placement for all of them over
the target brokers, rack-aware as by default; the proposal is read back as the cluster it
would leave, which the bench scores as it scores the other planners.

What the tool does (ReassignPartitionsCommand in Kafka 4.3.1): each topic is placed afresh by
the controller's striped replica placer from a random starting broker, knowing only its
partition count and replication factor: neither the present placement nor sizes count, and
two runs on the same cluster propose different placements.
"""
from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kcoord.reassign.model import Cluster, parse_reassignment_json
from kcoord.reassign.plan import Options, target_brokers
from kcoord.testing.brokers import create_topic
from kcoord.testing.failover import KcoordCluster
from kcoord.testing import jvm
from kcoord.testing.kafka_tools import classpath, run_tool
from kcoord.testing.reference_kafka import ReferenceKafkaUnavailable

CURRENT_HEADING = "Current partition replica assignment"
PROPOSAL_HEADING = "Proposed partition reassignment configuration"
# The 40-broker, 10,000-partition cluster: the tool describes every partition and asks every
# broker for its log dirs, and its JVM starts cold.
TOOL_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Proposal:
    cluster: Cluster     # as the tool's proposal leaves it
    seconds: float       # the tool's wall time, its JVM start included
    setup_seconds: float  # kcoord's start and the topics' creation, not part of the planning


def node_ids(cluster: Cluster) -> dict[int, int]:
    """Broker id -> kcoord node id: kcoord numbers the brokers of `--brokers N` 0..N-1, so the
    cluster's brokers, in id order, become those."""
    return {b: i for i, b in enumerate(sorted(cluster.racks))}


def topics_of(cluster: Cluster) -> dict[str, list[tuple[int, ...]]]:
    """Each topic's replica lists, partition 0 first; ValueError when a topic's partitions are
    not numbered 0..n-1, which CreateTopics could not reproduce."""
    topics: dict[str, list[tuple[int, ...]]] = {}
    for p in cluster.partitions:   # sorted by (topic, partition)
        replicas = topics.setdefault(p.topic, [])
        if p.partition != len(replicas):
            raise ValueError(f"{p.topic} has partition {p.partition} but not {len(replicas)}: "
                             "a topic's partitions must be 0..n-1")
        replicas.append(p.replicas)
    return topics


def json_after(heading: str, stdout: str) -> str:
    """The JSON line the tool prints after `heading` (CURRENT_HEADING, PROPOSAL_HEADING)."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == heading and i + 1 < len(lines):
            return lines[i + 1]
    raise RuntimeError(f"kafka-reassign-partitions --generate printed no {heading!r}: {stdout[-2000:]!r}")


def generate(cluster: Cluster, options: Options, timeout: float = TOOL_TIMEOUT_S) -> Proposal:
    """Kafka's --generate for `cluster`, over the brokers `options` leave (target_brokers).
    ReferenceKafkaUnavailable (from kafka_tools) when Java or Kafka's jars are missing;
    RuntimeError when the tool fails, or read a placement other than the cluster's."""
    jvm.require_java(ReferenceKafkaUnavailable)   # before kcoord and its topics, not after
    classpath()
    targets = target_brokers(cluster, options)
    node_of = node_ids(cluster)
    broker_of = {n: b for b, n in node_of.items()}
    racks = [cluster.racks[b] for b in sorted(cluster.racks)]
    if any(r is None for r in racks) and any(r is not None for r in racks):
        raise ValueError("a cluster with racks on some brokers only: kcoord gives racks to all or none")
    topics = topics_of(cluster)
    began = time.monotonic()
    with KcoordCluster(size=len(node_of), broker_racks=tuple(racks) if racks[0] is not None else ()) as kcoord, \
            tempfile.TemporaryDirectory(prefix="kcoord-generate-") as tmp:
        for topic, replica_lists in topics.items():
            create_topic(kcoord.bootstrap, topic, assignment=[[node_of[b] for b in rs] for rs in replica_lists],
                         wait=False, timeout=120.0)
        setup = time.monotonic() - began
        to_move = Path(tmp) / "topics-to-move.json"
        to_move.write_text(json.dumps({"version": 1, "topics": [{"topic": t} for t in topics]}))
        result = run_tool("reassign-partitions", kcoord.bootstrap, "--topics-to-move-json-file", str(to_move),
                          "--broker-list", ",".join(str(node_of[b]) for b in sorted(targets)), "--generate",
                          timeout=timeout)
    if result.code != 0:
        raise RuntimeError(f"kafka-reassign-partitions --generate exited {result.code}: {result.stderr[-2000:]}")
    # What the tool read from kcoord must be the cluster as generated, or its proposal answers another.
    expected = cluster.assignment()
    current = read_assignment(result.stdout, CURRENT_HEADING, broker_of)
    wrong = sorted(k for k in set(current) | set(expected) if current.get(k) != expected.get(k))
    if wrong:
        raise RuntimeError(f"the tool read {len(wrong)} partitions other than generated: {wrong[0]} as "
                           f"{current.get(wrong[0])}, not {expected.get(wrong[0])}")
    return Proposal(cluster.with_assignment(read_assignment(result.stdout, PROPOSAL_HEADING, broker_of)),
                    result.seconds, setup)


def read_assignment(stdout: str, heading: str, broker_of: dict[int, int]) -> dict[tuple[str, int], tuple[int, ...]]:
    """The assignment the tool prints after `heading`, in the cluster's broker ids."""
    nodes = parse_reassignment_json(json_after(heading, stdout))
    return {key: tuple(broker_of[n] for n in replicas) for key, replicas in nodes.items()}
