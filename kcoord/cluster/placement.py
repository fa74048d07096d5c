"""Where a new topic's replicas go: Kafka's rack-aware assignment, made deterministic.

Kafka spreads replicas in two ways, both rack first, then broker: the controller's
StripedReplicaPlacer (KRaft, topic creation) and AdminUtils' rack-aware assignment
(`kafka-reassign-partitions --generate`, and every topic before KRaft). Both draw at random
where to start and how far to shift the second replica. kcoord follows AdminUtils'
arrangement with those draws fixed:

- brokers are arranged alternating racks (the racks in name order, a broker without a rack
  being a rack of its own, each rack's brokers in id order): a, b, c, a, b, c, ...;
- partition p's first replica (its preferred leader) is the broker at (start + p) in that
  arrangement, where `start` is the topic name's Java hash (Utils.abs) modulo the brokers,
  not a random draw, so single-partition topics do not all land on one broker;
- the other replicas follow at a shift that grows by one each time the partitions have gone
  once round the brokers (Kafka's random initial shift is 0 here), skipping a broker whose rack
  already holds a replica until every rack holds one.

The growing shift is what keeps leadership balanced when one broker stops: the partitions a
broker leads have their second replica on each other broker in turn, so their leadership
spreads over all survivors rather than falling on one neighbour (`leaders_after_failure`
measures it).
"""
from __future__ import annotations

from typing import Iterable, Sequence

from kcoord.coordinator.config import java_string_hash


class PlacementError(Exception):
    def __init__(self, code_name: str, message: str):
        self.code_name = code_name  # an ErrorCode member name
        super().__init__(message)


def _abs(h: int) -> int:
    return 0 if h == -(2**31) else abs(h)   # Kafka's Utils.abs


def arrange(brokers: Iterable[tuple[int, str | None]]) -> list[int]:
    """Broker ids alternating racks: each rack's first broker, then each rack's second, ..."""
    racks: dict[str | None, list[int]] = {}
    for node_id, rack in sorted(brokers):
        racks.setdefault(rack, []).append(node_id)
    ordered = [racks[r] for r in sorted(racks, key=lambda r: (r is not None, r or ""))]
    out = []
    for i in range(max((len(ids) for ids in ordered), default=0)):
        out += [ids[i] for ids in ordered if i < len(ids)]
    return out


def assign_replicas(brokers: Sequence[tuple[int, str | None]], partitions: int, replication_factor: int,
                    topic: str = "", first_partition: int = 0) -> list[list[int]]:
    """The replicas of partitions first_partition .. first_partition + partitions - 1, each
    list led by its preferred leader. `brokers`: (node id, rack) of every registered broker.
    Partitions added to a topic later get what this gives them for the whole topic (the earlier
    ones are placed the same way again, so their shares are counted)."""
    n = len(brokers)
    if replication_factor <= 0:
        raise PlacementError("INVALID_REPLICATION_FACTOR",
                             "Replication factor must be larger than 0, or -1 to use the default value.")
    if replication_factor > n:
        # Kafka's controller's words (its placer's, inside its own).
        raise PlacementError("INVALID_REPLICATION_FACTOR",
                             f"Unable to replicate the partition {replication_factor} time(s): The target "
                             f"replication factor of {replication_factor} cannot be reached because only {n} "
                             "broker(s) are registered or some brokers have all their log directories cordoned.")
    rack_of = dict(brokers)
    racks = len(set(rack_of.values()))
    arranged = arrange(brokers)
    position = {b: i for i, b in enumerate(arranged)}
    start = _abs(java_string_hash(topic)) % n
    total = first_partition + partitions
    leaders = [arranged[(start + p) % n] for p in range(total)]
    led = {b: leaders.count(b) for b in arranged}
    taken = {b: {} for b in arranged}   # leader -> follower -> its partitions that fall to it first
    out = []
    for p, leader in enumerate(leaders):
        replicas = [leader]
        if replication_factor > 1:
            # The second replica is where leadership goes if the leader stops: of the brokers in
            # another rack (any other broker when there is one rack), the one that would then
            # lead the fewest partitions, nearest after the leader in the arrangement.
            others = [b for b in arranged if b != leader]
            elsewhere = [b for b in others if rack_of[b] != rack_of[leader]] or others
            second = min(elsewhere, key=lambda b: (led[b] + taken[leader].get(b, 0),
                                                   (position[b] - position[leader]) % n))
            taken[leader][second] = taken[leader].get(second, 0) + 1
            replicas.append(second)
        used_racks = {rack_of[b] for b in replicas}
        k = position[replicas[-1]]
        while len(replicas) < replication_factor:
            k = (k + 1) % n
            broker = arranged[k]
            if broker in replicas or (rack_of[broker] in used_racks and len(used_racks) < racks):
                continue
            replicas.append(broker)
            used_racks.add(rack_of[broker])
        out.append(replicas)
    return out[first_partition:]


def check_assignment(assignments: dict[int, Sequence[int]], registered: set[int], first_partition: int = 0,
                     replication_factor: int | None = None, same_size: bool = True) -> list[list[int]]:
    """Replicas chosen by a client (CreateTopics, CreatePartitions, AlterPartitionReassignments),
    checked as Kafka's controller checks them: partition index -> broker ids, in index order, or
    PlacementError. `same_size`: every partition has as many replicas (not so once reassignments
    have changed some)."""
    out = []
    for index in range(first_partition, first_partition + len(assignments)):
        if index not in assignments:
            raise PlacementError("INVALID_REPLICA_ASSIGNMENT",
                                 "partitions should be a consecutive 0-based integer sequence")
        replicas = list(assignments[index])
        if not replicas:
            raise PlacementError("INVALID_REPLICA_ASSIGNMENT",
                                 "The manual partition assignment includes an empty replica list.")
        previous = None
        for broker in sorted(replicas):
            if broker not in registered:
                raise PlacementError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes "
                                     f"broker {broker}, but no such broker is registered.")
            if broker == previous:
                raise PlacementError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes "
                                     f"the broker {broker} more than once.")
            previous = broker
        if replication_factor is not None and len(replicas) != replication_factor:
            raise PlacementError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes a "
                                 f"partition with {len(replicas)} replica(s), but this is not consistent with "
                                 f"previous partitions, which have {replication_factor} replica(s).")
        if same_size:
            replication_factor = len(replicas)
        out.append(replicas)
    return out


def leaders_after_failure(replicas: Sequence[Sequence[int]], down: int) -> dict[int, int]:
    """Partitions led by each surviving broker once `down` stops, the leadership of each
    partition it led moving to its next replica (node id -> count; brokers leading nothing
    but holding a replica appear with 0)."""
    counts: dict[int, int] = {b: 0 for rs in replicas for b in rs if b != down}
    for rs in replicas:
        leader = next((b for b in rs if b != down), None)
        if leader is not None:
            counts[leader] += 1
    return counts
