"""The classic group and its members: data plus the rules that only read it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from kcoord.coordinator.classic.state import GroupState, check_load, check_transition
from wire.errors import ErrorCode


@dataclass(slots=True)   # one per member, thousands per server: no __dict__ each
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]   # (name, metadata), in the member's preference order
    assignment: bytes = b""
    join_callback: Callable | None = None  # set while a JoinGroup is parked
    sync_callback: Callable | None = None  # set while a SyncGroup is parked
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        return next(name for name in self.protocol_names() if name in candidates)


@dataclass
class Group:
    group_id: str
    created_ms: int
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)    # instance id -> member id
    pending_members: set[str] = field(default_factory=set)          # ids handed out with MEMBER_ID_REQUIRED
    pending_sync: set[str] = field(default_factory=set)             # members yet to SyncGroup this generation
    new_member_added: bool = False
    initial_delay_active: bool = False   # InitialDelayedJoin running: never completes early
    initial_rebalance_remaining_ms: int = 0
    emptied_at_ms: int | None = None     # when the group last became Empty (offset retention)
    state_ms: int | None = None          # when the group last changed state (Kafka's currentStateTimestamp)
    # Kept as members come, go, join and change protocols (as Kafka's supportedProtocols and
    # numMembersAwaitingJoin): a join must not walk the whole group, or a 1,000-member round
    # costs a million steps.
    _support: Counter = field(default_factory=Counter, repr=False, compare=False)   # protocol -> members naming it
    _awaiting: int = field(default=0, repr=False, compare=False)                   # members with a parked JoinGroup

    group_type = "classic"               # ListGroups v5's type (consumer groups: consumer/group.py)

    def __post_init__(self):
        if self.state_ms is None:  # Kafka starts a group's state clock at its creation
            self.state_ms = self.created_ms

    # ---- state ----
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.state = target
        self.state_ms = now_ms
        if target is GroupState.EMPTY:
            self.emptied_at_ms = now_ms

    def load_state(self, target: GroupState) -> None:
        """The state a group read back from disk starts in."""
        check_load(self.group_id, target)
        self.state = target

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # ---- members ----
    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self._enter(member)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def _enter(self, member: Member) -> None:
        self.members[member.member_id] = member
        self._add_support(member)
        if member.join_callback is not None:
            self._awaiting += 1

    def _leave(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._drop_support(member)
            if member.join_callback is not None:
                self._awaiting -= 1
        return member

    def _add_support(self, member: Member) -> None:
        self._support.update(set(member.protocol_names()))

    def _drop_support(self, member: Member) -> None:
        for name in set(member.protocol_names()):
            left = self._support[name] - 1
            if left:
                self._support[name] = left
            else:   # a protocol nobody names any more is forgotten: clients pick the names
                del self._support[name]

    def replace(self, old_id: str, new: Member) -> None:
        """A static member's new incarnation takes `old_id`'s place (its map and leadership are the caller's)."""
        self._leave(old_id)
        self._enter(new)

    def set_protocols(self, member: Member, protocols: list[tuple[str, bytes]]) -> None:
        self._drop_support(member)
        member.protocols = protocols
        self._add_support(member)

    def park_join(self, member: Member, respond: Callable) -> None:
        if member.join_callback is None and self.members.get(member.member_id) is member:
            self._awaiting += 1
        member.join_callback = respond

    def take_join(self, member: Member) -> Callable | None:
        """The member's parked JoinGroup callback, no longer parked (None if there was none)."""
        cb = member.join_callback
        if cb is not None:
            member.join_callback = None
            if self.members.get(member.member_id) is member:
                self._awaiting -= 1
        return cb

    def remove(self, member_id: str) -> Member | None:
        member = self._leave(member_id)
        if member is None:
            return None
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode:
        """Kafka's member check: a stale static id is fenced, an unknown id is unknown."""
        if instance_id is not None:
            current = self.static_member_id(instance_id)
            if current is not None and current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if instance_id is not None and self.members[member_id].instance_id != instance_id:
            return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def awaiting_join_count(self) -> int:
        return self._awaiting

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ---- protocols ----
    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self._support.items() if count == n} if n else set()

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & set(names))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol all members support; most votes wins.

        Kafka breaks ties by hash-map order; kcoord breaks them by the order in
        which members cast their votes (join order), which is deterministic.
        """
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        return next(name for name in votes if votes[name] == best)

    def member_metadata_for_leader(self) -> list[tuple[str, str | None, bytes]]:
        return [(m.member_id, m.instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]
