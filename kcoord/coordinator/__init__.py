"""The classic group coordinator: pure logic (`coordinator`), time (`clock`),
state table (`state`), events (`events`), and its asyncio face (`service`)."""
from kcoord.coordinator.clock import AsyncioTimer, ManualTimer, Timer
from kcoord.coordinator.config import CoordinatorConfig, offsets_partition_for
from kcoord.coordinator.coordinator import (
    FetchedOffset, GroupCoordinator, JoinResult, LeaveMember, LeaveResult, OffsetCommitPartition,
    OffsetCommitResult, SyncResult,
)
from kcoord.coordinator.events import EventBus, GroupEvent, KafkaWordedLog
from kcoord.coordinator.service import CoordinatorService
from kcoord.coordinator.state import GroupState

__all__ = [
    "AsyncioTimer", "ManualTimer", "Timer", "CoordinatorConfig", "offsets_partition_for", "FetchedOffset",
    "GroupCoordinator", "JoinResult", "LeaveMember", "LeaveResult", "OffsetCommitPartition",
    "OffsetCommitResult", "SyncResult", "EventBus", "GroupEvent", "KafkaWordedLog", "CoordinatorService",
    "GroupState", "build_coordinator",
]


def build_coordinator(server_config, topics, timer: Timer | None = None) -> CoordinatorService:
    config = CoordinatorConfig(initial_rebalance_delay_ms=server_config.initial_rebalance_delay_ms,
                               offsets_topic_partitions=server_config.offsets_topic_partitions,
                               max_group_size=getattr(server_config, "group_max_size", 2**31 - 1))
    bus = EventBus()
    bus.subscribe(KafkaWordedLog())
    core = GroupCoordinator(timer or AsyncioTimer(), config, topics, bus)
    return CoordinatorService(core)
