"""The classic group coordinator: Kafka's rules as synchronous, deterministic logic.

One object in front of three parts that share a `CoordinatorContext`: membership
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the rebalance), offsets (commit, fetch,
delete, retention) and admin (describe, list, delete groups). Every request is one
operation: it either answers at once or parks its `respond` callback for a timer or
another request to complete, and its records are written before any answer is released
(context.py). Nothing here knows bytes, sockets or the event loop: time comes from an
injected `Timer`, so every transition can be driven by a test.
"""
from __future__ import annotations

from typing import Callable, Iterable

from kcoord.coordinator.assignors.spec import ServerAssignor
from kcoord.coordinator.assignors import assignors as builtin_assignors
from kcoord.coordinator.clock import Timer
from kcoord.coordinator.consumer.group import ConsumerGroup
from kcoord.coordinator.consumer.protocol import ConsumerProtocol
from kcoord.coordinator.share.group import ShareGroup
from kcoord.coordinator.share.protocol import (ShareHeartbeatRequest, ShareHeartbeatResult, ShareOffsetsCheck,
                                              ShareProtocol)
from kcoord.coordinator.streams.group import StreamsGroup
from kcoord.coordinator.streams.protocol import StreamsHeartbeatRequest, StreamsHeartbeatResult, StreamsProtocol
from kcoord.coordinator.config import CoordinatorConfig
from kcoord.coordinator.context import CoordinatorContext, TopicCatalog
from kcoord.coordinator.events import EventBus, EventKind
from kcoord.coordinator.classic.group import Group
from kcoord.coordinator.group_admin import GroupAdmin
from kcoord.coordinator.classic.membership import ClassicMembership
from kcoord.coordinator.consumer.migration import Migration
from kcoord.coordinator.offsets.manager import OffsetManager
from kcoord.coordinator.offsets.committed import CommittedOffset, OffsetStore
from kcoord.coordinator.records import RecordSink
from kcoord.coordinator.requests import (
    ConsumerHeartbeatRequest, HeartbeatRequest, JoinRequest, LeaveMember, OffsetCommitRequest, SyncRequest, TxnOffsetCommitRequest,
)
from kcoord.coordinator.results import (
    ConsumerGroupDescription, ConsumerHeartbeatResult, FetchedOffset, GroupDescription, JoinResult, LeaveResult, OffsetCommitResult, OffsetDeleteResult, SyncResult,
)
from kcoord.coordinator.offsets.transactional import LoadedPending, PendingOffsets
from wire.errors import ErrorCode


