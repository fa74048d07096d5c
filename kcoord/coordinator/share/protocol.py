"""The share group protocol (KIP-932): ShareGroupHeartbeat, its timers, ShareGroupDescribe and
what other requests need of a share group, as Kafka 4.3.1's GroupMetadataManager does them.

One heartbeat does, in order:
1. find or create the group and the member (epoch 0 joins with the member id the client made
   itself; -1 leaves);
2. update the member (rack, subscribed topic names, client); a change of its subscription bumps
   the group epoch, and so do partitions that became assignable but are not in the target
   assignment, and a change of the subscribed topics' metadata (the metadata hash);
3. compute the target assignment with the `simple` assignor if the group epoch is ahead of it
   (unless share.assignment.interval.ms holds it back), over the assignable partitions only;
4. move the member to its target at once (Kafka's ShareGroupAssignmentBuilder: no revocation),
   keeping only the topics it subscribes to;
5. make the subscribed partitions not yet initialized assignable.

Step 5 is where kcoord simplifies Kafka: Kafka asks the share coordinator to initialize the
share-partition state of those partitions after the heartbeat, records them as initializing,
then as initialized once it answered (ShareGroupStatePartitionMetadata). kcoord's share
partitions initialize themselves on first use (kcoord.share), so the partitions are recorded as
initialized in the heartbeat's own records. The member sees what a Kafka member sees: its
first heartbeat answers an empty assignment, the next one (group epoch + 1) its partitions.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Callable

from kcoord.coordinator.assignors.simple import SimpleAssignor
from kcoord.coordinator.assignors.spec import AssignorError, MemberSpec, TopicSpec, group_subscription_type
from kcoord.coordinator.context import CoordinatorContext
from kcoord.coordinator.events import EventBus, EventKind as K, GroupEvent
from kcoord.coordinator.javaorder import hashset_copy_order, record_list, string_hash
from kcoord.coordinator.modern import ModernProtocol, topics_digest
from kcoord.coordinator.records import ShareGroupRecord
from kcoord.coordinator.results import Refused
from kcoord.coordinator.share import snapshot as snap
from kcoord.coordinator.share.group import JOIN_EPOCH, LEAVE_EPOCH, ShareGroup, ShareMember
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.coordinator")


@dataclass
class ShareHeartbeatRequest:
    """ShareGroupHeartbeat v1 as the handler decodes it; None marks a field left out."""
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class ShareHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    # topic id -> partitions; None: not sent (unchanged)
    assignment: dict[str, list[int]] | None = None

    def failed(self, error: ErrorCode) -> "ShareHeartbeatResult":
        return ShareHeartbeatResult(error)


@dataclass
class ShareOffsetsCheck:
    """Whether Alter/DeleteShareGroupOffsets may change a group's share-partition state."""
    error: ErrorCode
    message: str | None = None

    def failed(self, error: ErrorCode) -> "ShareOffsetsCheck":
        return ShareOffsetsCheck(error)


def on_member_gone(bus: EventBus, fn: Callable[[str, str], None]) -> Callable[[], None]:
    """Call `fn(group_id, member_id)` whenever a share group's member leaves (epoch -1) or is
    fenced (session timeout, a fault hook), once that is written: what lets the brokers release
    the records the member holds. Returns the unsubscribe function."""
    def listener(event: GroupEvent) -> None:
        if event.kind in (K.MEMBER_LEFT, K.MEMBER_EXPIRED) and event.details.get("group_type") == "share":
            fn(event.group_id, event.member_id)
    return bus.subscribe(listener)


def on_group_deleted(bus: EventBus, fn: Callable[[str], None]) -> Callable[[], None]:
    """Call `fn(group_id)` when a share group is deleted (DeleteGroups), once that is written: its
    share-partition state goes too (Kafka deletes it through the persister). Returns the
    unsubscribe function."""
    def listener(event: GroupEvent) -> None:
        if event.kind is K.DEAD and event.details.get("group_type") == "share":
            fn(event.group_id)
    return bus.subscribe(listener)


def _not_empty(value: str | None, what: str) -> None:
    if value is not None and not value.strip():
        raise Refused(ErrorCode.INVALID_REQUEST, f"{what} can't be empty.")


