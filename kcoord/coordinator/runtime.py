"""The group coordinators of a kcoord: one per `__consumer_offsets` partition, held by the broker
that leads that partition, as Kafka's CoordinatorRuntime holds them.

A group belongs to partition `abs(groupId.hashCode()) % partitions` (config.offsets_partition_for)
and is coordinated by that partition's leader. Each partition's coordinator is a
`GroupCoordinator` of its own, with its own timers (their keys scoped to the partition), and
goes through Kafka's states:

- LOADING: its broker became the leader; group requests get COORDINATOR_LOAD_IN_PROGRESS for
  `load_ms`, then the partition's records are replayed (the only durable form of groups and
  offsets: `PartitionLog.load`) and every member's session timer starts afresh (onLoaded);
- ACTIVE: it serves its groups;
- gone: its broker no longer leads the partition. Unloading answers parked JoinGroup and
  SyncGroup requests NOT_COORDINATOR and cancels its timers (onUnloaded); a request for one of
  its groups on a broker that does not lead the partition gets NOT_COORDINATOR.

The runtime itself is synchronous over the injected timer, like the coordinators; the app
tells it of leadership changes (kcoord.cluster) and brokers lost, and the event loop face
(service.py) routes each request through `coordinator_for`.
"""
from __future__ import annotations

import logging
from typing import Callable, Protocol

from kcoord.coordinator.clock import ScopedTimer, Timer
from kcoord.coordinator.config import CoordinatorConfig, offsets_partition_for
from kcoord.coordinator.consumer.group import ConsumerGroup
from kcoord.coordinator.share.group import ShareGroup
from kcoord.coordinator.streams.group import StreamsGroup
from kcoord.coordinator.coordinator import GroupCoordinator
from kcoord.coordinator.events import EventBus
from kcoord.coordinator.classic.group import Group
from kcoord.coordinator.records import RecordSink
from kcoord.coordinator.results import ConsumerGroupDescription, GroupDescription
from kcoord.coordinator.shards import NO_NODE, Shard, ShardedRuntime, ShardState
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.coordinator")



class PartitionLog(Protocol):
    """What the runtime needs of `__consumer_offsets` (kcoord.log.consumer_offsets.OffsetsTopic)."""

    def ensure(self):
        """The topic, created with Kafka's settings if it does not exist yet."""

    def read(self, index: int):
        """What partition `index` holds (kcoord.log.offsets_loader.LoadedPartition): its classic,
        consumer and streams groups, committed offsets and offsets of transactions not yet ended."""

    def write_marker(self, index: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                     commit: bool, timestamp_ms: int) -> int:
        """Append the marker ending the producer's transaction to partition `index` (durable
        before it returns); its offset."""