class GroupCoordinator:
    def __init__(self, timer: Timer, config: CoordinatorConfig | None = None,
                 topics: TopicCatalog | None = None, bus: EventBus | None = None,
                 assignors: Callable[[], dict[str, ServerAssignor]] | None = None,
                 unavailable: dict | None = None, retention: bool = True):
        self.ctx = CoordinatorContext(timer, config or CoordinatorConfig(), topics, bus or EventBus())
        if unavailable is not None:
            # Shared with the other partitions' coordinators: a fault rule's switch, or a failed
            # write, holds for every group (runtime.py).
            self.ctx.unavailable = unavailable
        self.membership = ClassicMembership(self.ctx)
        # The consumer group protocol (KIP-848); `assignors`: the server assignors by name.
        self.consumer = ConsumerProtocol(self.ctx, assignors or builtin_assignors)
        # Online migration between the two kinds (KIP-848's upgrade and downgrade).
        self.migration = Migration(self.ctx, self.consumer, self.membership)
        self.membership.migration = self.consumer.migration = self.migration
        # Streams groups (KIP-1071).
        self.streams = StreamsProtocol(self.ctx)
        # Share groups (KIP-932).
        self.share = ShareProtocol(self.ctx)
        self.offset_manager = OffsetManager(self.ctx, self.membership, self.consumer, self.streams)
        self.admin = GroupAdmin(self.ctx, self.consumer, self.streams, self.share)
        if retention:  # a coordinator that only refuses requests (runtime.py) has no offsets to expire
            self.offset_manager.schedule_retention()

    # ---------------------------------------------------------- shared state
    timer = property(lambda self: self.ctx.timer)
    config = property(lambda self: self.ctx.config)
    bus = property(lambda self: self.ctx.bus)
    groups = property(lambda self: self.ctx.groups)
    offsets = property(lambda self: self.ctx.offsets)
    unavailable = property(lambda self: self.ctx.unavailable)

    @property
    def on_change(self) -> Callable[[str], None] | None:
        return self.ctx.on_change

    @on_change.setter
    def on_change(self, fn: Callable[[str], None] | None) -> None:
        self.ctx.on_change = fn

    @property
    def record_sink(self) -> RecordSink | None:
        return self.ctx.record_sink

    @record_sink.setter
    def record_sink(self, sink: RecordSink | None) -> None:
        self.ctx.record_sink = sink

    def now(self) -> int:
        return self.ctx.now()

    def group(self, group_id: str) -> Group | None:
        return self.ctx.groups.get(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        return self.ctx.consumer_groups.get(group_id)

    def availability(self, group_id: str) -> ErrorCode:
        return self.ctx.availability(group_id)

    def set_unavailable(self, error: ErrorCode, group_id: str | None = None) -> None:
        self.ctx.unavailable[group_id] = error

    def set_available(self, group_id: str | None = None) -> None:
        self.ctx.unavailable.pop(group_id, None)

    # ------------------------------------------------------------- requests
    def join_group(self, req: JoinRequest, respond: Callable[[JoinResult], None]) -> None:
        if req.group_id in self.ctx.share_groups and not self.ctx.availability(req.group_id):
            # As Kafka: a classic member cannot join a share group, empty or not.
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        self.ctx.operation(lambda: self.membership.join_group(req, respond))

    def sync_group(self, req: SyncRequest, respond: Callable[[SyncResult], None]) -> None:
        self.ctx.operation(lambda: self.membership.sync_group(req, respond))

    def heartbeat(self, req: HeartbeatRequest) -> ErrorCode:
        return self.ctx.operation(lambda: self.membership.heartbeat(req))

    def leave_group(self, group_id: str, leaving: list[LeaveMember]) -> LeaveResult:
        return self.ctx.operation(lambda: self.membership.leave_group(group_id, leaving))

    def _share_group_refuses_offsets(self, group_id: str) -> bool:
        """A share group keeps no committed offsets: Kafka answers OffsetCommit, OffsetFetch and
        OffsetDelete for it GROUP_ID_NOT_FOUND ("Group ... is not a consumer group.")."""
        return group_id in self.ctx.share_groups and not self.ctx.availability(group_id)

    def commit_offsets(self, req: OffsetCommitRequest) -> OffsetCommitResult:
        if self._share_group_refuses_offsets(req.group_id):
            return OffsetCommitResult(ErrorCode.GROUP_ID_NOT_FOUND)
        return self.ctx.operation(lambda: self.offset_manager.commit_offsets(req))

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None,
                      member_id: str | None = None, member_epoch: int = -1,
                      require_stable: bool = False) -> tuple[ErrorCode, list[FetchedOffset]]:
        if self._share_group_refuses_offsets(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        return self.offset_manager.fetch_offsets(group_id, partitions, member_id, member_epoch, require_stable)

    def txn_offset_commit(self, req: TxnOffsetCommitRequest) -> OffsetCommitResult:
        if self._share_group_refuses_offsets(req.group_id):
            return OffsetCommitResult(ErrorCode.GROUP_ID_NOT_FOUND)
        return self.ctx.operation(lambda: self.offset_manager.commit_transactional_offsets(req))

    def complete_transaction(self, producer_id: int, commit: bool) -> int:
        """The marker ending `producer_id`'s transaction is in this partition's log: its pending
        offsets are applied or dropped; how many were applied."""
        return self.ctx.operation(lambda: self.offset_manager.complete_transaction(producer_id, commit))

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]],
                       subscribed_topics: Callable[[Group], set[str]] | None = None) -> OffsetDeleteResult:
        if self._share_group_refuses_offsets(group_id):
            return OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND)
        return self.ctx.operation(lambda: self.offset_manager.delete_offsets(group_id, partitions, subscribed_topics))

    def describe_group(self, group_id: str) -> GroupDescription:
        return self.admin.describe_group(group_id)

    def list_groups(self, states: set[str] | None = None, types: set[str] | None = None) -> list:
        return self.admin.list_groups(states, types)

    def delete_group(self, group_id: str) -> ErrorCode:
        return self.ctx.operation(lambda: self.admin.delete_group(group_id))

    # ------------------------------------------- consumer group protocol (KIP-848)
    def consumer_group_heartbeat(self, req: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult:
        if req.group_id in self.ctx.share_groups and req.group_id and not self.ctx.availability(req.group_id):
            return ConsumerHeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group.")
        return self.ctx.operation(lambda: self.consumer.heartbeat(req))

    def consumer_group_describe(self, group_id: str) -> ConsumerGroupDescription:
        return self.consumer.describe(group_id)

    def load_consumer_group(self, value: dict) -> ConsumerGroup:
        return self.ctx.operation(lambda: self.consumer.load(value))

    # ------------------------------------------------------ streams groups (KIP-1071)
    def streams_group_heartbeat(self, req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        if req.group_id in self.ctx.share_groups and not self.ctx.availability(req.group_id):
            return StreamsHeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a streams group.")
        return self.ctx.operation(lambda: self.streams.heartbeat(req))

    def streams_group_describe(self, group_id: str) -> dict:
        return self.streams.describe(group_id)

    def streams_group(self, group_id: str) -> StreamsGroup | None:
        return self.ctx.streams_groups.get(group_id)

    def load_streams_group(self, value: dict) -> StreamsGroup:
        return self.ctx.operation(lambda: self.streams.load(value))

    # --------------------------------------------------------- share groups (KIP-932)
    def share_group_heartbeat(self, req: ShareHeartbeatRequest) -> ShareHeartbeatResult:
        return self.ctx.operation(lambda: self.share.heartbeat(req))

    def share_group_describe(self, group_id: str) -> dict:
        return self.share.describe(group_id)

    def share_group(self, group_id: str) -> ShareGroup | None:
        return self.ctx.share_groups.get(group_id)

    def check_share_offsets_change(self, group_id: str, create: bool = False) -> ShareOffsetsCheck:
        return self.ctx.operation(lambda: self.share.check_offsets_change(group_id, create))

    def load_share_group(self, value: dict) -> ShareGroup:
        return self.ctx.operation(lambda: self.share.load(value))

    # -------------------------------------------------------- durable state
    def load_group(self, record: dict) -> Group:
        return self.ctx.operation(lambda: self.membership.load_group(record))

    def load_offset(self, group_id: str, topic: str, partition: int, value: CommittedOffset) -> None:
        self.offset_manager.load_offset(group_id, topic, partition, value)

    # ------------------------------------------------- loading and unloading
    def load(self, classic: Iterable[dict], consumer: Iterable[dict],
             offsets: Iterable[tuple[str, str, int, CommittedOffset]], pending: LoadedPending | None = None,
             streams: Iterable[dict] = (), share: Iterable[dict] = (), **details) -> None:
        """Rebuild the groups and offsets a __consumer_offsets partition holds, as Kafka's loader
        replays it: each member gets a fresh session (onLoaded), so members that keep heartbeating
        through a coordinator move carry on without a rebalance. `pending`: the offsets of
        transactions the log holds no marker for yet (the transaction coordinator ends them)."""
        for record in classic:
            self.load_group(record)
        for value in consumer:
            self.load_consumer_group(value)
        for value in streams:
            self.load_streams_group(value)
        for value in share:
            self.load_share_group(value)
        for group_id, topic, partition, value in offsets:
            self.load_offset(group_id, topic, partition, value)
        if pending is not None:
            self.ctx.pending.restore(pending)
            for _, group_id, _, _, _, value in pending.offsets:
                self.offset_manager.ensure_group(group_id, value.commit_ms)
        for group in self.ctx.all_groups():
            self.ctx.emit(EventKind.LOADED, group, **details)

    def unload(self, **details) -> None:
        """This coordinator's partition is led elsewhere now (Kafka's onUnloaded): a parked
        JoinGroup or SyncGroup is answered NOT_COORDINATOR (the member finds the new coordinator
        and asks again), every timer is cancelled, and the groups are forgotten here."""
        ctx = self.ctx
        for group in ctx.groups.values():
            for member in group.members.values():
                respond = group.take_join(member)
                if respond is not None:
                    respond(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                if member.sync_callback is not None:
                    respond, member.sync_callback = member.sync_callback, None
                    respond(SyncResult(ErrorCode.NOT_COORDINATOR))
        for group in ctx.all_groups():
            ctx.emit(EventKind.UNLOADED, group, **details)
        cancel_all = getattr(ctx.timer, "cancel_all", None)
        if cancel_all is not None:
            cancel_all()
        ctx.groups.clear()
        ctx.consumer_groups.clear()
        ctx.streams_groups.clear()
        ctx.share_groups.clear()
        ctx.offsets = OffsetStore()
        ctx.pending = PendingOffsets()
        # Whoever still holds this coordinator (a request that started before the move) is told
        # to look for the new one, and nothing it does is written.
        ctx.unavailable = {None: ErrorCode.NOT_COORDINATOR}
        ctx.record_sink = None

    # ---------------------------------------------------------- fault hooks
    def expire_member_now(self, group_id: str, member_id: str) -> bool:
        if group_id in self.ctx.consumer_groups:
            return self.ctx.operation(lambda: self.consumer.expire_member_now(group_id, member_id))
        if group_id in self.ctx.streams_groups:
            return self.ctx.operation(lambda: self.streams.expire_member_now(group_id, member_id))
        if group_id in self.ctx.share_groups:
            return self.ctx.operation(lambda: self.share.expire_member_now(group_id, member_id))
        return self.ctx.operation(lambda: self.membership.expire_member_now(group_id, member_id))

    def force_rebalance(self, group_id: str, reason: str = "forced rebalance") -> bool:
        return self.ctx.operation(lambda: self.membership.force_rebalance(group_id, reason))
