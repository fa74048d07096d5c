"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat, its timers, and what other
requests need of a consumer group.

One heartbeat does, in order, as Kafka's GroupMetadataManager does:
1. find or create the group and the member (epoch 0 joins; -1 leaves; -2 is a static
   member leaving for now, its assignment kept until its session expires);
2. update the member (a partial heartbeat leaves out what did not change) and bump the
   group epoch if its subscription, or the subscribed topics, changed;
3. compute the target assignment if the group epoch is ahead of it (server assignor);
4. move the member one step towards its target (reconciliation.py);
and answers with the member's epoch and, when it changed or was asked for, its assignment.

A member that stops heartbeating is fenced after group.consumer.session.timeout.ms; one that
does not revoke within its rebalance timeout is fenced too. Fencing removes the member and
bumps the group epoch, so the others are given its partitions.
"""
from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import replace
from typing import Callable, Mapping

from kcoord.coordinator.assignors.spec import AssignorError, MemberSpec, ServerAssignor, TopicSpec, group_subscription_type
from kcoord.coordinator.consumer.group import (
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerMember, MemberState,
)
from kcoord.coordinator.context import CoordinatorContext
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.modern import ModernProtocol
from kcoord.coordinator.javaorder import RecordPartitions
from kcoord.coordinator.consumer import regex
from kcoord.coordinator.consumer.reconciliation import FencedInUnknownState, owned_from_request, reconcile
from kcoord.coordinator.consumer.snapshot import restore, snapshot
from kcoord.coordinator.records import ConsumerGroupRecord
from kcoord.coordinator.requests import ConsumerHeartbeatRequest
from kcoord.coordinator.results import ConsumerGroupDescription, ConsumerHeartbeatResult, Refused
from kcoord.coordinator.classic.state import GroupState
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.coordinator")

# From this ConsumerGroupHeartbeat version on the client makes its own member id (KIP-1082).
CLIENT_MEMBER_ID_SINCE = 1


def new_member_id() -> str:
    """A member id as Kafka's Uuid.randomUuid().toString() prints one (url-safe base64, 22 chars)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def validate(req: ConsumerHeartbeatRequest, assignors: tuple[str, ...]) -> None:
    """Kafka's checks before a heartbeat reaches the group, with its messages."""
    def blank(value: str | None) -> bool:
        return value is not None and not value.strip()

    epoch = req.member_epoch
    if (req.version >= CLIENT_MEMBER_ID_SINCE or epoch > 0 or epoch == LEAVE_EPOCH) and blank(req.member_id):
        raise Refused(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if blank(req.group_id):
        raise Refused(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if blank(req.instance_id):
        raise Refused(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if blank(req.rack_id):
        raise Refused(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if epoch == JOIN_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise Refused(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise Refused(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise Refused(ErrorCode.INVALID_REQUEST,
                          "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise Refused(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise Refused(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise Refused(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is not supported. "
                                                      f"Supported assignors: {', '.join(assignors)}.")


class ConsumerProtocol(ModernProtocol):
    kind = "consumer"

    def __init__(self, ctx: CoordinatorContext, assignors: Callable[[], Mapping[str, ServerAssignor]]):
        super().__init__(ctx)
        # Looked up when first needed: the assignors module may not be importable yet in a test.
        self._assignors = assignors
        # Online migration (migration.py), set by the coordinator once the classic side exists.
        self.migration = None

    @property
    def groups(self) -> dict[str, ConsumerGroup]:
        return self.ctx.consumer_groups

    # ================================================================ heartbeat
    def heartbeat(self, req: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult:
        ctx = self.ctx
        try:
            validate(req, tuple(ctx.config.consumer_assignors))
            if ctx.availability(req.group_id):
                return ConsumerHeartbeatResult(ctx.availability(req.group_id))
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(req)
            return self._heartbeat(req)
        except Refused as refused:
            return ConsumerHeartbeatResult(refused.error, refused.message)

    def _group_for(self, req: ConsumerHeartbeatRequest) -> ConsumerGroup:
        ctx = self.ctx
        group = self.groups.get(req.group_id)
        if group is not None:
            return group
        joining = req.member_epoch == JOIN_EPOCH
        classic = ctx.groups.get(req.group_id)
        if classic is not None and not classic.is_in(GroupState.DEAD):
            if not joining:
                raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group.")
            if classic.members:
                # Online upgrade (or GROUP_ID_NOT_FOUND where Kafka refuses it).
                return self.migration.upgrade(classic, Refused)
        if not joining:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
        group = ConsumerGroup(req.group_id, created_ms=ctx.now())
        # An empty classic group gives way: Kafka writes its tombstone (offsets kept).
        group.replaces_classic = classic is not None and not classic.is_in(GroupState.DEAD)
        return group

    def _check_epoch(self, member: ConsumerMember, epoch: int, owned) -> None:
        if epoch == JOIN_EPOCH:
            return
        if epoch > member.member_epoch:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                          f"The consumer group member has a greater member epoch ({epoch}) than the one known by "
                          f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                          "partitions and rejoin.")
        if epoch < member.member_epoch:
            # The previous epoch once more: the answer that moved the member on may have been lost.
            subset = owned is not None and all(
                t in member.assigned and set(ps) <= set(member.assigned[t]) for t, ps in owned.items())
            if epoch != member.previous_member_epoch or not subset:
                raise Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                              f"The consumer group member has a smaller member epoch ({epoch}) than the one known "
                              f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                              "partitions and rejoin.")

    def _heartbeat(self, req: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult:
        ctx = self.ctx
        joining = req.member_epoch == JOIN_EPOCH
        group = self._group_for(req)
        limit = ctx.config.consumer_max_size
        if group.size >= limit and (not req.member_id or req.member_id not in group.members):
            raise Refused(ErrorCode.GROUP_MAX_SIZE_REACHED,
                          f"The consumer group has reached its maximum capacity of {limit} members.")
        member_id = req.member_id or new_member_id()
        owned = owned_from_request(req.topic_partitions)
        replaced: ConsumerMember | None = None
        if req.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise Refused(ErrorCode.UNKNOWN_MEMBER_ID,
                                  f"Member {member_id} is not a member of group {group.group_id}.")
                member = ConsumerMember(member_id)
            else:
                self._check_epoch(member, req.member_epoch, owned)
        else:
            existing = group.static_member(req.instance_id)
            if joining:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerMember(member_id)
                else:
                    if existing.member_epoch != STATIC_LEAVE_EPOCH:
                        raise Refused(ErrorCode.UNRELEASED_INSTANCE_ID,
                                      f"Static member {member_id} with instance id {req.instance_id} cannot join "
                                      f"the group because the instance id is owned by {existing.member_id} member.")
                    # The new incarnation takes the old one's place and assignment.
                    replaced = existing
                    member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            else:
                if existing is None:
                    raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
                if existing.member_id != member_id:
                    raise Refused(ErrorCode.FENCED_INSTANCE_ID,
                                  f"Static member {member_id} with instance id {req.instance_id} was fenced by "
                                  f"member {existing.member_id}.")
                self._check_epoch(existing, req.member_epoch, owned)
                member = existing
        regex_changed = (req.subscribed_topic_regex is not None
                         and req.subscribed_topic_regex != (member.subscribed_topic_regex or ""))
        if regex_changed and req.subscribed_topic_regex:
            regex.compile_regex(req.subscribed_topic_regex)

        # ---- from here on the group changes; only the assignor (or reconciling a member in an
        # unknown state) may still fail, and then the group is put back as it was (Kafka applies
        # none of a failed heartbeat's records)
        existed = self.groups.get(group.group_id) is group
        restore_point = snapshot(group) if existed else None
        classic = ctx.groups.get(group.group_id)
        mark = ctx.event_mark()
        try:
            result = self._apply(req, group, member, member_id, owned, replaced, regex_changed)
            self.migration.finish_upgrade(group)
            return result
        except (AssignorError, Refused) as err:
            ctx.drop_events_since(mark)
            if restore_point is None:
                self.groups.pop(group.group_id, None)
                if classic is not None:
                    ctx.groups[group.group_id] = classic
            else:
                self.groups[group.group_id] = restore(restore_point)
            if isinstance(err, Refused):
                raise
            raise Refused(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for "
                                                          f"epoch {group.group_epoch}: {err}") from None

    def _apply(self, req: ConsumerHeartbeatRequest, group: ConsumerGroup, member: ConsumerMember, member_id: str,
               owned, replaced: ConsumerMember | None, regex_changed: bool) -> ConsumerHeartbeatResult:
        ctx = self.ctx
        joining = req.member_epoch == JOIN_EPOCH
        is_new = member_id not in group.members and replaced is None
        if not self.groups.get(group.group_id) is group:
            self._create(group)
        before = member
        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(tuple(req.subscribed_topic_names) if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=((req.subscribed_topic_regex or None) if req.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=req.client_id, client_host=req.client_host, classic=None)
        names_changed = set(updated.subscribed_topic_names) != set(before.subscribed_topic_names)
        subscription_changed = names_changed or regex_changed
        # A regex new to the group is resolved in the background first (the epoch moves then); one
        # already resolved for another member, or dropping a regex, changes the subscription now.
        new_regex = updated.subscribed_topic_regex
        regex_resolved = regex_changed and (not new_regex or new_regex in group.resolved_regexes)
        topics = self._put_member(group, updated, replaced, is_new, "consumer",
                                  subscription_changed=names_changed or regex_resolved)
        self._maybe_refresh_regexes(group, topics, force=regex_changed and bool(new_regex)
                                    and new_regex not in group.resolved_regexes)
        self._maybe_update_target(group, topics, member_id)

        member = group.members[member_id]
        try:
            after = reconcile(member, group.assignment_epoch, group.target.get(member_id, {}),
                              self._member_topic_ids(member, topics, group), owned, subscription_changed,
                              lambda t, p: group.partition_owner(t, p))
        except FencedInUnknownState:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                                                         "The member must abandon all its partitions and rejoin.")
        if after is not member:
            group.put(after)
            self._reconciled(group, member, after)
        self._schedule_session(group, member_id)
        self._record(group)

        full = (req.rebalance_timeout_ms != -1 and (req.subscribed_topic_names is not None
                                                     or req.subscribed_topic_regex is not None)
                and req.topic_partitions is not None)
        send_assignment = joining or full or after.assigned_sets() != before.assigned_sets() or is_new
        assignment = ({t: sorted(ps) for t, ps in sorted(after.assigned.items()) if ps}
                      if send_assignment else None)
        return ConsumerHeartbeatResult(ErrorCode.NONE, None, member_id, after.member_epoch,
                                       ctx.group_config(group.group_id).get(
                                           "consumer.heartbeat.interval.ms", ctx.config.consumer_heartbeat_interval_ms),
                                       assignment)

    def _create(self, group: ConsumerGroup) -> None:
        # An empty classic group of the same id gives way; its offsets stay, as in Kafka. No
        # tombstone is written: the consumer group's record supersedes the classic one on reload
        # (kcoord.storage), and a classic tombstone would take the offsets along.
        self.ctx.groups.pop(group.group_id, None)
        self.groups[group.group_id] = group
        self.ctx.emit(K.CONSUMER_GROUP_CREATED, group)

    def _put_member(self, group: ConsumerGroup, updated: ConsumerMember, replaced: ConsumerMember | None,
                    is_new: bool, protocol: str, subscription_changed: bool) -> dict:
        """Store a member's new state (taking a replaced static member's place) and bump the group
        epoch when the subscription, or the metadata of the topics subscribed to, changed. Shared
        by both protocols' members; returns the topic metadata it was judged against."""
        if replaced is not None:
            self._replace_static(group, replaced, updated)
        else:
            group.put(updated)
        if is_new:
            self.ctx.emit(K.MEMBER_JOINED, group, member=updated, reason=f"joined with the {protocol} protocol")
        topics = self._topics()
        regex.prune(group)
        subscribed = self._subscribed_topics(group, topics)
        if subscription_changed or subscribed != group.subscribed_topics:
            group.subscribed_topics = subscribed
            self._bump_group_epoch(group, "subscription changed" if subscription_changed
                                   else "subscribed topic metadata changed", member=updated)
        return topics

    def _replace_static(self, group: ConsumerGroup, old: ConsumerMember, new: ConsumerMember) -> None:
        target = group.target.get(old.member_id, {})
        self._cancel_timers(group, old.member_id)
        group.remove(old.member_id)
        group.put(new)
        group.target[new.member_id] = target
        self.ctx.emit(K.MEMBER_REPLACED, group, member=new, reason="static member rejoined",
                      old_member_id=old.member_id)

    # ------------------------------------------------------------- assignment
    def _member_topic_names(self, member: ConsumerMember, topics: Mapping[str, tuple[str, int]],
                            group: ConsumerGroup) -> set[str]:
        names = {n for n in member.subscribed_topic_names if n in topics}
        if member.subscribed_topic_regex:
            # As last resolved: a regex not resolved yet matches nothing.
            names |= {n for n in group.resolved_regexes.get(member.subscribed_topic_regex, ()) if n in topics}
        return names

    def _record_topic_names(self, member: ConsumerMember, topics: Mapping[str, tuple[str, int]],
                            group: ConsumerGroup) -> tuple[str, ...]:
        """The names as Kafka's member record lists them (missing topics included), then what its
        regex resolves to: the uniform assignor walks topics in the order these give."""
        names = list(dict.fromkeys(member.subscribed_topic_names))
        if member.subscribed_topic_regex:
            resolved = set(group.resolved_regexes.get(member.subscribed_topic_regex, ()))
            names += [n for n in topics if n in resolved and n not in names]
        return tuple(names)

    def _member_topic_ids(self, member: ConsumerMember, topics: Mapping[str, tuple[str, int]],
                          group: ConsumerGroup) -> set[str]:
        return {topics[n][0] for n in self._member_topic_names(member, topics, group)}

    def _subscribed_topics(self, group: ConsumerGroup, topics) -> dict[str, tuple[str, int]]:
        names: set[str] = set()
        for member in group.members.values():
            names |= self._member_topic_names(member, topics, group)
        return {n: topics[n] for n in sorted(names)}

    def _bump_group_epoch(self, group: ConsumerGroup, reason: str, member: ConsumerMember | None = None) -> None:
        group.group_epoch += 1
        self.ctx.emit(K.GROUP_EPOCH_BUMPED, group, member=member, reason=reason, group_epoch=group.group_epoch)

    def _assignor_name(self, group: ConsumerGroup) -> str:
        configured = list(self.ctx.config.consumer_assignors)
        votes: dict[str, int] = {}
        for m in group.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return configured[0]
        best = max(votes.values())
        return next(n for n in configured + sorted(votes) if votes.get(n) == best)

    def _maybe_update_target(self, group: ConsumerGroup, topics, updating: str | None = None) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        interval = self.ctx.group_config(group.group_id).get("consumer.assignment.interval.ms",
                                                             self.ctx.config.consumer_assignment_interval_ms)
        if group.assignment_timestamp_ms and interval and self.ctx.now() < group.assignment_timestamp_ms + interval:
            # Too soon after the last one (Kafka batches them): members reconcile to the previous
            # target meanwhile, a new member to nothing, and the group stays Assigning.
            return
        name = self._assignor_name(group)
        if not group.subscribed_topics:
            # Nothing to assign: every assignor would hand out nothing, so none is asked.
            self._set_target(group, name, {m: {} for m in group.members})
            return
        try:
            assignor = self._assignors()[name]
        except NotImplementedError as err:
            # Only while kcoord.coordinator.assignors.spec is being written: the group stays Assigning
            # and members keep what they have, rather than failing a request half done.
            log.warning("[GroupId %s] no target assignment for epoch %d: %s", group.group_id, group.group_epoch, err)
            return
        # Kafka's member map holds the group's members, then the one being updated.
        ordered = [m for m in group.members.values() if m.member_id != updating]
        ordered += [group.members[updating]] if updating in group.members else []
        specs = {m.member_id: MemberSpec(m.member_id, m.instance_id, m.rack_id,
                                         frozenset(self._member_topic_ids(m, topics, group)),
                                         dict(group.target.get(m.member_id, {})),
                                         self._record_topic_names(m, topics, group))
                 for m in ordered}
        topic_specs = {tid: TopicSpec(tid, n, count) for n, (tid, count) in group.subscribed_topics.items()}
        regexes = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
        resolved = {r: [n for n in topics if n in group.resolved_regexes.get(r, ())] for r in regexes}
        kind = group_subscription_type(
            [(m.subscribed_topic_names, m.subscribed_topic_regex) for m in ordered], resolved)
        computed = assignor.assign(specs, topic_specs, kind)
        # The assignor's partitions are kept as they come (RecordPartitions know the order Kafka
        # lists them in; the next assignment and the target record follow it).
        self._set_target(group, name, {mid: {t: ps if isinstance(ps, frozenset) else RecordPartitions(ps)
                                             for t, ps in computed.get(mid, {}).items() if ps}
                                       for mid in group.members})

    def _set_target(self, group: ConsumerGroup, name: str, new_target: dict) -> None:
        changed = new_target != group.target
        group.target = new_target
        group.assignor_name = name
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = self.ctx.now()
        if changed:
            self.ctx.emit(K.TARGET_ASSIGNMENT_CHANGED, group, reason=f"computed by the {name} assignor",
                          assignment_epoch=group.assignment_epoch)

    def _reconciled(self, group: ConsumerGroup, before: ConsumerMember, after: ConsumerMember) -> None:
        ctx = self.ctx
        if after.member_epoch != before.member_epoch:
            ctx.emit(K.MEMBER_EPOCH_BUMPED, group, member=after, member_epoch=after.member_epoch,
                     previous_member_epoch=before.member_epoch, member_state=str(after.state))
        if after.state is MemberState.UNREVOKED_PARTITIONS:
            ctx.emit(K.PARTITIONS_REVOKING, group, member=after, member_epoch=after.member_epoch,
                     revoking={t: sorted(ps) for t, ps in after.pending_revocation.items()})
            # Classic members have join and sync timeouts instead (migration.py).
            if not after.uses_classic:
                self._schedule_rebalance_timeout(group, after)
        else:
            ctx.timer.cancel(self.rebalance_key(group.group_id, after.member_id))

    # ------------------------------------------------------------ regexes
    def _maybe_refresh_regexes(self, group: ConsumerGroup, topics, force: bool) -> None:
        key = regex.regex_key(group.group_id)
        if self.ctx.timer.is_scheduled(key) or not regex.refresh_due(
                group, topics, force, self.ctx.now(), self.ctx.config.consumer_regex_refresh_interval_ms):
            return
        group_id = group.group_id
        # An operation of its own, after this heartbeat is answered (Kafka's executor).
        self.ctx.schedule(key, 0, lambda: self._resolve_regexes(group_id))

    def _resolve_regexes(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        topics = self._topics()
        changed = regex.resolve(group, topics, self.ctx.now())
        subscribed = self._subscribed_topics(group, topics)
        if changed or subscribed != group.subscribed_topics:
            group.subscribed_topics = subscribed
            self._bump_group_epoch(group, "subscribed regular expressions resolved")
        self._record(group)

    # ------------------------------------------------------------------ timers
    def _default_session_timeout_ms(self) -> int:
        return self.ctx.config.consumer_session_timeout_ms

    def _rebalance_expired(self, epoch: int, timeout_ms: int) -> str:
        return f"it failed to transition from epoch {epoch} within {timeout_ms}ms"

    def _cancel_timers(self, group: ConsumerGroup, member_id: str) -> None:
        super()._cancel_timers(group, member_id)
        self.migration.cancel_timers(group.group_id, member_id)

    def _fence(self, group: ConsumerGroup, member: ConsumerMember, kind: K, reason: str) -> None:
        self.fence_members(group, [member], kind, reason)

    def fence_members(self, group: ConsumerGroup, members: list[ConsumerMember], kind: K, reason: str) -> None:
        """Remove members (left, expired); the group becomes classic again if only classic members
        remain and the migration policy allows it (online downgrade)."""
        if self.migration.downgrade_allowed(group, {m.member_id for m in members}):
            self.migration.to_classic(group, members, kind, reason)
            return
        for member in members:
            self._cancel_timers(group, member.member_id)
            group.remove(member.member_id)
            self.ctx.emit(kind, group, member=member, reason=reason)
        regex.prune(group)
        group.subscribed_topics = self._subscribed_topics(group, self._topics())
        self._bump_group_epoch(group, f"member{'s' if len(members) > 1 else ''} "
                                      f"{', '.join(m.member_id for m in members)} removed: {reason}")
        if group.is_empty():
            group.emptied_at_ms = self.ctx.now()
            self.ctx.emit(K.EMPTY, group)
        self._record(group)

    # =================================================================== leave
    def _leave(self, req: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found.")
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID,
                              f"Member {req.member_id} is not a member of group {group.group_id}.")
        else:
            member = group.static_member(req.instance_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise Refused(ErrorCode.FENCED_INSTANCE_ID,
                              f"Static member {req.member_id} with instance id {req.instance_id} was fenced by "
                              f"member {member.member_id}.")
            if req.member_epoch == STATIC_LEAVE_EPOCH:
                # Gone for now: the assignment waits (its epochs reset) for a new incarnation, until
                # the session timer, still running, fences it.
                left = replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={},
                               assigned={t: {p: 0 for p in ps} for t, ps in member.assigned.items()})
                group.put(left)
                self.ctx.timer.cancel(self.rebalance_key(group.group_id, member.member_id))
                self.ctx.emit(K.MEMBER_LEFT, group, member=left, reason="static member left temporarily")
                self._record(group)
                # A leaving member is told no heartbeat interval (0), as Kafka does.
                return ConsumerHeartbeatResult(ErrorCode.NONE, None, member.member_id, STATIC_LEAVE_EPOCH, 0)
        self._fence(group, member, K.MEMBER_LEFT, "the member left the group")
        return ConsumerHeartbeatResult(ErrorCode.NONE, None, req.member_id, req.member_epoch, 0)

    # ================================================================ describe
    def describe(self, group_id: str) -> ConsumerGroupDescription:
        ctx = self.ctx
        if ctx.availability(group_id):
            return ConsumerGroupDescription(group_id, ctx.availability(group_id), state="")
        group = self.groups.get(group_id)
        if group is None:
            # Kafka describes a group it cannot describe by its id and error alone: no state.
            if group_id in ctx.groups or group_id in ctx.streams_groups or group_id in ctx.share_groups:
                return ConsumerGroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND,
                                                f"Group {group_id} is not a consumer group.", state="")
            return ConsumerGroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.",
                                            state="")
        names = {tid: name for name, (tid, _) in self._topics().items()}

        def assignment(parts: Mapping[str, object]) -> list[dict]:
            return [{"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(ps)}
                    for t, ps in sorted(parts.items()) if ps]

        members = [{"member_id": m.member_id, "member_type": 0 if m.uses_classic else 1,
                    "instance_id": m.instance_id, "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": sorted(m.subscribed_topic_names),
                    # "" rather than null without a regex, as Kafka describes its members.
                    "subscribed_topic_regex": m.subscribed_topic_regex or "",
                    # Kafka counts partitions pending revocation as the member's until it has
                    # given them up.
                    "assignment": assignment({t: {*m.assigned.get(t, ()), *m.pending_revocation.get(t, ())}
                                              for t in {*m.assigned, *m.pending_revocation}}),
                    "target_assignment": assignment(group.target.get(m.member_id, {}))}
                   for m in group.members.values()]
        return ConsumerGroupDescription(group_id, ErrorCode.NONE, None, str(group.state), group.group_epoch,
                                        group.assignment_epoch, group.assignor_name or
                                        self.ctx.config.consumer_assignors[0], members)

    # ========================================================== other requests
    def validate_commit(self, group: ConsumerGroup, member_id: str, epoch: int,
                        partitions: list[tuple[str, int]], version: int | None) -> tuple[ErrorCode, dict]:
        """OffsetCommit by a consumer group's member: (group error, {(topic, partition): error}).
        `version` None: a transactional commit, which any TxnOffsetCommit version may make."""
        if epoch < 0 and group.is_empty():
            # The admin client, or a consumer outside group management: an empty group takes it.
            return ErrorCode.NONE, {}
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, {}
        # A classic member (online migration) commits with any version, its member epoch as
        # generation; a wrong one is an ILLEGAL_GENERATION rather than a STALE_MEMBER_EPOCH.
        stale = ErrorCode.ILLEGAL_GENERATION if member.uses_classic else ErrorCode.STALE_MEMBER_EPOCH
        if version is not None and version < 9 and not member.uses_classic:
            return ErrorCode.UNSUPPORTED_VERSION, {}
        if epoch == member.member_epoch:
            return ErrorCode.NONE, {}
        if epoch > member.member_epoch:
            return stale, {}
        topics = self._topics()
        errors = {}
        for topic, partition in partitions:
            tid = topics.get(topic, ("",))[0]
            given = member.assignment_epoch_of(tid, partition)
            if given is None or epoch < given:
                errors[(topic, partition)] = stale
        return ErrorCode.NONE, errors

    def validate_fetch(self, group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode:
        if member_id is None and epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch == member.member_epoch:
            return ErrorCode.NONE
        return ErrorCode.ILLEGAL_GENERATION if member.uses_classic else ErrorCode.STALE_MEMBER_EPOCH

    # ============================================================ durable state
    def _snapshot(self, group: ConsumerGroup) -> dict:
        return snapshot(group)

    def _group_record(self, group_id: str, value: dict | None, group: ConsumerGroup | None = None):
        replaces = group is not None and group.replaces_classic
        if group is not None:
            group.replaces_classic = False
        return ConsumerGroupRecord(group_id, value, replaces_classic=replaces)

    def load(self, value: dict) -> ConsumerGroup:
        """A group read back after a restart: members keep epochs and assignments, and get a fresh
        session, so members that keep heartbeating carry on; the others are fenced in time."""
        group = restore(value)
        if "subscribed_topics" not in value:
            # Read back from Kafka's records, which do not carry them: worked out again, as Kafka
            # works out its subscription metadata when the group is loaded.
            group.subscribed_topics = self._subscribed_topics(group, self._topics())
            group.assignor_name = self._assignor_name(group)
        self.groups[group.group_id] = group
        self.ctx.changed(group)  # read back, not written: no record or event tells of it
        for member_id, member in group.members.items():
            self._schedule_session(group, member_id, member.classic.session_timeout_ms if member.classic else None)
        for member in group.members.values():
            if member.state is MemberState.UNREVOKED_PARTITIONS and not member.uses_classic:
                self._schedule_rebalance_timeout(group, member)
        return group