def validate(req: ShareHeartbeatRequest) -> None:
    """GroupCoordinatorService's checks, in its order and with its messages."""
    _not_empty(req.member_id, "MemberId")
    _not_empty(req.group_id, "GroupId")
    _not_empty(req.rack_id, "RackId")
    if req.member_epoch == JOIN_EPOCH:
        if not req.subscribed_topic_names:
            raise Refused(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < LEAVE_EPOCH:
        raise Refused(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")


class ShareProtocol(ModernProtocol):
    kind = "share"
    event_details = {"group_type": "share"}

    def __init__(self, ctx: CoordinatorContext):
        super().__init__(ctx)
        self.assignor = SimpleAssignor()

    @property
    def groups(self) -> dict[str, ShareGroup]:
        return self.ctx.share_groups

    # ================================================================ heartbeat
    leave_epochs = (LEAVE_EPOCH,)
    result_type = ShareHeartbeatResult

    def _validate(self, req: ShareHeartbeatRequest) -> None:
        validate(req)

    def other_kind(self, group_id: str) -> bool:
        """A group of another type holds the id."""
        ctx = self.ctx
        classic = ctx.groups.get(group_id)
        return ((classic is not None and str(classic.state) != "Dead") or group_id in ctx.consumer_groups
                or group_id in ctx.streams_groups)

    def _group_for(self, req: ShareHeartbeatRequest) -> ShareGroup:
        group = self.groups.get(req.group_id)
        if group is not None:
            return group
        if self.other_kind(req.group_id):
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
        if req.member_epoch != JOIN_EPOCH:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {req.group_id} not found.")
        return ShareGroup(req.group_id)

    @staticmethod
    def _check_epoch(member: ShareMember, epoch: int) -> None:
        if epoch == JOIN_EPOCH:
            return
        if epoch > member.member_epoch:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                          f"The share group member has a greater member epoch ({epoch}) than the one known by "
                          f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                          "partitions and rejoin.")
        if epoch < member.member_epoch and epoch != member.previous_member_epoch:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                          f"The share group member has a smaller member epoch ({epoch}) than the one known by "
                          f"the group coordinator ({member.member_epoch}), and it does not match the previous "
                          f"member epoch ({member.previous_member_epoch}). The member must abandon all its "
                          "partitions and rejoin.")

    def _restore_point(self, group: ShareGroup):
        value = snap.snapshot(group)
        return lambda: snap.restore(value)

    def _heartbeat(self, req: ShareHeartbeatRequest, group: ShareGroup) -> ShareHeartbeatResult:
        ctx = self.ctx
        joining = req.member_epoch == JOIN_EPOCH
        max_size = ctx.config.share_max_size
        if group.size >= max_size and req.member_id not in group.members:
            raise Refused(ErrorCode.GROUP_MAX_SIZE_REACHED,
                          f"The share group has reached its maximum capacity of {max_size} members.")
        member = group.members.get(req.member_id)
        if member is None:
            if not joining:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID,
                              f"Member {req.member_id} is not a member of group {group.group_id}.")
            member = ShareMember(req.member_id)
        else:
            self._check_epoch(member, req.member_epoch)
        is_new = req.member_id not in group.members
        if self.groups.get(group.group_id) is not group:
            self.groups[group.group_id] = group
            ctx.emit(K.SHARE_GROUP_CREATED, group)

        # 1. the member
        names = member.subscribed_topic_names
        if req.subscribed_topic_names is not None:
            names = tuple(hashset_copy_order(list(req.subscribed_topic_names), string_hash))
        updated = replace(member, rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
                          subscribed_topic_names=names, client_id=req.client_id, client_host=req.client_host)
        subscription_changed = set(updated.subscribed_topic_names) != set(member.subscribed_topic_names)
        if is_new:
            group.put(member)   # Kafka's group holds the new member as created, not yet updated
        bump = subscription_changed
        if not bump and group.assignment_epoch >= group.group_epoch:
            bump = self._initialized_assignment_pending(group)
        group.put(updated)
        if is_new:
            ctx.emit(K.MEMBER_JOINED, group, member=updated, reason="joined with the share protocol")

        # 2. the group epoch
        topics = self._topics()
        metadata_hash = topics_digest(group.subscribed_topic_names(), topics)
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash
            ctx.emit(K.GROUP_EPOCH_BUMPED, group, member=updated, reason="member or subscribed topics changed",
                     group_epoch=group.group_epoch)

        # 3. the target assignment
        self._maybe_update_target(group, updating=req.member_id)

        # 4. the member moves to its target at once
        member = group.members[req.member_id]
        if subscription_changed or member.member_epoch != group.assignment_epoch:
            moved = self._reconcile(member, group, topics, subscription_changed)
            if moved != member:
                group.put(moved)
                if moved.member_epoch != member.member_epoch:
                    ctx.emit(K.MEMBER_EPOCH_BUMPED, group, member=moved, member_epoch=moved.member_epoch,
                             previous_member_epoch=member.member_epoch, member_state="stable")
            member = moved
        self._schedule_session(group, member.member_id)

        result = ShareHeartbeatResult(ErrorCode.NONE, None, member.member_id, member.member_epoch,
                                      ctx.group_config(group.group_id).get("share.heartbeat.interval.ms",
                                                                           ctx.config.share_heartbeat_interval_ms))
        if joining or req.subscribed_topic_names is not None or member.assigned != updated.assigned:
            # As Kafka lists them: the assignor's order (Java's HashMap and HashSet order).
            result.assignment = {t: record_list(ps) for t, ps in member.assigned.items()}

        # 5. subscribed partitions become assignable (see the module's docstring)
        self._initialize(group, topics)
        self._record(group)
        return result

    def _reconcile(self, member: ShareMember, group: ShareGroup, topics, subscription_changed: bool) -> ShareMember:
        subscribed_ids = {topics[n][0] for n in member.subscribed_topic_names if n in topics}
        target = group.target.get(member.member_id, {})
        assigned = {t: ps for t, ps in target.items() if t in subscribed_ids}
        if group.assignment_epoch != member.member_epoch:
            return replace(member, assigned=assigned, previous_member_epoch=member.member_epoch,
                           member_epoch=group.assignment_epoch)
        if subscription_changed:
            return replace(member, assigned=assigned)
        return member

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """Kafka's initializedAssignmentPending: a subscribed topic's initialized partitions are
        not exactly the ones in the target assignment."""
        if group.is_empty() or not group.initialized:
            return False
        subscribed = group.subscribed_topic_names()
        if not subscribed:
            return False
        in_target: dict[str, set[int]] = {}
        for assignment in group.target.values():
            for t, ps in assignment.items():
                in_target.setdefault(t, set()).update(ps)
        return any(name in subscribed and in_target.get(tid) != set(ps)
                   for tid, (name, ps) in group.initialized.items())

    def _initialize(self, group: ShareGroup, topics) -> None:
        for name in sorted(group.subscribed_topic_names()):
            if name not in topics:
                continue
            tid, count = topics[name]
            _, done = group.initialized.get(tid, (name, frozenset()))
            if len(done) < count:
                group.initialized[tid] = (name, frozenset(range(count)))

    # ------------------------------------------------------------- assignment
    def _maybe_update_target(self, group: ShareGroup, updating: str | None = None) -> None:
        ctx = self.ctx
        if group.assignment_epoch >= group.group_epoch:
            return
        interval = ctx.group_config(group.group_id).get("share.assignment.interval.ms",
                                                        ctx.config.share_assignment_interval_ms)
        if group.assignment_timestamp_ms and interval and ctx.now() < group.assignment_timestamp_ms + interval:
            return
        topics = self._topics()
        # Kafka's member map holds the group's members, then the one heartbeating.
        ordered = [m for m in group.members.values() if m.member_id != updating]
        ordered += [group.members[updating]] if updating in group.members else []
        specs = {m.member_id: MemberSpec(m.member_id, None, m.rack_id,
                                         frozenset(topics[n][0] for n in m.subscribed_topic_names if n in topics),
                                         dict(group.target.get(m.member_id, {})), m.subscribed_topic_names)
                 for m in ordered}
        topic_specs = {tid: TopicSpec(tid, n, count) for n, (tid, count) in topics.items()
                       if n in group.subscribed_topic_names()}
        kind = group_subscription_type([(m.subscribed_topic_names, None) for m in ordered], {})
        try:
            computed = self.assignor.assign(specs, topic_specs, kind,
                                            {tid: ps for tid, (_, ps) in group.initialized.items()})
        except AssignorError as err:
            raise Refused(ErrorCode.UNKNOWN_SERVER_ERROR, str(err)) from None
        target = {mid: dict(computed.get(mid, {})) for mid in group.members}
        changed = target != group.target
        group.target = target
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = ctx.now()
        if changed:
            ctx.emit(K.TARGET_ASSIGNMENT_CHANGED, group, reason="computed by the simple assignor",
                     assignment_epoch=group.assignment_epoch)

    # ------------------------------------------------------------------ timers
    def _default_session_timeout_ms(self) -> int:
        return self.ctx.config.share_session_timeout_ms

    def _rebalance_expired(self, epoch: int, timeout_ms: int) -> str:
        return "share groups have no rebalance timeout"   # never scheduled: nothing is revoked

    def _fence(self, group: ShareGroup, member: ShareMember, kind: K, reason: str) -> None:
        """Kafka's shareGroupFenceMember: the member's records go, the group epoch goes up (the
        assignment is computed again at the next heartbeat)."""
        self._cancel_timers(group, member.member_id)
        group.remove(member.member_id)
        self.ctx.emit(kind, group, member=member, reason=reason, **self.event_details)
        group.group_epoch += 1
        group.metadata_hash = topics_digest(group.subscribed_topic_names(), self._topics())
        self.ctx.emit(K.GROUP_EPOCH_BUMPED, group, reason=f"member {member.member_id} removed: {reason}",
                      group_epoch=group.group_epoch)
        if group.is_empty():
            self.ctx.emit(K.EMPTY, group)
        self._record(group)

    # =================================================================== leave
    def _leave(self, req: ShareHeartbeatRequest) -> ShareHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group."
                          if self.other_kind(req.group_id) else f"Group {req.group_id} not found.")
        member = group.members.get(req.member_id)
        if member is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                                       f"{group.group_id}.")
        self._fence(group, member, K.MEMBER_LEFT, "the member left the group")
        return ShareHeartbeatResult(ErrorCode.NONE, None, req.member_id, req.member_epoch, 0)

    # ================================================================ describe
    def check_offsets_change(self, group_id: str, create: bool) -> ShareOffsetsCheck:
        """GroupMetadataManager's checks before a share group's start offsets are altered or
        deleted: a share group, with no member. Alter (`create`) makes an empty share group of an
        unknown id, as Kafka's getOrMaybeCreateShareGroup does; delete refuses it."""
        ctx = self.ctx
        if not group_id:
            return ShareOffsetsCheck(ErrorCode.INVALID_GROUP_ID)
        if ctx.availability(group_id):
            return ShareOffsetsCheck(ctx.availability(group_id))
        group = self.groups.get(group_id)
        if group is None:
            if self.other_kind(group_id):
                return ShareOffsetsCheck(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
            if not create:
                return ShareOffsetsCheck(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            group = self.groups[group_id] = ShareGroup(group_id)
            ctx.emit(K.SHARE_GROUP_CREATED, group)
            self._record(group)
        if not group.is_empty():
            return ShareOffsetsCheck(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        return ShareOffsetsCheck(ErrorCode.NONE)

    def describe(self, group_id: str) -> dict:
        """ShareGroupDescribe's DescribedGroup for one group id, as data."""
        ctx = self.ctx
        if not group_id:
            return {"error_code": ErrorCode.INVALID_GROUP_ID, "group_id": ""}
        if ctx.availability(group_id):
            return {"error_code": ctx.availability(group_id), "group_id": group_id}
        group = self.groups.get(group_id)
        if group is None:
            return {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "group_id": group_id,
                    "error_message": f"Group {group_id} is not a share group." if self.other_kind(group_id)
                    else f"Group {group_id} not found."}
        names = {tid: name for name, (tid, _) in self._topics().items()}
        members = [{
            "member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
            "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "assignment": {"topic_partitions": [{"topic_id": t, "topic_name": names[t], "partitions": record_list(ps)}
                                                for t, ps in m.assigned.items() if t in names]}}
            for m in group.members.values()]
        return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
                "group_state": str(group.state), "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch, "assignor_name": self.assignor.name,
                "members": members}

    # ============================================================ durable state
    def _snapshot(self, group: ShareGroup) -> dict:
        return snap.snapshot(group)

    def _group_record(self, group_id: str, value: dict | None, group: ShareGroup | None = None):
        return ShareGroupRecord(group_id, value)

    def load(self, value: dict) -> ShareGroup:
        """A group read back after a restart: members keep epochs and assignments and get a
        fresh session."""
        group = snap.restore(value)
        self.groups[group.group_id] = group
        self.ctx.changed(group)
        for member in group.members.values():
            self._schedule_session(group, member.member_id)
        return group
