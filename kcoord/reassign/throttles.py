"""Kafka's replication throttles for a set of partition moves, as `kafka-reassign-partitions
--execute --throttle` sets them and `--verify` clears them.

Per topic, `leader.replication.throttled.replicas` lists each moving partition's source
replicas and `follower.replication.throttled.replicas` its destinations (`partition:broker`,
sorted as text, as Kafka's tool sorts them); on every broker a move reads from or writes to,
`leader.replication.throttled.rate` and `follower.replication.throttled.rate` are the throttle.
A reassignment already under way keeps its throttled replicas, so that setting a topic's lists
anew does not free it.
"""
from __future__ import annotations

from dataclasses import dataclass

from kcoord.reassign.remaining import Key, Ongoing

BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
# What --verify deletes on each broker: the rates and the log-directory move throttle.
BROKER_CLEARED = BROKER_RATES + ("replica.alter.log.dirs.io.max.bytes.per.second",)
LEADER_REPLICAS, FOLLOWER_REPLICAS = ("leader.replication.throttled.replicas",
                                      "follower.replication.throttled.replicas")


@dataclass(frozen=True)
class Move:
    sources: frozenset[int]
    destinations: frozenset[int]


def moves(targets: dict[Key, tuple[int, ...]], replicas: dict[Key, tuple[int, ...]],
          ongoing: dict[Key, Ongoing]) -> dict[Key, Move]:
    """Every reassignment under way (from its replicas less those being added, to those being
    added), then each of `targets`: from the replicas it has before any reassignment under way,
    to the target's other brokers."""
    out = {key: Move(frozenset(o.replicas) - frozenset(o.adding), frozenset(o.adding))
           for key, o in ongoing.items()}
    for key, target in targets.items():
        sources = out[key].sources if key in out else frozenset(replicas[key])
        out[key] = Move(sources, frozenset(target) - sources)
    return out


def bytes_to_copy(move: Move, size: int) -> int:
    return size * len(move.destinations)


def topic_throttles(planned: dict[Key, Move]) -> dict[str, dict[str, str]]:
    """Topic -> {config: value} for the two throttled-replicas configs."""
    leaders: dict[str, set[str]] = {}
    followers: dict[str, set[str]] = {}
    for (topic, partition), move in planned.items():
        leaders.setdefault(topic, set()).update(f"{partition}:{b}" for b in move.sources)
        followers.setdefault(topic, set()).update(f"{partition}:{b}" for b in move.destinations)
    return {topic: {LEADER_REPLICAS: ",".join(sorted(leaders[topic])),
                    FOLLOWER_REPLICAS: ",".join(sorted(followers[topic]))} for topic in sorted(leaders)}


def reassigning_brokers(planned: dict[Key, Move]) -> set[int]:
    return {b for move in planned.values() for b in move.sources | move.destinations}
