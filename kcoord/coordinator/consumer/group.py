"""Consumer groups of the consumer group protocol (KIP-848): the group, its members, their
states, and the rules that only read them.

A consumer group has no rebalance rounds. Three epochs move instead:
- the group epoch goes up whenever what the assignment depends on changes (a member joins
  or leaves, a subscription changes, a subscribed topic's partitions change);
- the assignment epoch is the group epoch the current target assignment was computed for;
- each member's epoch is the assignment epoch it has reconciled to (reconciliation.py).

The group's state is derived from those epochs, never set (ConsumerGroupState). The
heartbeat that drives it all is protocol.py.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

# Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

# topic id (text, as uuid.UUID prints it) -> partition -> the assignment epoch it was given in
Partitions = dict[str, dict[int, int]]


class ConsumerGroupState(enum.Enum):
    """A consumer group's state, derived from its epochs and members after every change (as
    Kafka derives it). The note says what a group in that state means and does."""

    EMPTY = ("Empty", """
        No members; the group may still hold committed offsets.
        - ConsumerGroupHeartbeat with epoch 0: the member joins, the group epoch goes up and a
          target assignment is computed if the assignment interval allows (else Assigning).
        - DeleteGroups: allowed; OffsetCommit from the admin (member id empty, epoch -1): accepted.""")

    ASSIGNING = ("Assigning", """
        The group epoch is ahead of the assignment epoch: the target assignment is to be
        computed. As in Kafka, a heartbeat computes it once group.consumer.assignment.interval.ms
        has passed since the last computation (at once for a new group); until then members
        reconcile to the previous target (a new member gets nothing, at the old epoch).""")

    RECONCILING = ("Reconciling", """
        The target assignment is ahead of some member: each such member is moving towards it
        (revoking first, then receiving what others released). A member that does not revoke
        within its rebalance timeout is fenced; heartbeats carry each member's next step.""")

    STABLE = ("Stable", """
        Every member has reconciled to the target assignment of the current group epoch.
        Heartbeats only renew sessions, until something bumps the group epoch again.""")

    DEAD = ("Dead", """
        Deleted (DeleteGroups on an empty group); the id may be used again by a new group.""")

    def __init__(self, label: str, note: str):
        self.label = label
        self.note = note

    def __str__(self) -> str:
        return self.label


class MemberState(enum.StrEnum):
    """Where a member is in reconciling to the target assignment (Kafka's MemberState names)."""

    # Owns exactly what the target gives it at its epoch.
    STABLE = "stable"
    # Must give up partitions first; stays at its epoch until its heartbeat no longer owns them.
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    # Moved to the target epoch, but some target partitions are still owned by others.
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    # Read back in a state this version does not know: reconciled from scratch.
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """What a member that speaks JoinGroup/SyncGroup inside a consumer group (online migration)
    brought along: its session timeout and its protocols (name, consumer-protocol metadata) in
    its order of preference, the first being the one it is answered with."""
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        return self.protocols[0][0]


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None   # None: the member speaks ConsumerGroupHeartbeat

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch

    def assigned_sets(self) -> dict[str, frozenset[int]]:
        return {t: frozenset(ps) for t, ps in self.assigned.items() if ps}

    def owns(self, topic_id: str, partition: int) -> bool:
        return partition in self.assigned.get(topic_id, {}) or partition in self.pending_revocation.get(topic_id, {})

    def assignment_epoch_of(self, topic_id: str, partition: int) -> int | None:
        """The epoch a partition was given to this member in, assigned or pending revocation."""
        for held in (self.assigned, self.pending_revocation):
            epoch = held.get(topic_id, {}).get(partition)
            if epoch is not None:
                return epoch
        return None


@dataclass
class ConsumerGroup:
    group_id: str
    created_ms: int
    # Kafka 4.3 starts a new group at epoch 1, ahead of its assignment epoch 0: the first member's
    # heartbeat computes a target even with an empty subscription (its epoch is then 1), and a
    # first member with a subscription bumps it to 2.
    group_epoch: int = 1
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)      # instance id -> member id
    target: dict[str, dict[str, frozenset[int]]] = field(default_factory=dict)  # member -> topic id -> partitions
    # What the last target assignment was computed from: subscribed topic name -> (id, partitions).
    # A heartbeat that finds the topics changed bumps the group epoch (Kafka's metadata hash).
    subscribed_topics: dict[str, tuple[str, int]] = field(default_factory=dict)
    assignor_name: str = ""
    state_ms: int | None = None
    emptied_at_ms: int | None = None   # offset retention counts from here, as for classic groups
    # When the last target assignment was computed (0: never): the next one waits until
    # group.consumer.assignment.interval.ms has passed since, as in Kafka.
    assignment_timestamp_ms: int = 0
    # Subscribed regexes as last resolved (in the background, as Kafka does): regex -> topic names.
    # A regex not resolved yet subscribes the member to nothing.
    resolved_regexes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    regex_refresh_ms: int = 0           # when they were last resolved (0: never)
    regex_topics: frozenset = frozenset()  # the topic names then, to notice new ones
    dead: bool = False
    # Members removed since the group was last recorded: their records need tombstones even
    # where the sink never saw them (after a restart).
    removed_since_record: list[str] = field(default_factory=list)
    # Online upgrade: the classic group this one replaces, until the heartbeat that converted it is
    # applied; and whether the next record must end the classic group's record (Kafka's tombstone).
    converted_from: object = field(default=None, repr=False, compare=False)
    replaces_classic: bool = False

    protocol_type = "consumer"
    group_type = "consumer"

    def __post_init__(self):
        if self.state_ms is None:
            self.state_ms = self.created_ms

    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    @property
    def size(self) -> int:
        return len(self.members)

    # Classic-group names other parts read (ListGroups, metrics, offsets retention).
    @property
    def generation(self) -> int:
        return self.group_epoch

    @property
    def protocol_name(self) -> str | None:  # events name the assignor here
        return self.assignor_name or None

    def is_empty(self) -> bool:
        return not self.members

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = None if instance_id is None else self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def put(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        if member is not None:
            self.removed_since_record.append(member_id)
        if member is not None and member.instance_id is not None \
                and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        return member

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.uses_classic]

    def supports_classic_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """Whether a classic member with these protocols may join: a consumer-protocol type, and a
        protocol every classic member already in supports (any, when none is)."""
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(names)
        classic = self.classic_members()
        return any(all(n in {p for p, _ in m.classic.protocols} for m in classic) for n in names)

    def waiting_on_unreleased(self, member: ConsumerMember) -> bool:
        """Whether some partition of the member's target is still held by another member."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target.get(member.member_id, {}).items():
            held = member.assigned.get(topic_id, {})
            for p in partitions:
                if p not in held and self.partition_owner(topic_id, p) is not None:
                    return True
        return False

    def partition_owner(self, topic_id: str, partition: int) -> str | None:
        """The member still holding a partition (assigned or pending revocation), if any."""
        for member in self.members.values():
            if member.owns(topic_id, partition):
                return member.member_id
        return None
