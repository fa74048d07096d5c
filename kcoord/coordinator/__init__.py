"""The group coordinator: pure logic over an injected clock, one per __consumer_offsets
partition on the broker leading it (`runtime`, over `shards`), with its asyncio face (`service`).

Shared by every group type, here: `coordinator` (the front: which part serves each API),
`context` (what an operation shares and collects), `clock`, `config`, `requests` and
`results`, `records` (what a restart rebuilds from), `events`, `group_admin` (describe, list,
delete) and `javaorder` (Java's hash iteration orders, for Kafka's exact assignments). Each
group type has a folder of its own, as in Kafka's group-coordinator module: `classic/` (the
group, its state table, JoinGroup/SyncGroup/Heartbeat/LeaveGroup), `consumer/` (KIP-848: the
group, the heartbeat, reconciliation, regexes, snapshots, online migration); beside them
`assignors/` (the consumer groups' server assignors) and `offsets/` (committed offsets, their
requests and retention, transactions' pending offsets)."""
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
from kcoord.coordinator.classic.state import GroupState

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
                               consumer_migration_policy=sc.group_consumer_migration_policy,
                               streams_session_timeout_ms=sc.group_streams_session_timeout_ms,
                               streams_heartbeat_interval_ms=sc.group_streams_heartbeat_interval_ms,
                               streams_max_size=sc.group_streams_max_size,
                               streams_num_standby_replicas=sc.group_streams_num_standby_replicas,
                               streams_max_standby_replicas=sc.group_streams_max_standby_replicas,
                               streams_initial_rebalance_delay_ms=sc.group_streams_initial_rebalance_delay_ms,
                               streams_assignment_interval_ms=sc.group_streams_assignment_interval_ms,
                               share_session_timeout_ms=sc.group_share_session_timeout_ms,
                               share_heartbeat_interval_ms=sc.group_share_heartbeat_interval_ms,
                               share_max_size=sc.group_share_max_size,
                               share_assignment_interval_ms=sc.group_share_assignment_interval_ms)
    bus = EventBus()
    bus.subscribe(KafkaWordedLog())
    return CoordinatorService(CoordinatorRuntime(timer or AsyncioTimer(), config, topics, bus,
                                                 load_ms=sc.coordinator_load_ms))