class CoordinatorRuntime(ShardedRuntime):
    topic_name = "__consumer_offsets"
    holds = "groups"
    load_key_prefix = "coordinator"

    def __init__(self, timer: Timer, config: CoordinatorConfig, topics, bus: EventBus,
                 assignors: Callable | None = None, load_ms: int = 0):
        super().__init__(timer, topics, load_ms)
        self.config = config
        self.bus = bus
        self.assignors = assignors
        self.log: PartitionLog | None = None          # set by the app, with the record sink
        self.record_sink: RecordSink | None = None
        # kcoord.group_configs.GroupConfigs: each group's own configs, set by the app.
        self.group_configs = None
        # The fault rules' coordinator switch and a failed write's: group id (None: every group)
        # -> the error every partition's coordinator answers; one dict, shared by them all.
        self.unavailable: dict[str | None, ErrorCode] = {}
        # Called with a group id after every change to the group (waiters re-check).
        self.on_change: Callable[[str], None] | None = None
        self._count: int | None = None
        # A coordinator that has no group and answers every request with one error: what a
        # broker that does not coordinate a group (or is still loading it) answers with.
        self._refusing = {error: self._coordinator(None, {None: error})
                          for error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)}
        # One that holds no group: how the whole runtime describes a group nobody holds (Dead).
        self._nobody = self._coordinator(None, {})

    # ------------------------------------------------------------ placement
    def partition_count(self) -> int:
        """The partitions groups are hashed over: the topic's once it exists (kept from then on,
        as Kafka's coordinator keeps the count it started with), the configured count before."""
        if self._count is None:
            topic = self.topics.get("__consumer_offsets") if self.topics is not None else None
            if topic is None:
                return self.config.offsets_topic_partitions
            self._count = len(topic.partitions)
        return self._count

    def partition_for(self, group_id: str) -> int:
        return offsets_partition_for(group_id, self.partition_count())

    def _leader(self, index: int) -> int:
        partition = self.topics.partition("__consumer_offsets", index) if self.topics is not None else None
        return NO_NODE if partition is None else partition.leader

    def find(self, group_id: str) -> tuple[ErrorCode, int]:
        """FindCoordinator's answer for a group: the leader of its partition, or why there is none
        (the topic is created first if it does not exist)."""
        if self.availability(group_id) == ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
        if self.log is not None:
            self.log.ensure()
        leader = self._leader(self.partition_for(group_id))
        if leader == NO_NODE:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_NODE
        return ErrorCode.NONE, leader

    # --------------------------------------------------------------- routing
    def coordinator_for(self, group_id: str, node: int) -> GroupCoordinator:
        """The coordinator `node` answers a request about `group_id` with: the group's partition's,
        if `node` leads that partition and has loaded it, or one that refuses every request with
        NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS."""
        index = self.partition_for(group_id)
        shard = self.shards.get(index)
        if shard is None:
            shard = self._start_if_led(index, node)
        if shard is None or shard.node != node:
            return self._refusing[ErrorCode.NOT_COORDINATOR]
        if shard.state is ShardState.LOADING:
            return self._refusing[ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
        return shard.coordinator

    def _start_if_led(self, index: int, node: int) -> Shard | None:
        """A partition nobody coordinates yet but `node` leads (the topic was just created, by
        this request if need be): its coordinator starts at once, as there is nothing to wait for."""
        if self.log is not None:
            self.log.ensure()
        partition = self.topics.partition("__consumer_offsets", index) if self.topics is not None else None
        if partition is None or partition.leader != node:
            return None
        return self._load_now(index, node, partition.leader_epoch)

    # ------------------------------------------------------ loading, unloading
    def _build(self, shard: Shard) -> GroupCoordinator:
        coordinator = self._coordinator(shard.partition)
        if self.log is not None:
            loaded = self.log.read(shard.partition)
            coordinator.load(loaded.classic, loaded.consumer, loaded.offsets, loaded.pending, streams=loaded.streams,
                             share=loaded.share, partition=shard.partition, node=shard.node, leader_epoch=shard.epoch)
        else:
            coordinator.load((), (), (), None, partition=shard.partition, node=shard.node, leader_epoch=shard.epoch)
        return coordinator

    def _loaded(self, shard: Shard) -> None:
        if self.on_change is not None:
            ctx = shard.coordinator.ctx
            for group in ctx.all_groups():
                self.on_change(group.group_id)

    def _unloaded(self, shard: Shard, why: str) -> None:
        ctx = shard.coordinator.ctx
        groups = [g.group_id for g in ctx.all_groups()]
        shard.coordinator.unload(partition=shard.partition, node=shard.node, leader_epoch=shard.epoch, reason=why)
        if self.on_change is not None:
            for group_id in groups:
                self.on_change(group_id)

    def _coordinator(self, index: int | None, unavailable: dict | None = None) -> GroupCoordinator:
        timer = self.timer if index is None else ScopedTimer(self.timer, f"p{index}/")
        coordinator = GroupCoordinator(timer, self.config, self.topics, self.bus, self.assignors,
                                       unavailable=self.unavailable if unavailable is None else unavailable,
                                       retention=index is not None)
        coordinator.record_sink = self.record_sink
        coordinator.ctx.group_configs = self.group_configs
        coordinator.on_change = self._changed
        return coordinator

    def _changed(self, group_id: str) -> None:
        if self.on_change is not None:
            self.on_change(group_id)

    # ------------------------------------------------------------ transactions
    def complete_transaction(self, index: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                             commit: bool, timestamp_ms: int) -> int:
        """The transaction coordinator ends `producer_id`'s transaction in __consumer_offsets-`index`:
        the marker is written (durable first; a marker older than the producer's epoch raises the
        log's AppendError), then the partition's coordinator, wherever it is loaded, applies
        (commit) or drops (abort) the producer's pending offsets. A partition nobody has loaded
        (or one still loading) replays the marker when it loads. Returns the marker's offset."""
        offset = -1
        if self.log is not None:
            offset = self.log.write_marker(index, producer_id, producer_epoch, coordinator_epoch, commit, timestamp_ms)
        shard = self.shards.get(index)
        if shard is not None and shard.state is ShardState.ACTIVE:
            shard.coordinator.complete_transaction(producer_id, commit)
        return offset

    # ----------------------------------------------------- every partition's view
    def active(self) -> list[GroupCoordinator]:
        return [s.coordinator for s in self.shards.values() if s.state is ShardState.ACTIVE]

    def _holding(self, group_id: str) -> GroupCoordinator | None:
        """The coordinator holding `group_id` now, on whichever broker."""
        shard = self.shards.get(self.partition_for(group_id))
        return None if shard is None or shard.state is not ShardState.ACTIVE else shard.coordinator

    def list_groups(self, node: int, states: set[str] | None = None,
                    types: set[str] | None = None) -> tuple[ErrorCode, list]:
        """ListGroups on broker `node`: the groups of every partition it leads, or
        COORDINATOR_LOAD_IN_PROGRESS while one of them loads (as Kafka's answer fails as a whole)."""
        mine = [s for s in self.shards.values() if s.node == node]
        if any(s.state is ShardState.LOADING for s in mine):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
        return ErrorCode.NONE, [g for s in mine for g in s.coordinator.list_groups(states, types)]

    def all_groups(self, states: set[str] | None = None, types: set[str] | None = None) -> list:
        """Every group any broker coordinates (the admin endpoint, tests)."""
        return [g for c in self.active() for g in c.list_groups(states, types)]

    @property
    def groups(self) -> dict[str, Group]:
        return {gid: g for c in self.active() for gid, g in c.ctx.groups.items()}

    @property
    def consumer_groups(self) -> dict[str, ConsumerGroup]:
        return {gid: g for c in self.active() for gid, g in c.ctx.consumer_groups.items()}

    def group(self, group_id: str) -> Group | None:
        holder = self._holding(group_id)
        return None if holder is None else holder.group(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        holder = self._holding(group_id)
        return None if holder is None else holder.consumer_group(group_id)

    def streams_group(self, group_id: str) -> StreamsGroup | None:
        holder = self._holding(group_id)
        return None if holder is None else holder.streams_group(group_id)

    def share_group(self, group_id: str) -> ShareGroup | None:
        holder = self._holding(group_id)
        return None if holder is None else holder.share_group(group_id)

    def committed(self, group_id: str) -> dict:
        """(topic, partition) -> CommittedOffset of `group_id`, wherever it is coordinated."""
        holder = self._holding(group_id)
        return {} if holder is None else holder.offsets.all(group_id)

    def describe_group(self, group_id: str) -> GroupDescription:
        """The group as whichever broker coordinates it describes it (Dead where none holds it)."""
        return (self._holding(group_id) or self._nobody).describe_group(group_id)

    def consumer_group_describe(self, group_id: str) -> ConsumerGroupDescription:
        return (self._holding(group_id) or self._nobody).consumer_group_describe(group_id)

    def streams_group_describe(self, group_id: str) -> dict:
        return (self._holding(group_id) or self._nobody).streams_group_describe(group_id)

    def share_group_describe(self, group_id: str) -> dict:
        return (self._holding(group_id) or self._nobody).share_group_describe(group_id)

    def coordinator_node(self, group_id: str) -> int:
        """The broker coordinating `group_id` now (NO_NODE: none, or still loading)."""
        shard = self.shards.get(self.partition_for(group_id))
        return NO_NODE if shard is None else shard.node

    def now(self) -> int:
        return self.timer.now_ms()

    # ----------------------------------------------------------- the switches
    def availability(self, group_id: str) -> ErrorCode:
        return self.unavailable.get(group_id) or self.unavailable.get(None) or ErrorCode.NONE

    def set_unavailable(self, error: ErrorCode, group_id: str | None = None) -> None:
        self.unavailable[group_id] = error

    def set_available(self, group_id: str | None = None) -> None:
        self.unavailable.pop(group_id, None)

    def expire_member_now(self, group_id: str, member_id: str) -> bool:
        holder = self._holding(group_id)
        return holder is not None and holder.expire_member_now(group_id, member_id)

    def force_rebalance(self, group_id: str, reason: str = "forced rebalance") -> bool:
        holder = self._holding(group_id)
        return holder is not None and holder.force_rebalance(group_id, reason)

    def close(self) -> None:
        """Stop every timer (the process is going away: nothing is unloaded or answered)."""
        self.shards.clear()
        cancel_all = getattr(self.timer, "cancel_all", None)
        if cancel_all is not None:
            cancel_all()
