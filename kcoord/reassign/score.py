"""The six criteria of a placement as numbers (see docs/reassignment.md):

- storage: bytes per broker, most and least (and their ratio);
- racks: replicas of one partition that share a rack although enough racks exist
  (with r replicas over R racks a rack may hold ceil(r/R) of them);
- movement: partitions whose replica set changed, and the bytes copied to new replicas;
- leadership: most minus fewest preferred leaders per broker;
- determinism: partitions a second plan of the planned cluster would change (0 expected);
- one broker down: over every single-broker failure, most minus fewest leaders among the
  survivors, each partition led as Kafka elects: its first replica, in replica order, that is
  alive and in sync.

Counted over `brokers`: the brokers meant to carry the load (a broker being removed is not
one of them; one being added is, with nothing yet).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from math import ceil

from kcoord.reassign.model import Cluster, Partition


@dataclass(frozen=True)
class Score:
    bytes_max: int
    bytes_min: int
    rack_violations: int
    partitions_moved: int
    bytes_moved: int
    leader_spread: int
    broker_down_spread: int
    replan_moves: int | None = None   # None: not measured

    @property
    def bytes_ratio(self) -> float:
        return self.bytes_max / self.bytes_min if self.bytes_min else float("inf") if self.bytes_max else 1.0

    def to_json(self) -> dict:
        d = asdict(self)
        d["bytes_ratio"] = None if self.bytes_ratio == float("inf") else round(self.bytes_ratio, 4)
        return d


def rack_cap(replicas: int, racks: int) -> int:
    """How many replicas of a partition one rack may hold without a rack violation."""
    return ceil(replicas / racks) if racks else replicas


def rack_count(cluster: Cluster, brokers: set[int]) -> int:
    """Racks among `brokers`; 0 if any of them has none (Kafka then places without racks)."""
    racks = [cluster.racks.get(b) for b in brokers]
    return 0 if not racks or None in racks else len(set(racks))


def rack_violations(cluster: Cluster, brokers: set[int]) -> int:
    racks = rack_count(cluster, brokers)
    if not racks:
        return 0
    total = 0
    for p in cluster.partitions:
        per_rack: dict[str | None, int] = {}
        for b in p.replicas:
            per_rack[cluster.racks.get(b)] = per_rack.get(cluster.racks.get(b), 0) + 1
        cap = rack_cap(len(p.replicas), racks)
        total += sum(max(0, n - cap) for n in per_rack.values())
    return total


def bytes_per_broker(cluster: Cluster, brokers: set[int]) -> dict[int, int]:
    load = {b: 0 for b in brokers}
    for p in cluster.partitions:
        for b in p.replicas:
            if b in load:
                load[b] += p.size
    return load


def _elected(p: Partition, down: int | None) -> int | None:
    for b in p.replicas:
        if b != down and (p.isr is None or b in p.isr):
            return b
    return None


def leaders(cluster: Cluster, brokers: set[int], down: int | None = None) -> dict[int, int]:
    """Partitions each of `brokers` (less `down`) leads: the preferred leader while it is in
    sync, and with `down` stopped, the next alive in-sync replica of each it led."""
    counts = {b: 0 for b in brokers if b != down}
    for p in cluster.partitions:
        leader = _elected(p, down)
        if leader in counts:
            counts[leader] += 1
    return counts


def spread(counts: dict[int, int]) -> int:
    return max(counts.values()) - min(counts.values()) if counts else 0


def broker_down_spread(cluster: Cluster, brokers: set[int]) -> int:
    """The worst leader spread among the survivors over every single-broker failure."""
    return max((spread(leaders(cluster, brokers, b)) for b in sorted(brokers)), default=0)


def movement(before: Cluster, after: Cluster) -> tuple[int, int]:
    """(partitions whose replica set changed, bytes copied to their new replicas)."""
    moved = copied = 0
    for p in after.partitions:
        old = set(before.partition(p.key).replicas)
        new = [b for b in p.replicas if b not in old]
        if new or set(p.replicas) != old:
            moved += 1
        copied += p.size * len(new)
    return moved, copied


def score(before: Cluster, after: Cluster | None = None, brokers: set[int] | None = None,
          replan_moves: int | None = None) -> Score:
    """The six criteria of `after` (default: `before` itself) against the starting `before`."""
    after = after or before
    brokers = set(after.racks) if brokers is None else brokers
    load = bytes_per_broker(after, brokers)
    moved, copied = movement(before, after)
    return Score(bytes_max=max(load.values(), default=0), bytes_min=min(load.values(), default=0),
                 rack_violations=rack_violations(after, brokers), partitions_moved=moved, bytes_moved=copied,
                 leader_spread=spread(leaders(after, brokers)),
                 broker_down_spread=broker_down_spread(after, brokers), replan_moves=replan_moves)
