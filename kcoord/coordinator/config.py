"""Coordinator settings; their defaults are the broker config table's (kcoord.broker_config)."""
from __future__ import annotations

import functools

from dataclasses import dataclass

from kcoord.broker_config import default


@dataclass
class CoordinatorConfig:
    initial_rebalance_delay_ms: int = default("group.initial.rebalance.delay.ms")
    min_session_timeout_ms: int = default("group.min.session.timeout.ms")
    max_session_timeout_ms: int = default("group.max.session.timeout.ms")
    max_group_size: int = default("group.max.size")
    new_member_join_timeout_ms: int = 5 * 60 * 1000  # Kafka's fixed new-member join timeout, not a config
    offsets_retention_ms: int = default("offsets.retention.minutes") * 60 * 1000
    offsets_retention_check_interval_ms: int = default("offsets.retention.check.interval.ms")
    offset_metadata_max_bytes: int = default("offset.metadata.max.bytes")
    offsets_topic_partitions: int = default("offsets.topic.num.partitions")
    # The consumer group protocol (KIP-848).
    consumer_session_timeout_ms: int = default("group.consumer.session.timeout.ms")
    consumer_heartbeat_interval_ms: int = default("group.consumer.heartbeat.interval.ms")
    consumer_max_size: int = default("group.consumer.max.size")
    consumer_assignors: tuple = default("group.consumer.assignors")
    consumer_assignment_interval_ms: int = default("group.consumer.assignment.interval.ms")
    consumer_regex_refresh_interval_ms: int = default("group.consumer.regex.refresh.interval.ms")
    consumer_migration_policy: str = default("group.consumer.migration.policy")
    # Streams groups (KIP-1071).
    streams_session_timeout_ms: int = default("group.streams.session.timeout.ms")
    streams_heartbeat_interval_ms: int = default("group.streams.heartbeat.interval.ms")
    streams_max_size: int = default("group.streams.max.size")
    streams_num_standby_replicas: int = default("group.streams.num.standby.replicas")
    streams_max_standby_replicas: int = default("group.streams.max.standby.replicas")
    streams_initial_rebalance_delay_ms: int = default("group.streams.initial.rebalance.delay.ms")
    streams_assignment_interval_ms: int = default("group.streams.assignment.interval.ms")
    # Share groups (KIP-932).
    share_session_timeout_ms: int = default("group.share.session.timeout.ms")
    share_heartbeat_interval_ms: int = default("group.share.heartbeat.interval.ms")
    share_max_size: int = default("group.share.max.size")
    share_assignment_interval_ms: int = default("group.share.assignment.interval.ms")

    @property
    def upgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.consumer_migration_policy in ("bidirectional", "downgrade")


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (UTF-16 code units, 32-bit overflow)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@functools.lru_cache(maxsize=8192)   # asked on every commit; the hash is a Python loop per character
def offsets_partition_for(group_id: str, partitions: int = 50) -> int:
    """The __consumer_offsets partition (hence the coordinator) of a group, as Kafka computes it."""
    h = java_string_hash(group_id)
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 rather than overflowing.
    return (0 if h == -(2**31) else abs(h)) % partitions
