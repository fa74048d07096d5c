"""The brokers of one kcoord and who leads each partition: the part of Kafka's controller
that clients can see.

A kcoord process serves N brokers (node ids 0..N-1 by default), each with a listener of its
own. They share one copy of every partition's log: a follower is in sync the moment it runs,
so replication is only a matter of which brokers hold a replica (`Partition.replicas`), which
are in sync (`isr`) and which one leads (`leader`, with its `leader_epoch`). What moves
leadership is what moves it in Kafka:

- a broker that stops (controlled shutdown) is fenced at once: each partition it led goes to
  the next replica in its list that is in sync and running, and it leaves every ISR;
- a broker that is killed keeps its partitions until the controller gives up on it
  (broker.session.timeout.ms, scheduled by the app), then the same happens;
- a broker that starts again rejoins the ISR of its replicas (caught up at once) and leads
  only the partitions left without a leader, until a preferred-leader election (ElectLeaders,
  `auto.leader.rebalance.enable`) or an explicit move gives it back its own;
- every leader change bumps the partition's leader epoch;
- a reassignment (AlterPartitionReassignments) goes as Kafka's controller takes it: the
  partition's replicas become the target followed by the replicas being removed, the new ones
  are `adding` until they have copied the partition (kcoord.cluster.reassignment) and joined
  the ISR, then the removed ones go, the leader moves to the first in-sync target replica if it
  was itself removed, and the leader epoch is bumped when any replica left.

Who listens (the group coordinator's partitions loading and unloading, durable state, the
journal) is told of each change after it is made. The active controller is the lowest
unfenced node: kcoord's brokers are combined broker+controller nodes and a quorum of them is
always assumed (docs/cluster.md).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable

from kcoord.cluster.placement import PlacementError, assign_replicas, check_assignment

log = logging.getLogger("kcoord.cluster")

NO_LEADER = -1


@dataclass
class Node:
    """One broker: where it listens, what it advertises, its rack, and whether it serves."""
    node_id: int
    listen_host: str
    listen_port: int                  # 0: any free port, known once it listens (then kept)
    advertised_host: str | None = None
    advertised_port: int | None = None
    rack: str | None = None
    running: bool = True              # its listener accepts connections
    fenced: bool = False              # the controller counts it out (leads nothing, in no ISR)

    @property
    def advertised(self) -> tuple[str, int]:
        return (self.advertised_host or self.listen_host,
                self.advertised_port if self.advertised_port is not None else self.listen_port)

    def describe(self) -> dict:
        host, port = self.advertised
        return {"node_id": self.node_id, "host": host, "port": port, "rack": self.rack}


@dataclass(frozen=True)
class LeaderChange:
    topic: str
    partition: int
    old_leader: int
    new_leader: int
    epoch: int
    reason: str


class ReassignmentError(Exception):
    """A reassignment Kafka's controller refuses: `code_name` an ErrorCode name, its message."""

    def __init__(self, code_name: str, message: str):
        super().__init__(message)
        self.code_name = code_name


