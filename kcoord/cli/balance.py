"""How a topic's leadership spreads over its brokers now, and after any one broker stops, from
what Metadata says of each partition (leader, replicas, ISR): `kcoord partition balance`.

A broker that stops hands each partition it leads to the first replica, in replica order,
that is in sync (and is not itself), as Kafka's controller elects it; every other partition
keeps its leader. Counted over the running brokers that hold a replica of the topic: those
are the ones leadership can reach (a broker without one leads none of the topic whatever
happens). Balanced means that the most and the fewest partitions led by one of them differ
by at most one.
"""
from __future__ import annotations

from dataclasses import dataclass

from kcoord.cluster.placement import leaders_after_failure

NOBODY = -1   # Metadata's leader id for a partition without one


@dataclass(frozen=True)
class PartitionLeadership:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Spread:
    leaders: dict[int, int]   # node id -> partitions it leads
    leaderless: int           # partitions no broker leads

    @property
    def max_minus_min(self) -> int | None:
        return max(self.leaders.values()) - min(self.leaders.values()) if self.leaders else None

    @property
    def balanced(self) -> bool:
        spread = self.max_minus_min
        return spread is not None and spread <= 1

    def to_json(self) -> dict:
        return {"leaders": {str(b): n for b, n in sorted(self.leaders.items())}, "leaderless": self.leaderless,
                "max_minus_min": self.max_minus_min, "balanced": self.balanced}


def _successors(p: PartitionLeadership, running: set[int]) -> list[int]:
    """Who leads the partition as brokers go: its leader, then its in-sync replicas in order."""
    first = [p.leader] if p.leader != NOBODY else []
    return first + [b for b in p.replicas if b in p.isr and b != p.leader and b in running]


def spread(partitions: list[PartitionLeadership], running: set[int], stopped: int = NOBODY) -> Spread:
    """Leaders per broker once `stopped` stops (NOBODY: as they are now)."""
    chains = [_successors(p, running) for p in partitions]
    leaders = leaders_after_failure(chains, stopped)
    for p in partitions:   # replica holders that would lead nothing count, as 0
        for b in p.replicas:
            if b in running and b != stopped:
                leaders.setdefault(b, 0)
    leaderless = sum(1 for chain in chains if not any(b != stopped for b in chain))
    return Spread(dict(sorted(leaders.items())), leaderless)


def topic_balance(partitions: list[PartitionLeadership], running: set[int]) -> tuple[Spread, dict[int, Spread]]:
    """The topic's spread now, and after each running broker stops (node id -> spread)."""
    return spread(partitions, running), {b: spread(partitions, running, b) for b in sorted(running)}
