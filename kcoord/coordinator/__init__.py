"""The group coordinator: pure logic (`coordinator` in front of `membership`, `consumer_protocol`,
`offset_manager` and `group_admin`, sharing a `context`, with transactions' pending offsets in
`txn_offsets`), one per __consumer_offsets partition
on the broker leading it (`runtime`), time (`clock`), the state table (`state`), requests and
results, the records it writes (`records`), events (`events`), and its asyncio face (`service`)."""
from kcoord.coordinator.clock import AsyncioTimer, ManualTimer, Timer
from kcoord.coordinator.config import CoordinatorConfig, offsets_partition_for
from kcoord.coordinator.coordinator import GroupCoordinator
from kcoord.coordinator.events import EventBus, EventKind, GroupEvent, KafkaWordedLog, RebalanceCause
from kcoord.coordinator.requests import (
    HeartbeatRequest, JoinRequest, LeaveMember, OffsetCommitPartition, OffsetCommitRequest, SyncRequest,
)
from kcoord.coordinator.results import (
    FetchedOffset, JoinResult, LeaveResult, OffsetCommitResult, OffsetDeleteResult, SyncResult,
)
from kcoord.coordinator.runtime import CoordinatorRuntime
from kcoord.coordinator.service import BrokerCoordinator, CoordinatorService, parked
from kcoord.coordinator.state import GroupState

__all__ = [
    "AsyncioTimer", "ManualTimer", "Timer", "CoordinatorConfig", "offsets_partition_for", "FetchedOffset",
    "GroupCoordinator", "JoinResult", "LeaveMember", "LeaveResult", "OffsetCommitPartition",
    "OffsetCommitResult", "OffsetDeleteResult", "SyncResult", "EventBus", "EventKind", "GroupEvent",
    "KafkaWordedLog", "RebalanceCause", "CoordinatorService", "BrokerCoordinator", "CoordinatorRuntime", "parked",
    "GroupState", "build_coordinator",
    "HeartbeatRequest", "JoinRequest", "OffsetCommitRequest", "SyncRequest",
]


def build_coordinator(server_config, topics, timer: Timer | None = None) -> CoordinatorService:
    sc = server_config
    config = CoordinatorConfig(initial_rebalance_delay_ms=sc.initial_rebalance_delay_ms,
                               offsets_topic_partitions=sc.offsets_topic_partitions,
                               max_group_size=sc.group_max_size,
                               min_session_timeout_ms=sc.group_min_session_timeout_ms,
                               max_session_timeout_ms=sc.group_max_session_timeout_ms,
                               offsets_retention_ms=sc.offsets_retention_minutes * 60 * 1000,
                               offsets_retention_check_interval_ms=sc.offsets_retention_check_interval_ms,
                               offset_metadata_max_bytes=sc.offset_metadata_max_bytes,
                               consumer_session_timeout_ms=sc.group_consumer_session_timeout_ms,
                               consumer_heartbeat_interval_ms=sc.group_consumer_heartbeat_interval_ms,
                               consumer_max_size=sc.group_consumer_max_size,
                               consumer_assignors=tuple(sc.group_consumer_assignors),
                               consumer_assignment_interval_ms=sc.group_consumer_assignment_interval_ms,
                               consumer_regex_refresh_interval_ms=sc.group_consumer_regex_refresh_interval_ms,
                               consumer_migration_policy=sc.group_consumer_migration_policy)
    bus = EventBus()
    bus.subscribe(KafkaWordedLog())
    return CoordinatorService(CoordinatorRuntime(timer or AsyncioTimer(), config, topics, bus,
                                                 load_ms=sc.coordinator_load_ms))