class Cluster:
    def __init__(self, nodes: Iterable[Node]):
        self.nodes: dict[int, Node] = {n.node_id: n for n in nodes}
        if not self.nodes:
            raise ValueError("a cluster needs at least one broker")
        self.topics = None   # kcoord.log.topics.TopicStore, set when the store is made
        # Told of each leader change once made (LeaderChange), in the order they happen.
        self.listeners: list[Callable[[LeaderChange], None]] = []
        # Told of each ISR or replica change that is not a leader change (durable state).
        self.partition_listeners: list[Callable[[str, object], None]] = []
        # The controller quorum's leader epoch: one election when the brokers start, one more
        # each time the active controller changes.
        self.controller_epoch = 1

    # ------------------------------------------------------------------ brokers
    @property
    def size(self) -> int:
        return len(self.nodes)

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def alive(self) -> list[Node]:
        """The brokers Metadata lists: those the controller has not fenced."""
        return [n for n in self.nodes.values() if not n.fenced]

    def registered(self) -> list[tuple[int, str | None]]:
        return [(n.node_id, n.rack) for n in self.nodes.values()]

    @property
    def controller_id(self) -> int:
        alive = [n.node_id for n in self.alive()]
        return min(alive) if alive else NO_LEADER

    def is_serving(self, node_id: int) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.running and not node.fenced

    # --------------------------------------------------------------- placement
    def place(self, topic: str, partitions: int, replication_factor: int, first_partition: int = 0) -> list[list[int]]:
        return assign_replicas(self.registered(), partitions, replication_factor, topic, first_partition)

    def start_leadership(self, partition, replicas: list[int]) -> None:
        """A new partition's replicas, ISR and leader: its first replica that serves."""
        partition.replicas = list(replicas)
        partition.isr = [b for b in replicas if not self.nodes[b].fenced] or list(replicas[:1])
        partition.leader = next((b for b in replicas if self.is_serving(b)), NO_LEADER)

    # ------------------------------------------------------------------ leaders
    def _partitions(self):
        if self.topics is None:
            return
        for topic in list(self.topics.topics.values()):
            for partition in topic.partitions:
                yield topic.name, partition

    def _set_leader(self, topic: str, partition, leader: int, reason: str) -> None:
        old = partition.leader
        if old == leader:
            return
        partition.set_leader(leader)
        change = LeaderChange(topic, partition.index, old, leader, partition.leader_epoch, reason)
        log.debug("partition %s-%d: leader %d -> %d (epoch %d): %s", topic, partition.index, old, leader,
                  partition.leader_epoch, reason)
        for listen in list(self.listeners):
            listen(change)

    def _isr_changed(self, topic: str, partition) -> None:
        for listen in list(self.partition_listeners):
            listen(topic, partition)

    def fence(self, node_id: int, reason: str) -> None:
        """The controller counts `node_id` out: its partitions go to the next in-sync replica."""
        node = self.nodes[node_id]
        if node.fenced:
            return
        led = sum(1 for _, p in self._partitions() if p.leader == node_id)
        log.info("broker %d fenced (%s): the %d partitions it led move to their next in-sync replica",
                 node_id, reason, led)
        controller = self.controller_id
        node.fenced = True
        if self.controller_id != controller:
            self.controller_epoch += 1
        for topic, partition in self._partitions():
            if node_id not in partition.replicas:
                continue
            if node_id in partition.isr and len(partition.isr) > 1:
                partition.isr = [b for b in partition.isr if b != node_id]
                self._isr_changed(topic, partition)
            if partition.leader == node_id:
                successor = next((b for b in partition.replicas if b in partition.isr and self.is_serving(b)),
                                 NO_LEADER)
                self._set_leader(topic, partition, successor, reason)

    def unfence(self, node_id: int, reason: str) -> None:
        """`node_id` is back: in sync on every replica it holds (they share one log), and leader
        of those left without one."""
        node = self.nodes[node_id]
        controller = self.controller_id
        node.fenced = False
        if self.controller_id != controller:
            self.controller_epoch += 1
        for topic, partition in self._partitions():
            if node_id not in partition.replicas:
                continue
            # A replica a reassignment brought has not copied the partition yet: it stays out of the ISR.
            if node_id not in partition.isr and node_id not in partition.copied:
                partition.isr = [b for b in partition.replicas if b in partition.isr or b == node_id]
                self._isr_changed(topic, partition)
            if partition.leader == NO_LEADER and self.is_serving(node_id):
                self._set_leader(topic, partition, node_id, reason)

    def move_leader(self, topic: str, index: int, node_id: int, reason: str = "moved by request") -> str | None:
        """Make `node_id` lead the partition; None, or why it cannot (an ErrorCode name)."""
        partition = self.topics.partition(topic, index) if self.topics is not None else None
        if partition is None:
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if node_id not in partition.replicas or not self.is_serving(node_id):
            return "PREFERRED_LEADER_NOT_AVAILABLE" if node_id == partition.replicas[0] \
                else "ELIGIBLE_LEADERS_NOT_AVAILABLE"
        if partition.leader == node_id:
            return "ELECTION_NOT_NEEDED"
        if node_id not in partition.isr:
            partition.isr = [b for b in partition.replicas if b in partition.isr or b == node_id]
            self._isr_changed(topic, partition)
        self._set_leader(topic, partition, node_id, reason)
        return None

    def elect(self, topic: str, index: int, preferred: bool, reason: str) -> str | None:
        """One partition's election as ElectLeaders runs it: PREFERRED gives leadership back to
        the first replica if it serves and is in sync; UNCLEAN gives a leaderless partition to
        any serving replica. None, or the ErrorCode name Kafka answers."""
        partition = self.topics.partition(topic, index) if self.topics is not None else None
        if partition is None:
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if preferred:
            first = partition.replicas[0]
            if partition.leader == first:
                return "ELECTION_NOT_NEEDED"
            if not self.is_serving(first) or first not in partition.isr:
                return "PREFERRED_LEADER_NOT_AVAILABLE"
            self._set_leader(topic, partition, first, reason)
            return None
        if partition.leader != NO_LEADER:
            return "ELECTION_NOT_NEEDED"
        chosen = next((b for b in partition.replicas if self.is_serving(b)), None)
        if chosen is None:
            return "ELIGIBLE_LEADERS_NOT_AVAILABLE"
        partition.isr = [chosen]
        self._set_leader(topic, partition, chosen, reason)
        return None

    def elect_missing(self, reason: str) -> None:
        """After a restart, as the controller does when the brokers register again: every serving
        replica is back in its partitions' ISR (they share one log), and each partition whose
        leader does not serve gets the first replica that does."""
        for topic, partition in self._partitions():
            isr = [b for b in partition.replicas
                   if b in partition.isr or (self.is_serving(b) and b not in partition.copied)]
            if isr != partition.isr:
                partition.isr = isr
                self._isr_changed(topic, partition)
            if self.is_serving(partition.leader):
                continue
            chosen = next((b for b in partition.replicas if self.is_serving(b) and b in partition.isr),
                          next((b for b in partition.replicas if self.is_serving(b)), NO_LEADER))
            if chosen != NO_LEADER and chosen not in partition.isr:
                partition.isr = [chosen]
                self._isr_changed(topic, partition)
            self._set_leader(topic, partition, chosen, reason)

    # ------------------------------------------------------------ reassignments
    def _partition_or_fail(self, topic: str, index: int):
        if self.topics is None or self.topics.get(topic) is None:
            raise ReassignmentError("UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find a topic named {topic}.")
        partition = self.topics.partition(topic, index)
        if partition is None:
            raise ReassignmentError("UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find partition {topic}:{index}.")
        return partition

    def _check_target(self, target: list[int]) -> None:
        try:
            check_assignment({0: target}, set(self.nodes))
        except PlacementError as err:
            raise ReassignmentError(err.code_name, str(err)) from None

    def reassign(self, topic: str, index: int, target: list[int], allow_rf_change: bool = True) -> None:
        """Start moving the partition to `target` (or finish at once where nothing needs copying);
        ReassignmentError with Kafka's code and message otherwise."""
        partition = self._partition_or_fail(topic, index)
        self._check_target(target)
        if not allow_rf_change:
            current = len(set(partition.replicas) - set(partition.removing))
            if current != len(target):
                raise ReassignmentError("INVALID_REPLICATION_FACTOR",
                                        f"The replication factor is changed from {current} to {len(target)}")
        removing = sorted(set(partition.replicas) - set(target))
        adding = sorted(set(target) - set(partition.replicas))
        before = list(partition.replicas)
        partition.replicas = list(target) + removing
        partition.removing, partition.adding = removing, adding
        # Every replica out of the ISR catches up, as a Kafka follower fetches whatever the
        # reassignment calls it: a target resubmitted mid-move no longer counts a replica already
        # in the list as adding, yet it still has to copy the partition.
        partition.copied = {b: partition.copied.get(b, 0) for b in partition.replicas
                            if b not in partition.isr and (b in adding or b in partition.copied)}
        log.info("partition %s-%d: reassigning %s -> %s (adding %s, removing %s)", topic, index, before,
                 list(target), adding, removing)
        self._settle(topic, partition, before, "reassignment")

    def cancel_reassignment(self, topic: str, index: int) -> None:
        """Back to the replicas before the reassignment (Kafka's PartitionReassignmentRevert)."""
        partition = self._partition_or_fail(topic, index)
        if not partition.adding and not partition.removing:
            raise ReassignmentError("NO_REASSIGNMENT_IN_PROGRESS", "No partition reassignment is in progress.")
        isr = [b for b in partition.isr if b not in partition.adding]
        if not isr:
            # kcoord has no unclean.leader.election.enable (false in Kafka by default).
            raise ReassignmentError("INVALID_REPLICA_ASSIGNMENT", f"Unable to revert partition assignment for "
                                    f"{topic}:{index} because it would require an unclean leader election.")
        before = list(partition.replicas)
        partition.replicas = [b for b in partition.replicas if b not in partition.adding]
        partition.isr = isr
        partition.copied = {b: copied for b, copied in partition.copied.items() if b in partition.replicas}
        partition.adding, partition.removing = [], []
        log.info("partition %s-%d: reassignment cancelled, back on %s", topic, index, partition.replicas)
        self._settle(topic, partition, before, "reassignment cancelled")

    def replica_caught_up(self, topic: str, partition, node_id: int) -> None:
        """A replica a reassignment brought has copied the partition: it joins the ISR, which may
        finish the move."""
        if partition.copied.pop(node_id, None) is None or node_id in partition.isr:
            return
        partition.isr = [b for b in partition.replicas if b in partition.isr or b == node_id]
        before = list(partition.replicas)
        self._settle(topic, partition, before, "reassignment")

    def reassigning(self) -> list[tuple[str, object]]:
        return [(t, p) for t, p in self._partitions() if p.adding or p.removing]

    def catching_up(self) -> list[tuple[str, object]]:
        """The partitions with replicas a reassignment brought that are still copying."""
        return [(t, p) for t, p in self._partitions() if p.copied]

    def _settle(self, topic: str, partition, before: list[int], reason: str) -> None:
        """Finish the reassignment if its ISR allows (PartitionReassignmentReplicas.
        maybeCompleteReassignment), elect a leader if the current one may no longer lead, bump the
        leader epoch if a replica left, and tell the listeners."""
        if partition.adding or partition.removing:
            isr = [b for b in partition.isr if b not in partition.removing]
            replicas = [b for b in partition.replicas if b not in partition.removing]
            done = (isr and replicas and all(b in isr for b in partition.adding)
                    and not (len(partition.adding) < len(partition.removing) and not all(b in isr for b in replicas)))
            if done:
                partition.replicas, partition.isr = replicas, isr
                partition.adding, partition.removing = [], []
                # One resubmitted mid-move may still be copying, out of the ISR, as on Kafka.
                partition.copied = {b: copied for b, copied in partition.copied.items() if b in replicas}
                log.info("partition %s-%d: reassignment complete on %s", topic, partition.index, replicas)
        leader = partition.leader
        if leader not in partition.isr or not self.is_serving(leader):
            leader = next((b for b in partition.replicas if b in partition.isr and self.is_serving(b)), NO_LEADER)
        if leader != partition.leader:
            self._set_leader(topic, partition, leader, reason)
        elif not set(before) <= set(partition.replicas):
            # Kafka bumps the leader epoch when a replica leaves, so the old one's fetches are fenced.
            partition.set_leader(partition.leader)
        self._isr_changed(topic, partition)

    def imbalanced(self) -> list[tuple[str, int]]:
        """Partitions whose preferred leader serves, is in sync and does not lead."""
        return [(t, p.index) for t, p in self._partitions()
                if p.replicas and p.leader != p.replicas[0] and self.is_serving(p.replicas[0])
                and p.replicas[0] in p.isr]

    def leaders_per_broker(self, topic: str) -> dict[int, int]:
        """How many of `topic`'s partitions each serving broker leads (0s included)."""
        counts = {n.node_id: 0 for n in self.nodes.values() if self.is_serving(n.node_id)}
        found = self.topics.get(topic) if self.topics is not None else None
        for p in found.partitions if found is not None else ():
            if p.leader in counts:
                counts[p.leader] += 1
        return counts
