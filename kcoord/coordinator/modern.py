"""What the consumer (KIP-848), streams (KIP-1071) and share (KIP-932) group protocols share, as
Kafka's modern/ groups share it: each member's session and rebalance timers, fencing when one
fires, the fault hook that fences at once, deleting an empty group, writing the group whole, the
heartbeat's outline with the undo of a refused one (streams and share), and the topics a member
may subscribe to.

A subclass names its group type (`kind`: the timers' keys, the per-group config prefix), its
session timeout's broker default, its record type and its snapshot, and says how a member is
fenced (`_fence`)."""
from __future__ import annotations

import hashlib
import struct
from typing import Callable, Iterable, Mapping

from kcoord.coordinator.context import CoordinatorContext
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.results import Refused
from wire.errors import ErrorCode


class ModernGroup:
    """What a streams and a share group hold alike (mixed into their dataclasses, which have
    `members`, `target`, `group_epoch` and `removed_since_record`): members by id, each with a
    target, and the members removed since the group was last recorded (their tombstones)."""

    @property
    def generation(self) -> int:   # what events carry as the generation: the group epoch
        return self.group_epoch

    def put(self, member) -> None:
        self.members[member.member_id] = member

    def remove(self, member_id: str) -> None:
        self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        self.removed_since_record.append(member_id)

    def is_empty(self) -> bool:
        return not self.members

    @property
    def size(self) -> int:
        return len(self.members)

    def is_in(self, *states) -> bool:
        return self.state in states


