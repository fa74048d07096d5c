"""Server configuration.

Fields that are Kafka broker configs take their defaults from kcoord.broker_config.TABLE (Kafka's
names, types, defaults and validators), which also feeds the flags, `--config-file` and
DescribeConfigs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kcoord.broker_config import default


def parse_host_port(text: str, default_port: int = 9092) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, default_port
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port)


@dataclass
class ServerConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = 9092
    # What clients are told to connect to (Metadata, FindCoordinator); defaults to the listener.
    advertised_host: str | None = None
    advertised_port: int | None = None
    node_id: int = default("node.id")
    cluster_id: str = "kcoord-cluster-00000001"
    rack: str | None = None
    # Several brokers in one process (docs/cluster.md): how many, each one's listener when not
    # consecutive ports from listen_port ((host, port) per broker), each one's rack.
    brokers: int = 1
    broker_addresses: tuple = ()
    broker_racks: tuple = ()
    default_replication_factor: int = default("default.replication.factor")
    offsets_topic_replication_factor: int = default("offsets.topic.replication.factor")
    # The transaction coordinator (kcoord.transaction).
    transaction_state_log_replication_factor: int = default("transaction.state.log.replication.factor")
    transaction_state_log_partitions: int = default("transaction.state.log.num.partitions")
    transaction_state_log_min_isr: int = default("transaction.state.log.min.isr")
    transaction_max_timeout_ms: int = default("transaction.max.timeout.ms")
    transaction_abort_interval_ms: int = default("transaction.abort.timed.out.transaction.cleanup.interval.ms")
    transactional_id_expiration_ms: int = default("transactional.id.expiration.ms")
    transaction_remove_expired_interval_ms: int = default("transaction.remove.expired.transaction.cleanup.interval.ms")
    # Share-partitions and the share coordinator (kcoord.share).
    group_share_record_lock_duration_ms: int = default("group.share.record.lock.duration.ms")
    group_share_delivery_count_limit: int = default("group.share.delivery.count.limit")
    group_share_partition_max_record_locks: int = default("group.share.partition.max.record.locks")
    group_share_max_share_sessions: int = default("group.share.max.share.sessions")
    share_coordinator_state_topic_partitions: int = default("share.coordinator.state.topic.num.partitions")
    share_coordinator_state_topic_replication_factor: int = default("share.coordinator.state.topic.replication.factor")
    share_coordinator_state_topic_min_isr: int = default("share.coordinator.state.topic.min.isr")
    share_coordinator_snapshot_update_records_per_snapshot: int = default(
        "share.coordinator.snapshot.update.records.per.snapshot")
    # How long the controller waits for a killed broker before moving its partitions away.
    broker_session_timeout_ms: int = default("broker.session.timeout.ms")
    auto_leader_rebalance_enable: bool = default("auto.leader.rebalance.enable")
    leader_imbalance_check_interval_seconds: int = default("leader.imbalance.check.interval.seconds")
    # How long a broker takes to load the groups of a __consumer_offsets partition it comes to
    # lead (COORDINATOR_LOAD_IN_PROGRESS meanwhile): kcoord's, Kafka's depends on the log.
    coordinator_load_ms: int = 100
    # How fast a replica being added by a reassignment copies its partition (kcoord's own: Kafka's
    # is its network's and disks'), before the replication throttles.
    reassignment_copy_bytes_per_second: int = 10 * 1024 * 1024
    data_dir: str | None = None               # None: state lives in memory only
    fsync: str = "interval"                   # always | interval | never (see kcoord.storage.record_log)
    fsync_interval_ms: int = 100
    auto_create_topics: bool = default("auto.create.topics.enable")
    default_partitions: int = default("num.partitions")
    max_frame_bytes: int = default("socket.request.max.bytes")
    offsets_topic_partitions: int = default("offsets.topic.num.partitions")
    initial_rebalance_delay_ms: int = default("group.initial.rebalance.delay.ms")
    group_min_session_timeout_ms: int = default("group.min.session.timeout.ms")
    group_max_session_timeout_ms: int = default("group.max.session.timeout.ms")
    offsets_retention_minutes: int = default("offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = default("offsets.retention.check.interval.ms")
    offset_metadata_max_bytes: int = default("offset.metadata.max.bytes")
    # Limits (kcoord.limits).
    max_connections: int = default("max.connections")
    max_connections_per_ip: int = default("max.connections.per.ip")
    connections_max_idle_ms: int = default("connections.max.idle.ms")
    max_buffered_request_bytes: int = 64 * 1024  # read-ahead of pipelined requests per connection
    group_max_size: int = default("group.max.size")
    # The consumer group protocol (KIP-848).
    group_consumer_session_timeout_ms: int = default("group.consumer.session.timeout.ms")
    group_consumer_min_session_timeout_ms: int = default("group.consumer.min.session.timeout.ms")
    group_consumer_max_session_timeout_ms: int = default("group.consumer.max.session.timeout.ms")
    group_consumer_heartbeat_interval_ms: int = default("group.consumer.heartbeat.interval.ms")
    group_consumer_min_heartbeat_interval_ms: int = default("group.consumer.min.heartbeat.interval.ms")
    group_consumer_max_heartbeat_interval_ms: int = default("group.consumer.max.heartbeat.interval.ms")
    group_consumer_max_size: int = default("group.consumer.max.size")
    group_consumer_assignors: tuple = default("group.consumer.assignors")
    group_consumer_assignment_interval_ms: int = default("group.consumer.assignment.interval.ms")
    group_consumer_regex_refresh_interval_ms: int = default("group.consumer.regex.refresh.interval.ms")
    group_consumer_migration_policy: str = default("group.consumer.migration.policy")
    # Streams groups (KIP-1071).
    group_streams_session_timeout_ms: int = default("group.streams.session.timeout.ms")
    group_streams_min_session_timeout_ms: int = default("group.streams.min.session.timeout.ms")
    group_streams_max_session_timeout_ms: int = default("group.streams.max.session.timeout.ms")
    group_streams_heartbeat_interval_ms: int = default("group.streams.heartbeat.interval.ms")
    group_streams_min_heartbeat_interval_ms: int = default("group.streams.min.heartbeat.interval.ms")
    group_streams_max_heartbeat_interval_ms: int = default("group.streams.max.heartbeat.interval.ms")
    group_streams_max_size: int = default("group.streams.max.size")
    group_streams_num_standby_replicas: int = default("group.streams.num.standby.replicas")
    group_streams_max_standby_replicas: int = default("group.streams.max.standby.replicas")
    group_streams_initial_rebalance_delay_ms: int = default("group.streams.initial.rebalance.delay.ms")
    group_streams_assignment_interval_ms: int = default("group.streams.assignment.interval.ms")
    group_streams_min_assignment_interval_ms: int = default("group.streams.min.assignment.interval.ms")
    group_streams_max_assignment_interval_ms: int = default("group.streams.max.assignment.interval.ms")
    group_share_session_timeout_ms: int = default("group.share.session.timeout.ms")
    group_share_min_session_timeout_ms: int = default("group.share.min.session.timeout.ms")
    group_share_max_session_timeout_ms: int = default("group.share.max.session.timeout.ms")
    group_share_heartbeat_interval_ms: int = default("group.share.heartbeat.interval.ms")
    group_share_min_heartbeat_interval_ms: int = default("group.share.min.heartbeat.interval.ms")
    group_share_max_heartbeat_interval_ms: int = default("group.share.max.heartbeat.interval.ms")
    group_share_max_size: int = default("group.share.max.size")
    group_share_assignment_interval_ms: int = default("group.share.assignment.interval.ms")
    group_share_min_assignment_interval_ms: int = default("group.share.min.assignment.interval.ms")
    group_share_max_assignment_interval_ms: int = default("group.share.max.assignment.interval.ms")
    group_share_record_lock_duration_ms: int = default("group.share.record.lock.duration.ms")
    group_share_min_record_lock_duration_ms: int = default("group.share.min.record.lock.duration.ms")
    group_share_max_record_lock_duration_ms: int = default("group.share.max.record.lock.duration.ms")
    group_share_delivery_count_limit: int = default("group.share.delivery.count.limit")
    group_share_min_delivery_count_limit: int = default("group.share.min.delivery.count.limit")
    group_share_max_delivery_count_limit: int = default("group.share.max.delivery.count.limit")
    group_share_partition_max_record_locks: int = default("group.share.partition.max.record.locks")
    group_share_min_partition_max_record_locks: int = default("group.share.min.partition.max.record.locks")
    group_share_max_partition_max_record_locks: int = default("group.share.max.partition.max.record.locks")
    group_share_max_share_sessions: int = default("group.share.max.share.sessions")
    group_share_assignors: tuple = default("group.share.assignors")
    # Authentication (kcoord.security), off by default.
    sasl_users_file: str | None = None        # name:password lines; turns SASL on
    sasl_mechanisms: tuple = default("sasl.enabled.mechanisms")
    tls_cert_file: str | None = None          # turns TLS on (SSL, or SASL_SSL with SASL)
    tls_key_file: str | None = None
    tls_client_ca_file: str | None = None     # ssl.client.auth=required when set
    group_acls_file: str | None = None        # kcoord.security.acls rules; deny what they do not allow
    acls: bool = False                        # ACLs on (also implied by group_acls_file), managed at run time
    super_users: tuple = ()                   # principals every ACL check allows (Kafka's super.users)
    # The HTTP admin endpoint (`--http`); None keeps it off.
    http_host: str | None = None
    http_port: int = 0
    # The event journal: None puts it under data_dir (if any), "none" turns it off, else a path.
    journal: str | None = None
    journal_max_bytes: int = 64 * 1024 * 1024
    # A topic on this broker that gets every journal line too (key: group id); None: none.
    journal_topic: str | None = None
    # Fault rules active from start (kcoord.faults: dicts or `key=value,...` strings).
    fault_rules: list = field(default_factory=list)
    # Kafka config name -> text, for the names given in --config-file, --config or a flag alias:
    # DescribeConfigs reports these as STATIC_BROKER_CONFIG.
    static_broker_configs: dict = field(default_factory=dict)

    @property
    def advertised(self) -> tuple[str, int]:
        return (self.advertised_host or self.listen_host,
                self.advertised_port if self.advertised_port is not None else self.listen_port)


def cluster_nodes(config: ServerConfig) -> list:
    """The brokers `config` asks for: node ids 0..N-1 (`node.id` for a single broker), listeners
    on consecutive ports from the configured one (each on a free port of its own when that is 0)
    or as listed, advertised likewise, racks as listed (`broker.rack` for a single broker)."""
    from kcoord.cluster.cluster import Node

    n = len(config.broker_addresses) or config.brokers
    if n < 1:
        raise ValueError(f"--brokers {n}: a cluster needs at least one broker")
    if config.broker_racks and len(config.broker_racks) != n:
        raise ValueError(f"--broker-racks names {len(config.broker_racks)} racks for {n} brokers")
    nodes = []
    for i in range(n):
        if config.broker_addresses:
            host, port = config.broker_addresses[i]
        else:
            host, port = config.listen_host, config.listen_port + i if config.listen_port else 0
        advertised_port = None
        if config.advertised_port is not None:
            advertised_port = config.advertised_port + i if config.advertised_port else 0
        rack = config.broker_racks[i] if config.broker_racks else config.rack
        nodes.append(Node(config.node_id if n == 1 else i, host, port, config.advertised_host if i == 0 or
                          not config.broker_addresses else None, advertised_port, rack or None))
    return nodes
