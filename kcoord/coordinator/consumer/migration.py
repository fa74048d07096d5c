"""Online migration between classic groups and consumer groups (KIP-848), as Kafka 4.x does it
(GroupMetadataManager with group.consumer.migration.policy, default `bidirectional`).

- Upgrade: a ConsumerGroupHeartbeat joining (epoch 0) a classic group with members turns it
  into a consumer group, if the policy allows upgrades, the group's protocol type is `consumer`,
  it is no larger than group.consumer.max.size and every member's subscription and assignment
  parse; otherwise GROUP_ID_NOT_FOUND with Kafka's message. Every classic member becomes a
  member at epoch = generation, owning its last assignment, which is also the target; parked
  JoinGroup/SyncGroup answers get REBALANCE_IN_PROGRESS.
- Classic members of a consumer group keep speaking JoinGroup, SyncGroup, Heartbeat and
  LeaveGroup: a JoinGroup is one reconciliation step (answered at once, as a follower, with the
  member epoch as generation), SyncGroup hands over what the member owns, and Heartbeat answers
  REBALANCE_IN_PROGRESS while the member has a step to take. Their sessions use their own
  session timeout; instead of a rebalance timeout they have a join and a sync timeout.
- Downgrade: when members leave or are fenced and only classic members remain, the group becomes
  a classic group again (policy allowing downgrades, and no more than group.max.size members):
  Stable at generation = group epoch, each member's target assignment as its assignment, then a
  rebalance.

Records: a conversion ends one kind's records and starts the other's (kcoord.log.consumer_offsets
writes a classic group's tombstone before the consumer group's records, and the consumer group's
tombstones before the classic group's GroupMetadata record), offsets untouched.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from io import BytesIO
from typing import TYPE_CHECKING, Callable

from kcoord.coordinator.consumer.group import ClassicMemberMetadata, ConsumerGroup, ConsumerMember, MemberState
from kcoord.coordinator.consumer.protocol import new_member_id
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.events import RebalanceCause as Cause
from kcoord.coordinator.classic.group import Group, Member
from kcoord.coordinator.consumer.reconciliation import FencedInUnknownState, reconcile
from kcoord.coordinator.records import ConsumerGroupRecord
from kcoord.coordinator.requests import HeartbeatRequest, JoinRequest, LeaveMember, SyncRequest
from kcoord.coordinator.results import UNKNOWN_MEMBER, JoinResult, LeaveResult, SyncResult
from kcoord.coordinator.classic.state import GroupState
from wire import codec
from wire.errors import ErrorCode

if TYPE_CHECKING:
    from kcoord.coordinator.consumer.protocol import ConsumerProtocol
    from kcoord.coordinator.context import CoordinatorContext
    from kcoord.coordinator.classic.membership import ClassicMembership

PROTOCOL_TYPE = "consumer"
# The embedded consumer protocol versions kafka-clients reads (newer ones are read as the newest).
HIGHEST_EMBEDDED_VERSION = 3


# ----------------------------------------------------------- the embedded consumer protocol
class MalformedProtocol(ValueError):
    """Consumer-protocol bytes Kafka's ConsumerProtocol would refuse (its SchemaException)."""


@dataclass
class Subscription:
    topics: list[str]
    owned: list[tuple[str, list[int]]]
    rack_id: str | None


def _version(data: bytes) -> int:
    if data is None or len(data) < 2:
        raise MalformedProtocol("no version")
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        raise MalformedProtocol(f"unsupported version {version}")
    return min(version, HIGHEST_EMBEDDED_VERSION)


def _decode(spec: str, data: bytes):
    version = _version(data)
    try:
        # Trailing bytes are ignored, as Kafka's reader does: a newer version's extra fields.
        return codec.compiled_message(spec, version).decode_from(BytesIO(data[2:]))
    except Exception as err:
        raise MalformedProtocol(str(err)) from None


def decode_subscription(data: bytes) -> Subscription:
    msg = _decode("ConsumerProtocolSubscription", data)
    owned = [(t.topic, list(t.partitions)) for t in (getattr(msg, "owned_partitions", None) or ())]
    return Subscription(list(msg.topics), owned, getattr(msg, "rack_id", None))