class ModernProtocol:
    kind = ""                 # "consumer", "streams" or "share"
    session_expired = "the member session expired"
    leave_epochs: tuple[int, ...] = (-1, -2)   # the member epochs that leave the group
    # Details every member-gone and group-gone event of this type carries (what a listener tells
    # a share group's events by).
    event_details: dict = {}
    result_type: type = type(None)             # the heartbeat's answer: (error, message, ...)

    def __init__(self, ctx: CoordinatorContext):
        self.ctx = ctx

    @property
    def groups(self) -> dict:
        raise NotImplementedError

    # ---------------------------------------------------------- what a type says
    def _default_session_timeout_ms(self) -> int:
        raise NotImplementedError

    def _rebalance_expired(self, epoch: int, timeout_ms: int) -> str:
        raise NotImplementedError

    def _fence(self, group, member, kind: K, reason: str) -> None:
        raise NotImplementedError

    def _snapshot(self, group) -> dict:
        raise NotImplementedError

    def _group_record(self, group_id: str, value: dict | None, group=None):
        raise NotImplementedError

    def _group_for(self, req):
        """The request's group: the one held, or a new one it may create (Refused otherwise)."""
        raise NotImplementedError

    def _heartbeat(self, req, group):
        raise NotImplementedError

    def _restore_point(self, group) -> Callable[[], object]:
        """What gives back `group` as it is now (a failed heartbeat's undo)."""
        raise NotImplementedError

    # ------------------------------------------------------------- heartbeat
    def heartbeat(self, req):
        """A heartbeat: the request's own checks, the coordinator's availability, then a leave,
        or a join or heartbeat (undone as a whole if it is refused on the way)."""
        try:
            self._validate(req)
            error = self.ctx.availability(req.group_id)
            if error:
                return self.result_type(error)
            if req.member_epoch in self.leave_epochs:
                return self._leave(req)
            return self._heartbeat_or_undo(req)
        except Refused as refused:
            return self.result_type(refused.error, refused.message)

    def _validate(self, req) -> None:
        raise NotImplementedError

    def _leave(self, req):
        raise NotImplementedError

    def _heartbeat_or_undo(self, req):
        group = self._group_for(req)
        existed = self.groups.get(group.group_id) is group
        restore = self._restore_point(group) if existed else None
        mark = self.ctx.event_mark()
        try:
            return self._heartbeat(req, group)
        except Refused:
            # Kafka applies none of a failed heartbeat's records: the group is put back.
            self.ctx.drop_events_since(mark)
            if restore is None:
                self.groups.pop(group.group_id, None)
            else:
                self.groups[group.group_id] = restore()
            raise

    # ---------------------------------------------------------------- topics
    def _topics(self) -> dict[str, tuple[str, int]]:
        """Every topic a member may subscribe to: name -> (id text, partition count)."""
        store = getattr(self.ctx.topics, "topics", None)
        if not isinstance(store, dict):
            return {}
        return {name: (str(t.topic_id), len(t.partitions)) for name, t in store.items()
                if not getattr(t, "internal", False)}

    # ------------------------------------------------------------------ timers
    def session_key(self, group_id: str, member_id: str) -> str:
        return f"{self.kind}-session-{group_id}-{member_id}"

    def rebalance_key(self, group_id: str, member_id: str) -> str:
        return f"{self.kind}-rebalance-{group_id}-{member_id}"

    def _schedule_session(self, group, member_id: str, timeout_ms: int | None = None) -> None:
        """`timeout_ms`: the member's own (a classic member of a consumer group); else the
        group's config, else the broker's."""
        group_id = group.group_id
        key = self.session_key(group_id, member_id)
        timeout = timeout_ms or self.ctx.group_config(group_id).get(f"{self.kind}.session.timeout.ms",
                                                                      self._default_session_timeout_ms())
        if not self.ctx.timer.postpone(key, timeout):  # the same callback: only the deadline moves
            self.ctx.schedule(key, timeout, self._fence_by_timer, group_id, member_id, None, self.session_expired)

    def _schedule_rebalance_timeout(self, group, member) -> None:
        group_id, member_id, epoch = group.group_id, member.member_id, member.member_epoch
        timeout = max(member.rebalance_timeout_ms, 0)
        self.ctx.schedule(self.rebalance_key(group_id, member_id), timeout,
                          lambda: self._fence_by_timer(group_id, member_id, epoch,
                                                       self._rebalance_expired(epoch, timeout)))

    def _cancel_timers(self, group, member_id: str) -> None:
        self.ctx.timer.cancel(self.session_key(group.group_id, member_id))
        self.ctx.timer.cancel(self.rebalance_key(group.group_id, member_id))

    def _fence_by_timer(self, group_id: str, member_id: str, epoch: int | None, reason: str) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None or (epoch is not None and member.member_epoch != epoch):
            return  # gone, or it moved on from the epoch it had to leave
        self._fence(group, member, K.MEMBER_EXPIRED, reason)

    def expire_member_now(self, group_id: str, member_id: str) -> bool:
        """A fault hook: the member is fenced as if its session had expired."""
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            return False
        self._fence(group, member, K.MEMBER_EXPIRED, "expired on request")
        return True

    # ------------------------------------------------------------ admin, records
    def delete(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_empty():
            return ErrorCode.NON_EMPTY_GROUP
        self.ctx.write_offset_tombstones(group_id)
        group.dead = True
        self.groups.pop(group_id, None)
        self.ctx.write(self._group_record(group_id, None))
        self.ctx.emit(K.DEAD, group, **self.event_details)
        return ErrorCode.NONE

    def _record(self, group) -> None:
        value = self._snapshot(group)
        value["removed_members"] = list(dict.fromkeys(group.removed_since_record))
        group.removed_since_record.clear()
        self.ctx.write(self._group_record(group.group_id, value, group))


def topics_digest(names: Iterable[str], topics: Mapping[str, tuple[str, int]]) -> int:
    """A group's metadata hash: a 64-bit digest of the topics it needs that exist (id, name,
    partition count), which moves when one is created, deleted or grows. Kafka hashes the same
    with XXH3 (and the partitions' racks); only whether it changed matters, so kcoord's own
    digest serves (docs/deviations.md)."""
    present = [name for name in sorted(set(names)) if name in topics]
    if not present:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name in present:
        tid, count = topics[name]
        h.update(f"{tid}\0{name}\0{count}\0".encode())
    return struct.unpack(">q", h.digest())[0]
