"""Classic group membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance
they drive, and the timers that expire members.

What each state does with each request is written on `GroupState` (state.py); this is
the same, as code. The rules follow Kafka's GroupMetadataManager (classic groups) and,
where it left them unchanged, the older GroupCoordinator.scala.

JoinGroup and SyncGroup may park: their `respond` callback is kept on the member until
a timer or another request completes the round.
"""
from __future__ import annotations

import uuid
from typing import Callable

from kcoord.connect_protocol import decode_assignment, decode_metadata, journal_summary
from kcoord.coordinator.context import CoordinatorContext
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.events import RebalanceCause as Cause
from kcoord.coordinator.classic.group import Group, Member
from kcoord.coordinator.records import ConsumerGroupRecord, group_metadata
from kcoord.coordinator.requests import HeartbeatRequest, JoinRequest, LeaveMember, SyncRequest
from kcoord.coordinator.results import UNKNOWN_MEMBER, JoinResult, LeaveResult, SyncResult
from kcoord.coordinator.classic.state import GroupState
from wire.errors import ErrorCode

S = GroupState
Respond = Callable


def _join_key(g: str) -> str:
    return f"join-{g}"


def _sync_key(g: str) -> str:
    return f"sync-{g}"


def _heartbeat_key(g: str, m: str) -> str:
    return f"heartbeat-{g}-{m}"


def _pending_key(g: str, m: str) -> str:
    return f"pending-member-{g}-{m}"


