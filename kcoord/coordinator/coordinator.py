"""The classic group coordinator: Kafka's rules as synchronous, deterministic logic.

Every request is one method call that either answers at once or parks its
`respond` callback on the member (JoinGroup, SyncGroup) for a timer or another
request to complete. Nothing here knows bytes, sockets or the event loop: time
comes from an injected `Timer`, so every transition can be driven by a test.

The rules follow Kafka's GroupMetadataManager (classic groups) and, where it
left them unchanged, the older GroupCoordinator.scala.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Protocol

from kcoord.coordinator import events as E
from kcoord.coordinator.clock import Timer
from kcoord.coordinator.config import CoordinatorConfig
from kcoord.coordinator.group import Group, Member
from kcoord.coordinator.offsets import CommittedOffset, OffsetStore
from kcoord.coordinator.state import GroupState
from wire.errors import ErrorCode

S = GroupState
UNKNOWN_MEMBER = ""


class TopicCatalog(Protocol):
    def partition_exists(self, topic: str, partition: int) -> bool: ...


# ---------------------------------------------------------------------------
# results handed back to handlers
# ---------------------------------------------------------------------------
@dataclass
class JoinResult:
    error: ErrorCode
    member_id: str = UNKNOWN_MEMBER
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # leader only


@dataclass
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class LeaveMember:
    member_id: str
    instance_id: str | None
    reason: str | None = None


@dataclass
class LeaveResult:
    error: ErrorCode
    members: list[tuple[str, str | None, ErrorCode]] = field(default_factory=list)


@dataclass
class OffsetCommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass
class OffsetCommitResult:
    error: ErrorCode                       # group-level problem applied to every partition
    partitions: list[tuple[str, int, ErrorCode]] = field(default_factory=list)


@dataclass
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error: ErrorCode = ErrorCode.NONE


@dataclass
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: list[dict]


def _join_key(g: str) -> str:
    return f"join-{g}"


def _sync_key(g: str) -> str:
    return f"sync-{g}"


def _heartbeat_key(g: str, m: str) -> str:
    return f"heartbeat-{g}-{m}"


def _pending_key(g: str, m: str) -> str:
    return f"pending-member-{g}-{m}"


class GroupCoordinator:
    def __init__(self, timer: Timer, config: CoordinatorConfig | None = None,
                 topics: TopicCatalog | None = None, bus: E.EventBus | None = None):
        self.timer = timer
        self.config = config or CoordinatorConfig()
        self.topics = topics
        self.bus = bus or E.EventBus()
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        # Called after every change to a group: lets waiters (wait_for) re-check.
        self.on_change: Callable[[str], None] | None = None
        # Groups this node pretends not to coordinate right now (None: every group), and the
        # error that says so: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR or
        # COORDINATOR_LOAD_IN_PROGRESS, as a broker would answer during failover or loading.
        self.unavailable: dict[str | None, ErrorCode] = {}
        self._schedule_retention()

    # ------------------------------------------------------------------ util
    def now(self) -> int:
        return self.timer.now_ms()

    def _emit(self, kind: str, group: Group, *, before: GroupState | None = None, member: Member | None = None,
              member_id: str | None = None, reason: str | None = None, **details) -> None:
        self.bus.publish(E.GroupEvent(
            kind=kind, time_ms=self.now(), group_id=group.group_id, generation=group.generation,
            state_before=str(before or group.state), state_after=str(group.state),
            member_id=member.member_id if member else member_id,
            instance_id=member.instance_id if member else None,
            client_id=member.client_id if member else None,
            client_host=member.client_host if member else None,
            reason=reason, protocol=group.protocol_name, members=group.size, details=details))

    def _changed(self, group: Group) -> None:
        if self.on_change is not None:
            self.on_change(group.group_id)

    def _transition(self, group: Group, target: GroupState) -> GroupState:
        before = group.state
        group.transition(target, self.now())
        return before

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def availability(self, group_id: str) -> ErrorCode:
        """NONE, or the error every group request for `group_id` gets while it is unavailable."""
        return self.unavailable.get(group_id) or self.unavailable.get(None) or ErrorCode.NONE

    def set_unavailable(self, error: ErrorCode, group_id: str | None = None) -> None:
        self.unavailable[group_id] = error

    def set_available(self, group_id: str | None = None) -> None:
        self.unavailable.pop(group_id, None)

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{uuid.uuid4()}"

    # ============================================================== JoinGroup
    def join_group(self, group_id: str, member_id: str, instance_id: str | None, protocol_type: str,
                   protocols: list[tuple[str, bytes]], session_timeout_ms: int, rebalance_timeout_ms: int,
                   client_id: str, client_host: str, respond: Callable[[JoinResult], None], *,
                   require_known_member_id: bool = True, supports_skip_assignment: bool = True,
                   reason: str | None = None) -> None:
        if not group_id:
            return respond(JoinResult(ErrorCode.INVALID_GROUP_ID, member_id))
        if self.availability(group_id):
            return respond(JoinResult(self.availability(group_id), member_id))
        if not (self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms):
            return respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
        if rebalance_timeout_ms < 0:  # JoinGroup v0 has none: Kafka uses the session timeout
            rebalance_timeout_ms = session_timeout_ms
        group = self.groups.get(group_id)
        if group is None:
            if member_id != UNKNOWN_MEMBER:
                return respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            group = Group(group_id, created_ms=self.now(), state_since_ms=self.now())
            self.groups[group_id] = group
        if group.is_in(S.DEAD):
            return respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            return respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        reason = reason or "not provided"
        if member_id == UNKNOWN_MEMBER:
            self._join_new_member(group, instance_id, protocol_type, protocols, session_timeout_ms,
                                  rebalance_timeout_ms, client_id, client_host, respond,
                                  require_known_member_id, supports_skip_assignment, reason)
        else:
            self._join_existing_member(group, member_id, instance_id, protocol_type, protocols,
                                       session_timeout_ms, rebalance_timeout_ms, client_id, client_host,
                                       respond, reason)
        self._changed(group)

    def _group_full(self, group: Group) -> bool:
        return group.size + len(group.pending_members) >= self.config.max_group_size

    def _join_new_member(self, group, instance_id, protocol_type, protocols, session_timeout_ms,
                         rebalance_timeout_ms, client_id, client_host, respond, require_known_member_id,
                         supports_skip_assignment, reason):
        new_id = self._new_member_id(client_id)
        if instance_id is not None:
            old_id = group.static_member_id(instance_id)
            if old_id is not None:
                return self._replace_static_member(group, old_id, new_id, instance_id, protocols,
                                                   session_timeout_ms, rebalance_timeout_ms, client_id,
                                                   client_host, respond, supports_skip_assignment, reason)
            if self._group_full(group):
                return respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER))
            return self._add_member_and_rebalance(group, new_id, instance_id, protocol_type, protocols,
                                                  session_timeout_ms, rebalance_timeout_ms, client_id,
                                                  client_host, respond, reason)
        if self._group_full(group):
            return respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER))
        if require_known_member_id:
            # KIP-394: hand out the id first; the member joins for real with it.
            group.pending_members.add(new_id)
            self.timer.schedule(_pending_key(group.group_id, new_id), session_timeout_ms,
                                lambda: self._expire_pending_member(group.group_id, new_id))
            return respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        self._add_member_and_rebalance(group, new_id, None, protocol_type, protocols, session_timeout_ms,
                                       rebalance_timeout_ms, client_id, client_host, respond, reason)

    def _join_existing_member(self, group, member_id, instance_id, protocol_type, protocols,
                              session_timeout_ms, rebalance_timeout_ms, client_id, client_host, respond, reason):
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.timer.cancel(_pending_key(group.group_id, member_id))
            return self._add_member_and_rebalance(group, member_id, instance_id, protocol_type, protocols,
                                                  session_timeout_ms, rebalance_timeout_ms, client_id,
                                                  client_host, respond, reason)
        error = self._validate_member(group, member_id, instance_id)
        if error:
            return respond(JoinResult(error, member_id))
        member = group.members[member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, protocols, session_timeout_ms,
                                              rebalance_timeout_ms, respond, reason)
        elif group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # A retry of a join that already completed: answer it again.
                respond(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, protocols, session_timeout_ms,
                                                  rebalance_timeout_ms, respond,
                                                  f"Updating metadata for member {member_id} during CompletingRebalance")
        elif group.is_in(S.STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                why = (f"leader {member_id} re-joining group during Stable" if group.is_leader(member_id)
                       else f"Updating metadata for member {member_id} during Stable")
                self._update_member_and_rebalance(group, member, protocols, session_timeout_ms,
                                                  rebalance_timeout_ms, respond, f"{why} (client reason: {reason})")
            else:
                respond(self._join_result(group, member, with_members=False))
        else:  # Empty (Dead was refused earlier)
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _validate_member(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        """Kafka's member check: a stale static id is fenced, an unknown id is unknown."""
        if instance_id is not None:
            current = group.static_member_id(instance_id)
            if current is not None and current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if instance_id is not None and group.members[member_id].instance_id != instance_id:
            return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE

    def _join_result(self, group: Group, member: Member, with_members: bool = True,
                     skip_assignment: bool = False, leader_id: str | None = None) -> JoinResult:
        leader = group.is_leader(member.member_id)
        return JoinResult(ErrorCode.NONE, member.member_id, group.generation, group.protocol_type,
                          group.protocol_name, (leader_id if leader_id is not None else group.leader_id) or "",
                          skip_assignment,
                          group.member_metadata_for_leader() if (leader and with_members) else [])

    def _add_member_and_rebalance(self, group, member_id, instance_id, protocol_type, protocols,
                                  session_timeout_ms, rebalance_timeout_ms, client_id, client_host, respond,
                                  reason):
        member = Member(member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                        session_timeout_ms, protocol_type, list(protocols), join_callback=respond, is_new=True,
                        last_heartbeat_ms=self.now())
        group.add(member)
        # A new member joining while the initial delay runs extends it.
        if group.initial_delay_active:
            group.new_member_added = True
        self._schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._emit(E.MEMBER_JOINED, group, member=member, reason=reason)
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                             f"{instance_id}; client reason: {reason}")
        self._maybe_complete_join(group)

    def _update_member_and_rebalance(self, group, member, protocols, session_timeout_ms, rebalance_timeout_ms,
                                     respond, reason):
        member.protocols = list(protocols)
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.join_callback = respond
        self._maybe_prepare_rebalance(group, reason)
        self._maybe_complete_join(group)

    def _replace_static_member(self, group, old_id, new_id, instance_id, protocols, session_timeout_ms,
                               rebalance_timeout_ms, client_id, client_host, respond, supports_skip_assignment,
                               reason):
        old = group.members[old_id]
        leader_before = group.leader_id
        # The old incarnation's parked requests learn they were fenced.
        if old.join_callback is not None:
            cb, old.join_callback = old.join_callback, None
            cb(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        if old.sync_callback is not None:
            cb, old.sync_callback = old.sync_callback, None
            cb(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        self.timer.cancel(_heartbeat_key(group.group_id, old_id))
        group.members.pop(old_id)
        new = Member(new_id, instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                     old.protocol_type, list(protocols), assignment=old.assignment, last_heartbeat_ms=self.now())
        group.members[new_id] = new
        group.static_members[instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        self._emit(E.MEMBER_REPLACED, group, member=new, reason=reason, old_member_id=old_id)
        if group.is_in(S.STABLE):
            if group.protocol_name == group.select_protocol():
                # No rebalance. A leader that can skip the assignment (v9+, KIP-814) gets the
                # member list to rebuild its state. An older one is told the leader as it was
                # before the replacement (its old member id), as Kafka does: it then acts as a
                # follower and sends no assignment a Stable group would ignore. Naming the new id
                # makes such a client (kafka-python) assign, then rejoin as leader: a rebalance.
                self._schedule_heartbeat(group, new, new.session_timeout_ms)
                self._emit(E.STATIC_REJOIN_NO_REBALANCE, group, member=new, reason=reason, old_member_id=old_id)
                if supports_skip_assignment:
                    leader = group.is_leader(new_id)
                    return respond(self._join_result(group, new, with_members=leader, skip_assignment=leader))
                return respond(self._join_result(group, new, with_members=False, leader_id=leader_before))
            new.join_callback = respond
            self._maybe_prepare_rebalance(group, f"Group's selectedProtocol will change because static member "
                                                 f"{new_id} with instance id {instance_id} joined with change of protocol")
        elif group.is_in(S.COMPLETING_REBALANCE):
            new.join_callback = respond
            self._maybe_prepare_rebalance(group, f"Updating metadata for static member {new_id} with instance id "
                                                 f"{instance_id}; client reason: {reason}")
        else:  # PreparingRebalance: the new incarnation joins the round in progress
            new.join_callback = respond
            self._schedule_heartbeat(group, new, new.session_timeout_ms)
            self._maybe_complete_join(group)

    # -------------------------------------------------------- rebalancing
    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self.timer.cancel(_sync_key(group.group_id))
        initial = group.is_in(S.EMPTY)
        before = self._transition(group, S.PREPARING_REBALANCE)
        self._emit(E.REBALANCE_STARTED, group, before=before, reason=reason)
        group.initial_delay_active = initial and self.config.initial_rebalance_delay_ms > 0
        if group.initial_delay_active:
            delay = self.config.initial_rebalance_delay_ms
            group.new_member_added = False
            group.initial_rebalance_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            self.timer.schedule(_join_key(group.group_id), delay,
                                lambda: self._initial_join_expired(group.group_id))
        else:
            self.timer.schedule(_join_key(group.group_id), group.rebalance_timeout_ms(),
                                lambda: self._complete_join(group.group_id))
            # Like Kafka's tryCompleteElseWatch: a DelayedJoin may be complete already.
            self._maybe_complete_join(group)
        self._changed(group)

    def _initial_join_expired(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return
        remaining = group.initial_rebalance_remaining_ms
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            group.initial_rebalance_remaining_ms = max(remaining - self.config.initial_rebalance_delay_ms, 0)
            self.timer.schedule(_join_key(group_id), next_delay, lambda: self._initial_join_expired(group_id))
            return
        self._complete_join(group_id)

    def _maybe_complete_join(self, group: Group) -> None:
        """DelayedJoin's early completion; the initial delay never completes early."""
        if group.is_in(S.PREPARING_REBALANCE) and not group.initial_delay_active and group.has_all_members_joined():
            self._complete_join(group.group_id)

    def _complete_join(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return
        self.timer.cancel(_join_key(group_id))
        group.initial_delay_active = False
        # Dynamic members that did not rejoin in time are out; static members stay.
        for member in [m for m in group.members.values() if not m.awaiting_join and not m.is_static]:
            self._remove_member(group, member, E.MEMBER_EXPIRED, "did not rejoin before the rebalance timeout")
        if group.members and not any(m.awaiting_join for m in group.members.values()):
            # Only static members remain and none rejoined: wait another round.
            self.timer.schedule(_join_key(group_id), group.rebalance_timeout_ms(),
                                lambda: self._complete_join(group_id))
            return
        if group.leader_id is None or not group.members[group.leader_id].awaiting_join:
            joined = [m for m in group.members.values() if m.awaiting_join]
            group.leader_id = joined[0].member_id if joined else None
        group.generation += 1
        before = group.state
        if group.members:
            group.protocol_name = group.select_protocol()
            self._transition(group, S.COMPLETING_REBALANCE)
        else:
            group.protocol_name = None
            group.leader_id = None
            self._transition(group, S.EMPTY)
        self._emit(E.JOIN_COMPLETED, group, before=before)
        if group.is_in(S.EMPTY):
            self._emit(E.EMPTY, group, before=before)
            self._changed(group)
            return
        group.pending_sync = set(group.members)
        for member in list(group.members.values()):
            cb, member.join_callback = member.join_callback, None
            member.is_new = False
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            if cb is not None:
                cb(self._join_result(group, member))
        generation = group.generation
        self.timer.schedule(_sync_key(group_id), group.rebalance_timeout_ms(),
                            lambda: self._pending_sync_expired(group_id, generation))
        self._changed(group)

    def _pending_sync_expired(self, group_id: str, generation: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.generation != generation or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            return
        laggards = [group.members[m] for m in list(group.pending_sync) if m in group.members]
        if not laggards:
            return
        for member in laggards:
            self._remove_member(group, member, E.MEMBER_EXPIRED, "did not send SyncGroup in time")
        self._after_member_removal(group, "Removing " + ", ".join(m.member_id for m in laggards)
                                   + " on pending sync request expiration")

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.sync_callback is not None:
                cb, member.sync_callback = member.sync_callback, None
                cb(SyncResult(error))

    # ------------------------------------------------------- member removal
    def _schedule_heartbeat(self, group: Group, member: Member, timeout_ms: int) -> None:
        member.last_heartbeat_ms = self.now()
        self.timer.schedule(_heartbeat_key(group.group_id, member.member_id), timeout_ms,
                            lambda: self._heartbeat_expired(group.group_id, member.member_id))

    def _heartbeat_expired(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            return
        # Members parked in JoinGroup (once past their first join) or SyncGroup stay alive.
        if (member.awaiting_join and not member.is_new) or member.awaiting_sync:
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            return
        self._remove_member(group, member, E.MEMBER_EXPIRED, "session timeout expired")
        self._after_member_removal(group, f"removing member {member_id} on heartbeat expiration")

    def _expire_pending_member(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.pending_members:
            return
        group.pending_members.discard(member_id)
        self._emit(E.MEMBER_EXPIRED, group, member_id=member_id, reason="pending member id expired")
        self._maybe_complete_join(group)
        self._changed(group)

    def _remove_member(self, group: Group, member: Member, kind: str, reason: str) -> None:
        self.timer.cancel(_heartbeat_key(group.group_id, member.member_id))
        if member.join_callback is not None:
            cb, member.join_callback = member.join_callback, None
            cb(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        if member.sync_callback is not None:
            cb, member.sync_callback = member.sync_callback, None
            cb(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self._emit(kind, group, member=member, reason=reason)

    def _after_member_removal(self, group: Group, reason: str) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        self._changed(group)

    # ============================================================== SyncGroup
    def sync_group(self, group_id: str, member_id: str, generation_id: int, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes], respond: Callable[[SyncResult], None]) -> None:
        if self.availability(group_id):
            return respond(SyncResult(self.availability(group_id)))
        group = self.groups.get(group_id)
        if group is None:
            return respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if group.is_in(S.DEAD):
            return respond(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        error = self._validate_member(group, member_id, instance_id)
        if error:
            return respond(SyncResult(error))
        if generation_id != group.generation:
            return respond(SyncResult(ErrorCode.ILLEGAL_GENERATION))
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol_name is not None and protocol_name != group.protocol_name):
            return respond(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        member = group.members[member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            return respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        group.pending_sync.discard(member_id)
        if group.is_in(S.COMPLETING_REBALANCE):
            member.sync_callback = respond
            if group.is_leader(member_id):
                self._emit(E.ASSIGNMENT_RECEIVED, group, member=member)
                for m in group.members.values():
                    m.assignment = assignments.get(m.member_id, b"")
                before = self._transition(group, S.STABLE)
                self._emit(E.STABLE, group, before=before)
                for m in group.members.values():
                    if m.sync_callback is not None:
                        cb, m.sync_callback = m.sync_callback, None
                        cb(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, m.assignment))
            self._changed(group)
            return
        # Stable: hand back the stored assignment.
        self._schedule_heartbeat(group, member, member.session_timeout_ms)
        respond(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))

    # ============================================================== Heartbeat
    def heartbeat(self, group_id: str, member_id: str, generation_id: int, instance_id: str | None) -> ErrorCode:
        if self.availability(group_id):
            return self.availability(group_id)
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, member_id, instance_id)
        if error:
            return error
        if generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        member = group.members[member_id]
        if group.is_in(S.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, member, member.session_timeout_ms)
        if group.is_in(S.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # ============================================================= LeaveGroup
    def leave_group(self, group_id: str, leaving: list[LeaveMember]) -> LeaveResult:
        if self.availability(group_id):
            return LeaveResult(self.availability(group_id))
        group = self.groups.get(group_id)
        if group is None:
            return LeaveResult(ErrorCode.NONE, [(m.member_id, m.instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
                                                for m in leaving])
        if group.is_in(S.DEAD):
            return LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        results = []
        removed = []
        for m in leaving:
            error = ErrorCode.NONE
            if m.instance_id is not None:
                current = group.static_member_id(m.instance_id)
                if current is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                elif m.member_id != UNKNOWN_MEMBER and m.member_id != current:
                    error = ErrorCode.FENCED_INSTANCE_ID
                else:
                    removed.append((group.members[current], m.reason))
            elif m.member_id in group.pending_members:
                group.pending_members.discard(m.member_id)
                self.timer.cancel(_pending_key(group_id, m.member_id))
            elif m.member_id in group.members:
                removed.append((group.members[m.member_id], m.reason))
            else:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            results.append((m.member_id, m.instance_id, error))
        for member, reason in removed:
            if member.member_id in group.members:
                self._remove_member(group, member, E.MEMBER_LEFT, reason or "not provided")
        if removed:
            self._after_member_removal(group, "Removing member(s) " + ", ".join(m.member_id for m, _ in removed)
                                       + " on LeaveGroup")
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        self._changed(group)
        return LeaveResult(ErrorCode.NONE, results)

    # =============================================================== Offsets
    def _validate_offset_commit(self, group_id, member_id, generation_id, instance_id, version):
        group = self.groups.get(group_id)
        if group is None:
            if generation_id < 0:  # admin client or a consumer without group management
                group = Group(group_id, created_ms=self.now(), state_since_ms=self.now())
                group.emptied_at_ms = None  # a simple group: offsets age from their commit time
                self.groups[group_id] = group
                return group, ErrorCode.NONE
            return None, ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
        if group.is_in(S.DEAD):
            return group, ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(S.EMPTY):
            return group, ErrorCode.NONE
        if group.is_in(S.COMPLETING_REBALANCE):
            return group, ErrorCode.REBALANCE_IN_PROGRESS
        error = self._validate_member(group, member_id, instance_id)
        if error:
            return group, error
        if generation_id != group.generation:
            return group, ErrorCode.ILLEGAL_GENERATION
        return group, ErrorCode.NONE

    def commit_offsets(self, group_id: str, member_id: str, generation_id: int, instance_id: str | None,
                       partitions: list[OffsetCommitPartition], version: int = 9,
                       retention_ms: int = -1) -> OffsetCommitResult:
        if not group_id:
            return OffsetCommitResult(ErrorCode.INVALID_GROUP_ID,
                                      [(p.topic, p.partition, ErrorCode.INVALID_GROUP_ID) for p in partitions])
        group, error = (None, self.availability(group_id)) if self.availability(group_id) else \
            self._validate_offset_commit(group_id, member_id, generation_id, instance_id, version)
        if error:
            return OffsetCommitResult(error, [(p.topic, p.partition, error) for p in partitions])
        member = group.members.get(member_id)
        if member is not None and group.is_in(S.STABLE, S.PREPARING_REBALANCE):
            self._schedule_heartbeat(group, member, member.session_timeout_ms)  # a commit is a heartbeat
        now = self.now()
        results = []
        committed = []
        previous = {}
        for p in partitions:
            if p.metadata is not None and len(p.metadata.encode("utf-8")) > self.config.offset_metadata_max_bytes:
                results.append((p.topic, p.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
            elif self.topics is not None and not self.topics.partition_exists(p.topic, p.partition):
                results.append((p.topic, p.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                previous.setdefault((p.topic, p.partition), self.offsets.get(group_id, p.topic, p.partition))
                self.offsets.commit(group_id, p.topic, p.partition, CommittedOffset(
                    p.offset, p.leader_epoch, p.metadata or "", now,
                    now + retention_ms if retention_ms is not None and retention_ms >= 0 else None))
                results.append((p.topic, p.partition, ErrorCode.NONE))
                committed.append((p.topic, p.partition))
        if committed:
            self._emit(E.OFFSETS_COMMITTED, group, member=member, count=len(committed), partitions=committed)
            if self.availability(group_id):
                # Recording the commit failed (durable state): it is not acknowledged, and
                # memory goes back to what the disk holds.
                error = self.availability(group_id)
                for (topic, partition), before in previous.items():
                    self.offsets.restore(group_id, topic, partition, before)
                return OffsetCommitResult(error, [(t, p, error if e == ErrorCode.NONE else e) for t, p, e in results])
        return OffsetCommitResult(ErrorCode.NONE, results)

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None) -> tuple[ErrorCode, list[FetchedOffset]]:
        """Committed offsets; unknown groups/partitions give offset -1 without error, as Kafka does."""
        if self.availability(group_id):
            return self.availability(group_id), []
        group = self.groups.get(group_id)
        if group is not None and group.is_in(S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if partitions is None:
            stored = self.offsets.all(group_id)
            return ErrorCode.NONE, [FetchedOffset(t, p, v.offset, v.leader_epoch, v.metadata)
                                    for (t, p), v in sorted(stored.items())]
        out = []
        for topic, partition in partitions:
            v = self.offsets.get(group_id, topic, partition)
            out.append(FetchedOffset(topic, partition, -1, -1, "") if v is None
                       else FetchedOffset(topic, partition, v.offset, v.leader_epoch, v.metadata))
        return ErrorCode.NONE, out

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]],
                       subscribed_topics: Callable[[Group], set[str]] | None = None
                       ) -> tuple[ErrorCode, list[tuple[str, int, ErrorCode]]]:
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        subscribed = set()
        if not group.is_in(S.EMPTY) and subscribed_topics is not None:
            subscribed = subscribed_topics(group)
        results = []
        deleted = []
        for topic, partition in partitions:
            if topic in subscribed:
                results.append((topic, partition, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
            else:
                if self.offsets.delete(group_id, topic, partition):
                    deleted.append((topic, partition))
                results.append((topic, partition, ErrorCode.NONE))
        if deleted:
            self._emit(E.OFFSETS_DELETED, group, count=len(deleted), partitions=deleted)
        return ErrorCode.NONE, results

    def _schedule_retention(self) -> None:
        self.timer.schedule("offsets-retention", self.config.offsets_retention_check_interval_ms,
                            self._expire_offsets)

    def _expire_offsets(self) -> None:
        now = self.now()
        for group_id in self.offsets.groups():
            group = self.groups.get(group_id)
            if group is not None and not group.is_in(S.EMPTY):
                continue  # offsets of an active group never expire here
            base = None if group is None or group.protocol_type is None else group.emptied_at_ms
            expired = self.offsets.expire(group_id, now, self.config.offsets_retention_ms, base)
            if expired and group is not None:
                self._emit(E.OFFSETS_EXPIRED, group, count=len(expired), partitions=expired)
            if group is not None and group.is_in(S.EMPTY) and not self.offsets.has_offsets(group_id):
                self._make_dead(group)
        self._schedule_retention()

    def _make_dead(self, group: Group) -> None:
        before = self._transition(group, S.DEAD)
        self.groups.pop(group.group_id, None)
        self._emit(E.DEAD, group, before=before)
        self._changed(group)

    # =============================================================== Admin
    def describe_group(self, group_id: str) -> GroupDescription:
        if self.availability(group_id):
            return GroupDescription(group_id, self.availability(group_id), "", "", "", [])
        group = self.groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, "Dead", "", "", [])
        stable = group.is_in(S.STABLE)
        members = [{"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                    "member_assignment": m.assignment if stable else b""}
                   for m in group.members.values()]
        return GroupDescription(group_id, ErrorCode.NONE, str(group.state), group.protocol_type or "",
                                group.protocol_name if stable else "", members)

    def list_groups(self, states: set[str] | None = None) -> list[Group]:
        wanted = {s.lower() for s in states} if states else None
        return [g for g in self.groups.values()
                if not g.is_in(S.DEAD) and (wanted is None or str(g.state).lower() in wanted)]

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_in(S.EMPTY):
            return ErrorCode.NON_EMPTY_GROUP
        self.offsets.delete_group(group_id)
        self._make_dead(group)
        return ErrorCode.NONE

    # ===================================================== durable state
    def persisted_group(self, group_id: str) -> dict | None:
        """What a restarted coordinator needs to rebuild a group (Kafka's GroupMetadata record)."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return None
        return {
            "group_id": group.group_id, "generation": group.generation, "created_ms": group.created_ms,
            "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
            "leader_id": group.leader_id, "emptied_at_ms": group.emptied_at_ms,
            "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                         "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                         "session_timeout_ms": m.session_timeout_ms, "protocol_type": m.protocol_type,
                         "protocols": list(m.protocols), "assignment": m.assignment}
                        for m in group.members.values()],
        }

    def load_group(self, record: dict) -> Group:
        """Rebuild a group from `persisted_group`'s record after a restart.

        Static members come back with their assignment and a fresh session timer,
        so a static member that keeps heartbeating carries on without a rebalance.
        Dynamic members are not restored: they must rejoin, as after a coordinator
        failover. When that leaves static members holding only part of the
        assignment, a rebalance starts so the departed members' partitions move.
        """
        now = self.now()
        group = Group(record["group_id"], record["created_ms"], state_since_ms=now,
                      generation=record["generation"], protocol_type=record["protocol_type"],
                      emptied_at_ms=record.get("emptied_at_ms"))
        kept = [m for m in record["members"] if m["instance_id"] is not None]
        for m in kept:
            group.add(Member(m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
                             m["rebalance_timeout_ms"], m["session_timeout_ms"], m["protocol_type"],
                             [tuple(p) for p in m["protocols"]], assignment=m["assignment"]))
        self.groups[group.group_id] = group
        if not kept:
            group.emptied_at_ms = group.emptied_at_ms or now
            return group
        group.protocol_name = record["protocol_name"]
        if record["leader_id"] in group.members:
            group.leader_id = record["leader_id"]
        group.state = S.STABLE
        for member in group.members.values():
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
        if len(kept) < len(record["members"]):
            self._prepare_rebalance(group, "dynamic members were not restored after a coordinator restart")
        return group

    def load_offset(self, group_id: str, topic: str, partition: int, value: CommittedOffset) -> None:
        """Restore one committed offset; a simple group (offsets but no metadata) comes back Empty."""
        self.offsets.commit(group_id, topic, partition, value)
        if group_id not in self.groups:
            # No metadata record: a simple group, whose offsets age from their commit time.
            self.groups[group_id] = Group(group_id, value.commit_ms, state_since_ms=self.now())

    # ========================================================= fault hooks
    def expire_member_now(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            return False
        self._remove_member(group, member, E.MEMBER_EXPIRED, "expired on request")
        self._after_member_removal(group, f"removing member {member_id} on request")
        return True

    def force_rebalance(self, group_id: str, reason: str = "forced rebalance") -> bool:
        group = self.groups.get(group_id)
        if group is None or not group.can_rebalance() or not group.members:
            return False
        self._prepare_rebalance(group, reason)
        return True