def decode_assignment(data: bytes) -> tuple[list[tuple[str, list[int]]], bytes | None]:
    msg = _decode("ConsumerProtocolAssignment", data)
    return [(t.topic, list(t.partitions)) for t in msg.assigned_partitions], msg.user_data


def encode_assignment(partitions: dict[str, list[int]], metadata: bytes) -> bytes:
    """An assignment in the version of the member's subscription metadata, as Kafka answers."""
    version = _version(metadata)
    body = codec.compiled_message("ConsumerProtocolAssignment", version).encode(
        {"assigned_partitions": [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(partitions.items())],
         "user_data": None})
    return struct.pack(">h", version) + body


def _consumer_join_key(g: str, m: str) -> str:
    return f"consumer-join-{g}-{m}"


def _consumer_sync_key(g: str, m: str) -> str:
    return f"consumer-sync-{g}-{m}"


class _Refused(Exception):
    def __init__(self, error: ErrorCode):
        super().__init__(error.name)
        self.error = error


class Migration:
    def __init__(self, ctx: "CoordinatorContext", consumer: "ConsumerProtocol", membership: "ClassicMembership"):
        self.ctx = ctx
        self.consumer = consumer
        self.membership = membership

    # ------------------------------------------------------------- helpers
    def _names(self) -> dict[str, str]:
        return {tid: name for name, (tid, _) in self.consumer._topics().items()}

    def _by_name(self, parts) -> dict[str, list[int]]:
        names = self._names()
        return {names[t]: sorted(ps) for t, ps in parts.items() if ps and t in names}

    def _by_id(self, pairs) -> dict[str, frozenset[int]]:
        topics = self.consumer._topics()
        out: dict[str, frozenset[int]] = {}
        for name, partitions in pairs:
            if name in topics:  # a topic gone since is dropped, as Kafka's metadata image drops it
                out[topics[name][0]] = out.get(topics[name][0], frozenset()) | frozenset(partitions)
        return out

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        self.ctx.timer.cancel(_consumer_join_key(group_id, member_id))
        self.ctx.timer.cancel(_consumer_sync_key(group_id, member_id))

    def _schedule_join_timeout_if_absent(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        key = _consumer_join_key(group.group_id, member.member_id)
        if not self.ctx.timer.is_scheduled(key):
            self._schedule_fence(key, group.group_id, member.member_id, member.rebalance_timeout_ms,
                                 "the classic member failed to join within the rebalance timeout")

    def _schedule_fence(self, key: str, group_id: str, member_id: str, timeout_ms: int, reason: str) -> None:
        self.ctx.schedule(key, max(timeout_ms, 0),
                          lambda: self.consumer._fence_by_timer(group_id, member_id, None, reason))

    # ============================================================== upgrade
    def upgrade(self, classic: Group, refuse: Callable[[ErrorCode, str], Exception]) -> ConsumerGroup:
        """The consumer group a classic group with members becomes when a consumer-protocol member
        joins it; nothing changes until the heartbeat is applied (`finish_upgrade`)."""
        ctx, gid = self.ctx, classic.group_id
        prefix = f"Cannot upgrade classic group {gid} to consumer group because"
        if not ctx.config.upgrade_enabled:
            raise refuse(ErrorCode.GROUP_ID_NOT_FOUND, f"{prefix} online upgrade is disabled.")
        if classic.protocol_type != PROTOCOL_TYPE:
            raise refuse(ErrorCode.GROUP_ID_NOT_FOUND,
                         f"{prefix} the group does not use the consumer embedded protocol.")
        if classic.size > ctx.config.consumer_max_size:
            raise refuse(ErrorCode.GROUP_ID_NOT_FOUND,
                         f"{prefix} the group size exceeds the consumer group maximum size.")
        if classic.protocol_name is None:
            # A first rebalance still collecting members has no protocol yet: Kafka's conversion
            # fails unexpectedly there (an Optional read while empty).
            raise refuse(ErrorCode.UNKNOWN_SERVER_ERROR, f"{prefix} it has no protocol selected yet.")
        generation = classic.generation
        group = ConsumerGroup(gid, created_ms=ctx.now(), group_epoch=generation, assignment_epoch=generation)
        for m in classic.members.values():
            try:
                assigned: dict[str, frozenset[int]] = {}
                if m.assignment:
                    pairs, user_data = decode_assignment(m.assignment)
                    if user_data:
                        raise refuse(ErrorCode.GROUP_ID_NOT_FOUND,
                                     f"{prefix} an unsupported custom assignor is in use. Please refer to the "
                                     "documentation or switch to a default assignor before re-attempting the upgrade.")
                    assigned = self._by_id(pairs)
                sub = decode_subscription(m.metadata(classic.protocol_name))
            except MalformedProtocol:
                raise refuse(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"{prefix} the embedded consumer protocol is malformed.") from None
            # Every member starts Stable at the generation, owning its last assignment, which is
            # also its target: a member mid-rebalance is told to rejoin.
            group.put(ConsumerMember(
                m.member_id, m.instance_id, sub.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                tuple(sub.topics), None, None, generation, generation, MemberState.STABLE,
                {t: {p: generation for p in sorted(ps)} for t, ps in assigned.items()}, {},
                ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols))))
            group.target[m.member_id] = {t: ps for t, ps in assigned.items() if ps}
        group.subscribed_topics = self.consumer._subscribed_topics(group, self.consumer._topics())
        group.replaces_classic = True
        group.converted_from = classic
        return group

    def finish_upgrade(self, group: ConsumerGroup) -> None:
        """The heartbeat that upgraded `group` was applied: the classic group's waiters and timers go."""
        classic = getattr(group, "converted_from", None)
        if classic is None:
            return
        group.converted_from = None
        ctx = self.ctx
        for member in classic.members.values():
            self.membership.answer_waiting(classic, member, ErrorCode.REBALANCE_IN_PROGRESS)
        self.membership.forget_timers(classic)
        for member in group.members.values():
            if member.uses_classic:
                self.consumer._schedule_session(group, member.member_id, member.classic.session_timeout_ms)
        ctx.emit(K.GROUP_CONVERTED, group, reason="a member joined with the consumer protocol", to="consumer")

    # ============================================================ downgrade
    def downgrade_allowed(self, group: ConsumerGroup, leaving: set[str]) -> bool:
        remaining = [m for m in group.members.values() if m.member_id not in leaving]
        return (all(m.uses_classic for m in remaining) and bool(remaining)
                and self.ctx.config.downgrade_enabled and len(remaining) <= self.ctx.config.max_group_size)

    def to_classic(self, group: ConsumerGroup, leaving: list[ConsumerMember], kind: K | None, reason: str,
                   joining: ConsumerMember | None = None, rebalance: bool = True) -> Group:
        """Replace `group` by the classic group of its classic members (less `leaving`; `joining`
        takes the place of the static member of its instance id)."""
        ctx, gid = self.ctx, group.group_id
        leaving_ids = {m.member_id for m in leaving}
        for member in group.members.values():
            self.consumer._cancel_timers(group, member.member_id)
        ctx.write(ConsumerGroupRecord(gid, None))
        ctx.consumer_groups.pop(gid, None)
        for member in leaving:
            ctx.emit(kind or K.MEMBER_LEFT, group, member=member, reason=reason)
        classic = Group(gid, created_ms=ctx.now(), generation=group.group_epoch, protocol_type=PROTOCOL_TYPE)
        # A joining static member has already taken its predecessor's place (and target) in `group`.
        joining_id = joining.member_id if joining is not None else None
        kept = [m for m in group.members.values() if m.member_id not in leaving_ids and m.member_id != joining_id]
        for m in kept + ([joining] if joining is not None else []):
            classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                               m.classic.session_timeout_ms, PROTOCOL_TYPE, list(m.classic.protocols)))
        classic.protocol_name = classic.select_protocol()
        for member in classic.members.values():
            member.assignment = encode_assignment(self._by_name(group.target.get(member.member_id, {})),
                                                  member.metadata(classic.protocol_name))
        # Kafka builds the classic group Stable, then rebalances it (the assignments are the
        # consumer group's targets, which the members may not have reached).
        classic.load_state(GroupState.STABLE)
        ctx.groups[gid] = classic
        self.membership._record_group(classic)
        for member in classic.members.values():
            self.membership.schedule_heartbeat(classic, member)
        ctx.emit(K.GROUP_CONVERTED, classic, reason=reason, to="classic")
        if rebalance:
            self.membership.prepare_rebalance(classic, f"Downgrade group {gid} from consumer to classic "
                                                       + ("with stale assignment." if joining is not None
                                                          else "for member leaving."), Cause.MEMBER_LEFT)
        return classic

    # ======================================================= classic members
    def _member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
            return member
        member = group.static_member(instance_id)
        if member is None:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        if member.member_id != member_id:
            raise _Refused(ErrorCode.FENCED_INSTANCE_ID)
        return member

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation: int) -> ConsumerMember:
        member = self._member(group, member_id, instance_id)
        if not member.uses_classic:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != member.member_epoch:
            raise _Refused(ErrorCode.ILLEGAL_GENERATION)
        return member

    def join(self, group: ConsumerGroup, req: JoinRequest, respond) -> None:
        """A classic JoinGroup to a consumer group with members: one reconciliation step, answered
        at once; every classic member is a follower whose generation is its member epoch."""
        ctx, consumer = self.ctx, self.consumer
        answer = lambda error, member_id=req.member_id: ctx.answer(respond, JoinResult(error, member_id))  # noqa: E731
        if ctx.config.consumer_migration_policy == "disabled":
            return answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        unknown = req.member_id == UNKNOWN_MEMBER
        # Kafka gives classic members of a consumer group a Uuid, like consumer-protocol members.
        member_id = new_member_id() if unknown else req.member_id
        if member_id not in group.members and group.size >= ctx.config.consumer_max_size:
            return answer(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not group.supports_classic_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            return answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if req.instance_id is None and unknown and req.require_known_member_id:
            return answer(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        replaced: ConsumerMember | None = None
        if req.instance_id is None:
            member = group.members.get(member_id) or ConsumerMember(member_id)
        else:
            existing = group.static_member(req.instance_id)
            if unknown:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerMember(member_id)
                else:
                    replaced = existing
                    member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            else:
                if existing is None:
                    return answer(ErrorCode.UNKNOWN_MEMBER_ID)
                if existing.member_id != member_id:
                    return answer(ErrorCode.FENCED_INSTANCE_ID)
                member = existing
        existing = group.static_member(req.instance_id)
        downgrade = existing is not None and self._downgrade_on_replacement(group, existing)
        try:
            sub = decode_subscription(req.protocols[0][1])
        except MalformedProtocol:
            return answer(ErrorCode.UNKNOWN_SERVER_ERROR)
        is_new = member.member_id not in group.members and replaced is None
        before = member
        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sub.topics), subscribed_topic_regex=None,
            client_id=req.client_id, client_host=req.client_host,
            classic=ClassicMemberMetadata(req.session_timeout_ms, tuple(req.protocols)))
        names_changed = set(updated.subscribed_topic_names) != set(before.subscribed_topic_names)
        bump = names_changed or before.subscribed_topic_regex is not None
        topics = consumer._put_member(group, updated, replaced, is_new, "classic", subscription_changed=bump)
        owned = self._by_id(sub.owned)
        ctx.timer.cancel(_consumer_join_key(group.group_id, member_id))
        if downgrade:
            stale = group.assignment_epoch < group.group_epoch
            after = updated
            if not stale:
                after = self._reconcile(group, updated, topics, owned, bump)
            self.to_classic(group, [], None, f"static member {member_id} replaced a consumer-protocol member",
                            joining=group.members[member_id], rebalance=stale)
        else:
            consumer._maybe_update_target(group, topics, member_id)
            after = self._reconcile(group, group.members[member_id], topics, owned, bump)
            consumer._schedule_session(group, member_id, req.session_timeout_ms)
            self._schedule_fence(_consumer_sync_key(group.group_id, member_id), group.group_id, member_id,
                                 req.rebalance_timeout_ms, "the member failed to sync within timeout")
            consumer._record(group)
        ctx.answer(respond, JoinResult(ErrorCode.NONE, member_id, after.member_epoch, PROTOCOL_TYPE,
                                       updated.classic.protocol_name, "", False, []))

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, topics, owned, changed: bool) -> ConsumerMember:
        try:
            after = reconcile(member, group.assignment_epoch, group.target.get(member.member_id, {}),
                              self.consumer._member_topic_ids(member, topics, group), owned, changed,
                              lambda t, p: group.partition_owner(t, p))
        except FencedInUnknownState:
            # Read back in a state this version does not know and still owning partitions: it stays
            # as it is until it rejoins owning nothing (an eager rejoin).
            after = member
        if after is not member:
            group.put(after)
            self.consumer._reconciled(group, member, after)
        return after

    def _downgrade_on_replacement(self, group: ConsumerGroup, replaced: ConsumerMember) -> bool:
        others = [m for m in group.members.values() if m.member_id != replaced.member_id]
        return (not replaced.uses_classic and all(m.uses_classic for m in others)
                and self.ctx.config.downgrade_enabled and group.size <= self.ctx.config.max_group_size)

    def sync(self, group: ConsumerGroup, req: SyncRequest, respond) -> None:
        ctx = self.ctx
        try:
            if group.is_empty():
                raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID)
            member = self._classic_member(group, req.member_id, req.instance_id, req.generation_id)
            if (req.protocol_type is not None and req.protocol_type != PROTOCOL_TYPE) or \
                    (req.protocol_name is not None and req.protocol_name != member.classic.protocol_name):
                raise _Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if group.assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
                # A newer target exists: the member rejoins to catch up.
                self._schedule_join_timeout_if_absent(group, member)
                raise _Refused(ErrorCode.REBALANCE_IN_PROGRESS)
        except _Refused as refused:
            return ctx.answer(respond, SyncResult(refused.error))
        ctx.timer.cancel(_consumer_sync_key(group.group_id, member.member_id))
        self.consumer._schedule_session(group, member.member_id, member.classic.session_timeout_ms)
        # What the member owns now (not what it is revoking): its step towards the target.
        assignment = encode_assignment(self._by_name(member.assigned), member.classic.protocols[0][1])
        ctx.answer(respond, SyncResult(ErrorCode.NONE, req.protocol_type, req.protocol_name, assignment))

    def heartbeat(self, group: ConsumerGroup, req: HeartbeatRequest) -> ErrorCode:
        try:
            member = self._classic_member(group, req.member_id, req.instance_id, req.generation_id)
        except _Refused as refused:
            return refused.error
        self.consumer._schedule_session(group, member.member_id, member.classic.session_timeout_ms)
        # Rejoin when: a newer target exists; partitions must be revoked; or every partition the
        # member still waits for has been released.
        if (member.member_epoch < group.assignment_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased(member))):
            self._schedule_join_timeout_if_absent(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group: ConsumerGroup, leaving: list[LeaveMember]) -> LeaveResult:
        results, valid = [], {}
        for m in leaving:
            error = ErrorCode.NONE
            if m.instance_id is None:
                member = group.members.get(m.member_id)
                if member is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                member = group.static_member(m.instance_id)
                if member is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                elif m.member_id != UNKNOWN_MEMBER and member.member_id != m.member_id:
                    error = ErrorCode.FENCED_INSTANCE_ID
            if error == ErrorCode.NONE:
                valid[member.member_id] = member
            results.append((m.member_id, m.instance_id, error))
        if valid:
            self.consumer.fence_members(group, list(valid.values()), K.MEMBER_LEFT,
                                        "the member left the group through LeaveGroup")
        return LeaveResult(ErrorCode.NONE, results)
