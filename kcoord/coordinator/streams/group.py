"""Streams groups (KIP-1071): the group, its members, their states, and the rules that only read
them (Kafka 4.3.1's StreamsGroup and StreamsGroupMember).

Like a consumer group (KIP-848) a streams group has no rebalance rounds; three epochs move:
the group epoch (a member joins, leaves or changes; the topology is validated; the topics it
reads change), the assignment epoch (the group epoch the target assignment was computed for)
and each member's epoch (the assignment epoch it has reconciled to, reconciliation.py). What is
assigned are tasks, a (subtopology, partition) pair each, of three kinds: active, standby
(a copy of an active task's state on another process) and warm-up.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping

from kcoord.coordinator.modern import ModernGroup
from kcoord.coordinator.streams.topology import ConfiguredTopology, StreamsTopology

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

# subtopology id -> partitions; active tasks also keep the epoch each was assigned in
Tasks = Mapping[str, frozenset]
ActiveTasks = Mapping[str, Mapping[int, int]]


class MemberState(enum.IntEnum):
    """Kafka's streams MemberState, with the codes its CurrentMemberAssignment record keeps."""
    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127

    def __str__(self) -> str:
        return self.name.lower()


class StreamsGroupState(str, enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


def _frozen(tasks: Mapping[str, object]) -> dict[str, frozenset]:
    return {s: frozenset(ps) for s, ps in tasks.items() if ps}


@dataclass(frozen=True)
class TaskSets:
    """A target assignment, or tasks a member reports owning: active, standby and warm-up."""
    active: dict[str, frozenset] = field(default_factory=dict)
    standby: dict[str, frozenset] = field(default_factory=dict)
    warmup: dict[str, frozenset] = field(default_factory=dict)

    @classmethod
    def of(cls, active: Mapping, standby: Mapping, warmup: Mapping) -> "TaskSets":
        return cls(_frozen(active), _frozen(standby), _frozen(warmup))

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def within(self, other: "TaskSets") -> bool:
        """Every task here is `other`'s too, in the same role."""
        return all(ps <= other._kind(kind).get(s, frozenset())
                   for kind in ("active", "standby", "warmup") for s, ps in self._kind(kind).items())

    def contains_any(self, other: "TaskSets") -> bool:
        return any(self._kind(kind).get(s, frozenset()) & ps
                   for kind in ("active", "standby", "warmup") for s, ps in other._kind(kind).items())

    def _kind(self, kind: str) -> Mapping[str, frozenset]:
        return getattr(self, kind)



@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    active: Mapping[str, Mapping[int, int]] = field(default_factory=dict)   # subtopology -> partition -> epoch
    standby: Mapping[str, frozenset] = field(default_factory=dict)
    warmup: Mapping[str, frozenset] = field(default_factory=dict)
    pending_active: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    pending_standby: Mapping[str, frozenset] = field(default_factory=dict)
    pending_warmup: Mapping[str, frozenset] = field(default_factory=dict)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def assigned(self) -> TaskSets:
        return TaskSets.of({s: set(ps) for s, ps in self.active.items()}, self.standby, self.warmup)

    def pending_revocation(self) -> TaskSets:
        return TaskSets.of({s: set(ps) for s, ps in self.pending_active.items()}, self.pending_standby,
                           self.pending_warmup)

    def metadata(self) -> tuple:
        """What a change of bumps the group epoch (Kafka compares the whole member but the
        assignment, which only reconciliation changes)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout_ms,
                self.topology_epoch, self.process_id, self.user_endpoint, self.client_tags)


@dataclass(eq=False)
class StreamsGroup(ModernGroup):
    group_id: str
    # As Kafka 4.3's StreamsGroup, a new group starts at epoch 1: its first member's join bumps it to 2.
    group_epoch: int = 1
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: dict[str, str] = field(default_factory=dict)
    topology: StreamsTopology | None = None
    configured: ConfiguredTopology | None = None      # worked out again after a load, never recorded
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, TaskSets] = field(default_factory=dict)
    # Kafka's initial target assignment metadata is at epoch 1 too: a member whose first assignment
    # the initial rebalance delay holds back is at epoch 1 meanwhile.
    assignment_epoch: int = 1
    assignment_timestamp_ms: int = 0
    endpoint_information_epoch: int = 0
    shutdown_requested_by: str | None = None
    emptied_at_ms: int | None = None
    removed_since_record: list[str] = field(default_factory=list)
    dead: bool = False
    group_type = "streams"     # ListGroups v5's type
    protocol_type = "streams"  # what DescribeGroups and ListGroups tell of it

    @property
    def protocol_name(self) -> str:   # events name the assignor here
        return "sticky"

    # -------------------------------------------------------------- task owners
    def active_owner(self, subtopology: str, partition: int, but: str | None = None) -> str | None:
        """The process of the member owning the active task, or revoking it (Kafka counts both)."""
        for m in self.members.values():
            if m.member_id == but:
                continue
            if partition in m.active.get(subtopology, ()) or partition in m.pending_active.get(subtopology, ()):
                return m.process_id
        return None

    def standby_processes(self, subtopology: str, partition: int, but: str | None = None) -> set[str]:
        return {m.process_id for m in self.members.values() if m.member_id != but and (
            partition in m.standby.get(subtopology, ()) or partition in m.pending_standby.get(subtopology, ()))}

    def warmup_processes(self, subtopology: str, partition: int, but: str | None = None) -> set[str]:
        return {m.process_id for m in self.members.values() if m.member_id != but and (
            partition in m.warmup.get(subtopology, ()) or partition in m.pending_warmup.get(subtopology, ()))}

    # -------------------------------------------------------------------- state
    @property
    def state(self) -> StreamsGroupState:
        if self.dead:
            return StreamsGroupState.DEAD
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def source_topics(self) -> set[str]:
        """The topics its offsets are about, while it has members (retention: Kafka's
        isSubscribedToTopic)."""
        if self.topology is None or self.is_in(StreamsGroupState.EMPTY, StreamsGroupState.DEAD):
            return set()
        return {t for s in self.topology.subtopologies.values() for t in s.source_topics}