class ClassicMembership:
    def __init__(self, ctx: CoordinatorContext):
        self.ctx = ctx
        # Classic members of consumer groups (online migration, migration.py), set by the coordinator.
        self.migration = None
        # Every member's session timer holds this one bound method, not a partial of its own.
        self._on_session_expiry = self._heartbeat_expired

    def _record_group(self, group: Group) -> None:
        self.ctx.write(group_metadata(group))

    # ============================================================== JoinGroup
    def join_group(self, req: JoinRequest, respond: Respond) -> None:
        ctx = self.ctx
        answer = lambda error: ctx.answer(respond, JoinResult(error, req.member_id))  # noqa: E731
        if not req.group_id:
            return answer(ErrorCode.INVALID_GROUP_ID)
        if ctx.availability(req.group_id):
            return answer(ctx.availability(req.group_id))
        if not (ctx.config.min_session_timeout_ms <= req.session_timeout_ms <= ctx.config.max_session_timeout_ms):
            return answer(ErrorCode.INVALID_SESSION_TIMEOUT)
        if req.rebalance_timeout_ms < 0:  # JoinGroup v0 has none: Kafka uses the session timeout
            req.rebalance_timeout_ms = req.session_timeout_ms
        consumer_group = ctx.consumer_groups.get(req.group_id)
        if consumer_group is not None and not consumer_group.is_empty():
            # A classic member joins a consumer group (online migration).
            return self.migration.join(consumer_group, req, respond)
        group = ctx.groups.get(req.group_id)
        if group is None and consumer_group is not None:
            # An empty consumer group gives way to a classic one; its offsets stay. Its records end
            # (Kafka's tombstones) before the classic group's is written below.
            ctx.consumer_groups.pop(req.group_id, None)
            ctx.write(ConsumerGroupRecord(req.group_id, None))
        if group is None:
            if req.member_id != UNKNOWN_MEMBER:
                return answer(ErrorCode.UNKNOWN_MEMBER_ID)
            group = ctx.groups[req.group_id] = Group(req.group_id, created_ms=ctx.now())
            # As Kafka: a group created by a join is recorded at once, empty (generation 0).
            self._record_group(group)
        if group.is_in(S.DEAD):
            return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            return answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        req.reason = req.reason or "not provided"
        if req.member_id == UNKNOWN_MEMBER:
            self._join_new_member(group, req, respond)
        else:
            self._join_existing_member(group, req, respond)

    def _group_full(self, group: Group) -> bool:
        return group.size + len(group.pending_members) >= self.ctx.config.max_group_size

    def _join_new_member(self, group: Group, req: JoinRequest, respond: Respond) -> None:
        new_id = f"{req.client_id}-{uuid.uuid4()}"
        if req.instance_id is not None:
            old_id = group.static_member_id(req.instance_id)
            if old_id is not None:
                return self._replace_static_member(group, old_id, new_id, req, respond)
        if self._group_full(group):
            return self.ctx.answer(respond, JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER))
        if req.instance_id is None and req.require_known_member_id:
            # KIP-394: hand out the id first; the member joins for real with it.
            group.pending_members.add(new_id)
            self.ctx.schedule(_pending_key(group.group_id, new_id), req.session_timeout_ms,
                              self._expire_pending_member, group.group_id, new_id)
            return self.ctx.answer(respond, JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        self._add_member_and_rebalance(group, new_id, req, respond)

    def _join_existing_member(self, group: Group, req: JoinRequest, respond: Respond) -> None:
        member_id = req.member_id
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.ctx.timer.cancel(_pending_key(group.group_id, member_id))
            return self._add_member_and_rebalance(group, member_id, req, respond)
        error = group.validate_member(member_id, req.instance_id)
        if error:
            return self.ctx.answer(respond, JoinResult(error, member_id))
        member = group.members[member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, respond, req.reason, Cause.METADATA_CHANGED)
        elif group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # A retry of a join that already completed: answer it again.
                self.ctx.answer(respond, self._join_result(group, member))
            else:
                self._update_member_and_rebalance(
                    group, member, req, respond,
                    f"Updating metadata for member {member_id} during CompletingRebalance", Cause.METADATA_CHANGED)
        elif group.is_in(S.STABLE):
            if group.is_leader(member_id):
                self._update_member_and_rebalance(
                    group, member, req, respond,
                    f"leader {member_id} re-joining group during Stable (client reason: {req.reason})",
                    Cause.LEADER_REJOIN)
            elif not member.matches(req.protocols):
                self._update_member_and_rebalance(
                    group, member, req, respond,
                    f"Updating metadata for member {member_id} during Stable (client reason: {req.reason})",
                    Cause.METADATA_CHANGED)
            else:
                self.ctx.answer(respond, self._join_result(group, member, with_members=False))
        else:  # Empty (Dead was refused earlier)
            self.ctx.answer(respond, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_result(self, group: Group, member: Member, with_members: bool = True,
                     skip_assignment: bool = False, leader_id: str | None = None) -> JoinResult:
        leader = group.is_leader(member.member_id)
        return JoinResult(ErrorCode.NONE, member.member_id, group.generation, group.protocol_type,
                          group.protocol_name, (leader_id if leader_id is not None else group.leader_id) or "",
                          skip_assignment,
                          group.member_metadata_for_leader() if (leader and with_members) else [])

    def _add_member_and_rebalance(self, group: Group, member_id: str, req: JoinRequest, respond: Respond) -> None:
        member = Member(member_id, req.instance_id, req.client_id, req.client_host, req.rebalance_timeout_ms,
                        req.session_timeout_ms, req.protocol_type, list(req.protocols), join_callback=respond,
                        is_new=True)
        group.add(member)
        # A new member joining while the initial delay runs extends it.
        if group.initial_delay_active:
            group.new_member_added = True
        self._schedule_heartbeat(group, member, self.ctx.config.new_member_join_timeout_ms)
        self.ctx.emit(K.MEMBER_JOINED, group, member=member, reason=req.reason)
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                             f"{req.instance_id}; client reason: {req.reason}", Cause.MEMBER_JOINED)
        self._maybe_complete_join(group)

    def _update_member_and_rebalance(self, group: Group, member: Member, req: JoinRequest, respond: Respond,
                                     reason: str, cause: Cause) -> None:
        group.set_protocols(member, list(req.protocols))
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        group.park_join(member, respond)
        self._maybe_prepare_rebalance(group, reason, cause)
        self._maybe_complete_join(group)

    def _replace_static_member(self, group: Group, old_id: str, new_id: str, req: JoinRequest,
                               respond: Respond) -> None:
        ctx = self.ctx
        old = group.members[old_id]
        leader_before = group.leader_id
        # The old incarnation's parked requests learn they were fenced.
        cb = group.take_join(old)
        if cb is not None:
            ctx.answer(cb, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        if old.sync_callback is not None:
            cb, old.sync_callback = old.sync_callback, None
            ctx.answer(cb, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        ctx.timer.cancel(_heartbeat_key(group.group_id, old_id))
        new = Member(new_id, req.instance_id, req.client_id, req.client_host, req.rebalance_timeout_ms,
                     req.session_timeout_ms, old.protocol_type, list(req.protocols), assignment=old.assignment)
        group.replace(old_id, new)
        group.static_members[req.instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        ctx.emit(K.MEMBER_REPLACED, group, member=new, reason=req.reason, old_member_id=old_id)
        self._record_group(group)
        if group.is_in(S.STABLE):
            if group.protocol_name == group.select_protocol():
                # No rebalance. A leader that can skip the assignment (v9+, KIP-814) gets the
                # member list to rebuild its state. An older one is told the leader as it was
                # before the replacement (its old member id), as Kafka does: it then acts as a
                # follower and sends no assignment a Stable group would ignore. Naming the new id
                # makes such a client (kafka-python) assign, then rejoin as leader: a rebalance.
                self._schedule_heartbeat(group, new, new.session_timeout_ms)
                ctx.emit(K.STATIC_REJOIN_NO_REBALANCE, group, member=new, reason=req.reason, old_member_id=old_id)
                self._record_group(group)
                if req.supports_skip_assignment:
                    leader = group.is_leader(new_id)
                    return ctx.answer(respond, self._join_result(group, new, with_members=leader,
                                                                 skip_assignment=leader))
                return ctx.answer(respond, self._join_result(group, new, with_members=False,
                                                             leader_id=leader_before))
            group.park_join(new, respond)
            self._maybe_prepare_rebalance(group, f"Group's selectedProtocol will change because static member "
                                                 f"{new_id} with instance id {req.instance_id} joined with change "
                                                 "of protocol", Cause.STATIC_REPLACEMENT)
        elif group.is_in(S.COMPLETING_REBALANCE):
            group.park_join(new, respond)
            self._maybe_prepare_rebalance(group, f"Updating metadata for static member {new_id} with instance id "
                                                 f"{req.instance_id}; client reason: {req.reason}",
                                          Cause.STATIC_REPLACEMENT)
        else:  # PreparingRebalance: the new incarnation joins the round in progress
            group.park_join(new, respond)
            self._schedule_heartbeat(group, new, new.session_timeout_ms)
            self._maybe_complete_join(group)

    # -------------------------------------------------------- rebalancing
    def _maybe_prepare_rebalance(self, group: Group, reason: str, cause: Cause) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason, cause)

    def prepare_rebalance(self, group: Group, reason: str, cause: Cause) -> None:
        ctx = self.ctx
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        ctx.timer.cancel(_sync_key(group.group_id))
        initial = group.is_in(S.EMPTY)
        before = ctx.transition(group, S.PREPARING_REBALANCE)
        ctx.emit(K.REBALANCE_STARTED, group, before=before, reason=reason, cause=cause)
        group.initial_delay_active = initial and ctx.config.initial_rebalance_delay_ms > 0
        group_id = group.group_id
        if group.initial_delay_active:
            delay = ctx.config.initial_rebalance_delay_ms
            group.new_member_added = False
            group.initial_rebalance_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            ctx.schedule(_join_key(group_id), delay, lambda: self._initial_join_expired(group_id))
        else:
            ctx.schedule(_join_key(group_id), group.rebalance_timeout_ms(),
                         lambda: self._complete_join(group_id))
            # Like Kafka's tryCompleteElseWatch: a DelayedJoin may be complete already.
            self._maybe_complete_join(group)

    def _initial_join_expired(self, group_id: str) -> None:
        ctx = self.ctx
        group = ctx.groups.get(group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return
        remaining = group.initial_rebalance_remaining_ms
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            next_delay = min(ctx.config.initial_rebalance_delay_ms, remaining)
            group.initial_rebalance_remaining_ms = max(remaining - ctx.config.initial_rebalance_delay_ms, 0)
            ctx.schedule(_join_key(group_id), next_delay, lambda: self._initial_join_expired(group_id))
            return
        self._complete_join(group_id)

    def _maybe_complete_join(self, group: Group) -> None:
        """DelayedJoin's early completion; the initial delay never completes early."""
        if group.is_in(S.PREPARING_REBALANCE) and not group.initial_delay_active and group.has_all_members_joined():
            self._complete_join(group.group_id)

    def _complete_join(self, group_id: str) -> None:
        ctx = self.ctx
        group = ctx.groups.get(group_id)
        if group is None or not group.is_in(S.PREPARING_REBALANCE):
            return
        ctx.timer.cancel(_join_key(group_id))
        group.initial_delay_active = False
        # Dynamic members that did not rejoin in time are out; static members stay.
        for member in [m for m in group.members.values() if not m.awaiting_join and not m.is_static]:
            self._remove_member(group, member, K.MEMBER_EXPIRED, "did not rejoin before the rebalance timeout")
        if group.members and not any(m.awaiting_join for m in group.members.values()):
            # Only static members remain and none rejoined: wait another round.
            ctx.schedule(_join_key(group_id), group.rebalance_timeout_ms(),
                         lambda: self._complete_join(group_id))
            return
        if group.leader_id is None or not group.members[group.leader_id].awaiting_join:
            joined = [m for m in group.members.values() if m.awaiting_join]
            group.leader_id = joined[0].member_id if joined else None
        group.generation += 1
        before = group.state
        if group.members:
            group.protocol_name = group.select_protocol()
            ctx.transition(group, S.COMPLETING_REBALANCE)
        else:
            group.protocol_name = None
            group.leader_id = None
            ctx.transition(group, S.EMPTY)
        ctx.emit(K.JOIN_COMPLETED, group, before=before)
        if group.is_in(S.EMPTY):
            ctx.emit(K.EMPTY, group, before=before)
            self._record_group(group)
            return
        group.pending_sync = set(group.members)
        for member in list(group.members.values()):
            cb = group.take_join(member)
            member.is_new = False
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            if cb is not None:
                ctx.answer(cb, self._join_result(group, member))
        generation = group.generation
        ctx.schedule(_sync_key(group_id), group.rebalance_timeout_ms(),
                     lambda: self._pending_sync_expired(group_id, generation))

    def _pending_sync_expired(self, group_id: str, generation: int) -> None:
        group = self.ctx.groups.get(group_id)
        if group is None or group.generation != generation or not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            return
        laggards = [group.members[m] for m in list(group.pending_sync) if m in group.members]
        if not laggards:
            return
        for member in laggards:
            self._remove_member(group, member, K.MEMBER_EXPIRED, "did not send SyncGroup in time")
        self._after_member_removal(group, "Removing " + ", ".join(m.member_id for m in laggards)
                                   + " on pending sync request expiration", Cause.MEMBER_FAILED)

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.sync_callback is not None:
                cb, member.sync_callback = member.sync_callback, None
                self.ctx.answer(cb, SyncResult(error))

    # ------------------------------------------------------- member removal
    def schedule_heartbeat(self, group: Group, member: Member) -> None:
        """A request that counts as a heartbeat (an offset commit, say) resets the session."""
        self._schedule_heartbeat(group, member, member.session_timeout_ms)

    def forget_timers(self, group: Group) -> None:
        """Cancel every timer of `group` (it became a consumer group: online upgrade)."""
        timer, gid = self.ctx.timer, group.group_id
        for key in [_join_key(gid), _sync_key(gid)] + [_heartbeat_key(gid, m) for m in group.members] \
                + [_pending_key(gid, m) for m in group.pending_members]:
            timer.cancel(key)

    def _schedule_heartbeat(self, group: Group, member: Member, timeout_ms: int) -> None:
        group_id, member_id = group.group_id, member.member_id
        key = _heartbeat_key(group_id, member_id)
        if not self.ctx.timer.postpone(key, timeout_ms):  # the same callback: only the deadline moves
            self.ctx.schedule(key, timeout_ms, self._on_session_expiry, group_id, member_id)

    def _heartbeat_expired(self, group_id: str, member_id: str) -> None:
        group = self.ctx.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            return
        # Members parked in JoinGroup (once past their first join) or SyncGroup stay alive.
        if (member.awaiting_join and not member.is_new) or member.awaiting_sync:
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            return
        self._remove_member(group, member, K.MEMBER_EXPIRED, "session timeout expired")
        self._after_member_removal(group, f"removing member {member_id} on heartbeat expiration", Cause.MEMBER_FAILED)

    def _expire_pending_member(self, group_id: str, member_id: str) -> None:
        group = self.ctx.groups.get(group_id)
        if group is None or member_id not in group.pending_members:
            return
        group.pending_members.discard(member_id)
        self.ctx.emit(K.MEMBER_EXPIRED, group, member_id=member_id, reason="pending member id expired")
        self._maybe_complete_join(group)

    def _remove_member(self, group: Group, member: Member, kind: K, reason: str) -> None:
        ctx = self.ctx
        ctx.timer.cancel(_heartbeat_key(group.group_id, member.member_id))
        self.answer_waiting(group, member, ErrorCode.UNKNOWN_MEMBER_ID)
        group.remove(member.member_id)
        ctx.emit(kind, group, member=member, reason=reason)

    def answer_waiting(self, group: Group, member: Member, error: ErrorCode) -> None:
        """Answer the member's parked JoinGroup and SyncGroup, if any, with `error`."""
        cb = group.take_join(member)
        if cb is not None:
            self.ctx.answer(cb, JoinResult(error, member.member_id))
        if member.sync_callback is not None:
            cb, member.sync_callback = member.sync_callback, None
            self.ctx.answer(cb, SyncResult(error))

    def _after_member_removal(self, group: Group, reason: str, cause: Cause) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self.prepare_rebalance(group, reason, cause)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    # ============================================================== SyncGroup
    def sync_group(self, req: SyncRequest, respond: Respond) -> None:
        ctx = self.ctx
        answer = lambda error: ctx.answer(respond, SyncResult(error))  # noqa: E731
        if ctx.availability(req.group_id):
            return answer(ctx.availability(req.group_id))
        group = ctx.groups.get(req.group_id)
        if group is None and req.group_id in ctx.consumer_groups:
            return self.migration.sync(ctx.consumer_groups[req.group_id], req, respond)
        if group is None:
            return answer(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(S.DEAD):
            return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        error = group.validate_member(req.member_id, req.instance_id)
        if error:
            return answer(error)
        if req.generation_id != group.generation:
            return answer(ErrorCode.ILLEGAL_GENERATION)
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or \
                (req.protocol_name is not None and req.protocol_name != group.protocol_name):
            return answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[req.member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            return answer(ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(req.member_id)
        if group.is_in(S.COMPLETING_REBALANCE):
            member.sync_callback = respond
            if group.is_leader(req.member_id):
                ctx.emit(K.ASSIGNMENT_RECEIVED, group, member=member, **_connect_details(group, req.assignments))
                for m in group.members.values():
                    m.assignment = req.assignments.get(m.member_id, b"")
                before = ctx.transition(group, S.STABLE)
                ctx.emit(K.STABLE, group, before=before)
                self._record_group(group)
                for m in group.members.values():
                    if m.sync_callback is not None:
                        cb, m.sync_callback = m.sync_callback, None
                        ctx.answer(cb, SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                                                  m.assignment))
            return
        # Stable: hand back the stored assignment.
        self._schedule_heartbeat(group, member, member.session_timeout_ms)
        ctx.answer(respond, SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))

    # ============================================================== Heartbeat
    def heartbeat(self, req: HeartbeatRequest) -> ErrorCode:
        ctx = self.ctx
        if ctx.availability(req.group_id):
            return ctx.availability(req.group_id)
        group = ctx.groups.get(req.group_id)
        if group is None and req.group_id in ctx.consumer_groups:
            return self.migration.heartbeat(ctx.consumer_groups[req.group_id], req)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(req.member_id, req.instance_id)
        if error:
            return error
        if req.generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        member = group.members[req.member_id]
        if group.is_in(S.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, member, member.session_timeout_ms)
        if group.is_in(S.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # ============================================================= LeaveGroup
    def leave_group(self, group_id: str, leaving: list[LeaveMember]) -> LeaveResult:
        ctx = self.ctx
        if ctx.availability(group_id):
            return LeaveResult(ctx.availability(group_id))
        group = ctx.groups.get(group_id)
        if group is None and group_id in ctx.consumer_groups:
            return self.migration.leave(ctx.consumer_groups[group_id], leaving)
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
                ctx.timer.cancel(_pending_key(group_id, m.member_id))
            elif m.member_id in group.members:
                removed.append((group.members[m.member_id], m.reason))
            else:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            results.append((m.member_id, m.instance_id, error))
        for member, reason in removed:
            if member.member_id in group.members:
                self._remove_member(group, member, K.MEMBER_LEFT, reason or "not provided")
        if removed:
            self._after_member_removal(group, "Removing member(s) " + ", ".join(m.member_id for m, _ in removed)
                                       + " on LeaveGroup", Cause.MEMBER_LEFT)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        return LeaveResult(ErrorCode.NONE, results)

    # ========================================================= fault hooks
    def expire_member_now(self, group_id: str, member_id: str) -> bool:
        group = self.ctx.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            return False
        self._remove_member(group, member, K.MEMBER_EXPIRED, "expired on request")
        self._after_member_removal(group, f"removing member {member_id} on request", Cause.OTHER)
        return True

    def force_rebalance(self, group_id: str, reason: str) -> bool:
        group = self.ctx.groups.get(group_id)
        if group is None or not group.can_rebalance() or not group.members:
            return False
        self.prepare_rebalance(group, reason, Cause.OTHER)
        return True

    # ======================================================== durable state
    def load_group(self, record: dict) -> Group:
        """Rebuild a group from its metadata record after a restart, as Kafka's coordinator
        loads a group from `__consumer_offsets` after a failover: every member of the last
        written generation comes back with its assignment and a fresh session timer (Stable,
        or Empty without members), so members that keep heartbeating carry on without a
        rebalance and those that are gone expire after their session timeout.
        """
        ctx = self.ctx
        now = ctx.now()
        group = Group(record["group_id"], record["created_ms"], generation=record["generation"],
                      protocol_type=record["protocol_type"], emptied_at_ms=record.get("emptied_at_ms"),
                      state_ms=record.get("state_ms"))
        for m in record["members"]:
            group.add(Member(m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
                             m["rebalance_timeout_ms"], m["session_timeout_ms"], m["protocol_type"],
                             [tuple(p) for p in m["protocols"]], assignment=m["assignment"]))
        ctx.groups[group.group_id] = group
        ctx.changed(group)  # read back, not written: no record or event tells of it
        if not record["members"]:
            group.load_state(S.EMPTY)
            group.emptied_at_ms = group.emptied_at_ms or now
            return group
        group.protocol_name = record["protocol_name"]
        if record["leader_id"] in group.members:
            group.leader_id = record["leader_id"]
        group.load_state(S.STABLE)
        for member in group.members.values():
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
        return group


def _connect_details(group: Group, assignments: dict[str, bytes]) -> dict:
    """For a Connect group, the journal's `details.connect`: each member's decoded assignment
    (leader, connectors, tasks, revoked, delay), by member id."""
    if group.protocol_type != "connect":
        return {}
    out = {}
    for mid, data in assignments.items():
        a = decode_assignment(data)
        if a is None:
            continue
        member = group.members.get(mid)
        meta = None
        if member is not None and group.protocol_name in member.protocol_names():
            meta = decode_metadata(member.metadata(group.protocol_name))
        out[mid] = journal_summary(a, meta)
    return {"connect": out}
