"""Generated clusters for the tests and bench/reassign.py: brokers over racks, topics placed
as Kafka places new topics (kcoord.cluster.placement), partition sizes skewed (a few large,
many small) from a seeded generator, so every run sees the same cluster."""
from __future__ import annotations

import random

from kcoord.cluster.placement import assign_replicas
from kcoord.reassign.model import Cluster, Partition


def racks_for(brokers: list[int], racks: int) -> dict[int, str | None]:
    return {b: (f"r{i % racks}" if racks else None) for i, b in enumerate(sorted(brokers))}


def generated(brokers: int, partitions: int, racks: int = 3, replication: int = 3, topics: int = 5,
              seed: int = 1, extra_brokers: int = 0, skew: float = 2.0) -> Cluster:
    """`partitions` spread over `topics` topics placed on brokers 1..`brokers`, with
    `extra_brokers` more registered but empty (brokers being added)."""
    rng = random.Random(seed)
    ids = list(range(1, brokers + 1))
    rack_of = racks_for(ids + list(range(brokers + 1, brokers + extra_brokers + 1)), racks)
    out = []
    per_topic = [partitions // topics + (i < partitions % topics) for i in range(topics)]
    for t, count in enumerate(per_topic):
        name = f"topic-{t}"
        placed = assign_replicas([(b, rack_of[b]) for b in ids], count, replication, topic=name)
        for i, replicas in enumerate(placed):
            size = int(rng.paretovariate(skew) * 10_000_000)
            out.append(Partition(name, i, tuple(replicas), size))
    return Cluster(rack_of, tuple(out))
