"""One running kcoord: its brokers, the group coordinator and their listeners.

Used by `kcoord serve`, by the pytest fixture and by tests that need a real
server in-process.
"""
from __future__ import annotations

import collections

from kcoord.admin import cluster_routes
from kcoord.admin import routes as admin_routes
from kcoord.admin.http import AdminHttp
from kcoord.broker import Broker
from kcoord.cluster.cluster import Cluster
from kcoord.cluster.controls import ClusterControls
from kcoord.cluster.reassignment import ReplicaCopier
from kcoord.config import ServerConfig, cluster_nodes
from kcoord.coordinator import build_coordinator
from kcoord.coordinator.events import SHARE_RECORD_KINDS, EventKind
from kcoord.coordinator.share.protocol import on_group_deleted as on_share_group_deleted
from kcoord.dynamic_broker_config import DynamicBrokerConfigs
from kcoord.features import FeatureLevels
from kcoord.group_configs import GroupConfigs
from kcoord.journal import Journal, JournalTopic, journal_path
from kcoord.log.consumer_offsets import TOPIC as OFFSETS_TOPIC
from kcoord.log.consumer_offsets import TOPIC_CONFIGS as OFFSETS_TOPIC_CONFIGS
from kcoord.log.consumer_offsets import OffsetsTopic
from kcoord.log.offsets_loader import OffsetsPartitions
from kcoord.log.topics import InternalTopic, TopicStore
from kcoord.share.manager import ShareManager
from kcoord.share.state import TOPIC as SHARE_TOPIC
from kcoord.share.state import TOPIC_CONFIGS as SHARE_TOPIC_CONFIGS
from kcoord.share.state import ShareStateRuntime
from kcoord.transaction.coordinator import TxnConfig
from kcoord.transaction.runtime import TOPIC as TXN_TOPIC
from kcoord.transaction.runtime import TOPIC_CONFIGS as TXN_TOPIC_CONFIGS
from kcoord.transaction.runtime import BrokerTransactions, TransactionRuntime
from kcoord.admin.metrics import Metrics
from kcoord.faults.routes import install_faults
from kcoord.security.setup import security_options
from kcoord.server import KafkaServer


class Kcoord:
    def __init__(self, config: ServerConfig | None = None, clock=None):
        self.config = config = config or ServerConfig()
        self.cluster = Cluster(cluster_nodes(config))
        self.topics = TopicStore(config.default_partitions, self.cluster, config.default_replication_factor)
        # Kafka creates __consumer_offsets with its own settings whichever request creates it;
        # replicas: offsets.topic.replication.factor, at most one per broker (docs/cluster.md).
        self.topics.internal[OFFSETS_TOPIC] = InternalTopic(
            config.offsets_topic_partitions, dict(OFFSETS_TOPIC_CONFIGS),
            min(config.offsets_topic_replication_factor, self.cluster.size))
        # __transaction_state likewise (transaction.state.log.*), its min.insync.replicas at most its replicas.
        txn_replicas = min(config.transaction_state_log_replication_factor, self.cluster.size)
        self.topics.internal[TXN_TOPIC] = InternalTopic(
            config.transaction_state_log_partitions,
            {**TXN_TOPIC_CONFIGS, "min.insync.replicas": str(min(config.transaction_state_log_min_isr, txn_replicas))},
            txn_replicas)
        # __share_group_state likewise (share.coordinator.state.topic.*).
        share_replicas = min(config.share_coordinator_state_topic_replication_factor, self.cluster.size)
        self.topics.internal[SHARE_TOPIC] = InternalTopic(
            config.share_coordinator_state_topic_partitions,
            {**SHARE_TOPIC_CONFIGS, "segment.bytes": "104857600",
             "min.insync.replicas": str(min(config.share_coordinator_state_topic_min_isr, share_replicas))},
            share_replicas)
        # Dynamic broker configs (AlterConfigs on a BROKER resource) kept in the data dir are put
        # back first: they override the static values everything below starts from.
        dynamic_configs = DynamicBrokerConfigs(config, config.data_dir)
        dynamic_configs.load()
        self.coordinator = build_coordinator(config, self.topics, clock)
        runtime = self.coordinator.runtime
        # Per-group configs (GROUP resources), kept in the data dir as the dynamic broker configs
        # are: the coordinators read a group's from them.
        self.group_configs = GroupConfigs(config, config.data_dir)
        self.group_configs.load()
        runtime.group_configs = self.group_configs
        # The coordinators' records go to __consumer_offsets (and, with a data dir, to disk in
        # the same write: see start()), which is also where a coordinator loads its groups from.
        self.offsets_topic = OffsetsTopic(self.topics, config.offsets_topic_partitions, runtime.now)
        runtime.record_sink = self.offsets_topic
        runtime.log = OffsetsPartitions(self.offsets_topic)
        # A __consumer_offsets partition's new leader loads its groups; the old one unloads them.
        self.cluster.listeners.append(
            lambda change: change.topic == OFFSETS_TOPIC and runtime.leader_changed(
                change.partition, change.new_leader, change.epoch))
        # The transaction coordinators, placed and moved over __transaction_state as the group
        # coordinators are over __consumer_offsets; their markers reach the groups through `groups`.
        self.features = FeatureLevels(config.data_dir)
        self.transactions = TransactionRuntime(
            runtime.timer, self.topics,
            TxnConfig(max_timeout_ms=config.transaction_max_timeout_ms,
                      abort_interval_ms=config.transaction_abort_interval_ms,
                      id_expiration_ms=config.transactional_id_expiration_ms,
                      expiration_interval_ms=config.transaction_remove_expired_interval_ms),
            config.transaction_state_log_partitions, bus=runtime.bus, load_ms=config.coordinator_load_ms,
            transaction_version=lambda: self.features.level("transaction.version"))
        self.transactions.groups = runtime
        self.cluster.listeners.append(
            lambda change: change.topic == TXN_TOPIC and self.transactions.leader_changed(
                change.partition, change.new_leader, change.epoch))
        # The share coordinator over __share_group_state, and the share-partitions of every
        # broker (the partition leaders' SharePartitionManager): one for the kcoord, as the
        # coordinators are. A share-partition whose leader moves or dies is dropped (its next
        # leader loads it from __share_group_state, as Kafka's does).
        self.share_state = ShareStateRuntime(
            runtime.timer, self.topics, config.share_coordinator_state_topic_partitions,
            config.share_coordinator_snapshot_update_records_per_snapshot, load_ms=config.coordinator_load_ms)
        self.shares = ShareManager(self.topics, runtime.timer, self.share_state, config, self.group_configs,
                                   bus=runtime.bus)
        self.cluster.listeners.append(
            lambda change: self.share_state.leader_changed(change.partition, change.new_leader, change.epoch)
            if change.topic == SHARE_TOPIC else self.shares.leader_changed(change.topic, change.partition))
        # As Kafka's DeleteGroups deletes a share group's state through the persister: a deleted
        # share group's next life starts from its share.auto.offset.reset.
        on_share_group_deleted(runtime.bus, lambda group_id: self.shares.delete_state(
            group_id, list(self.shares.partitions_with_state(group_id))))
        # One broker per node, each the `ctx.broker` of its own listener's requests.
        self.brokers = [Broker(config, self.coordinator.broker(node.node_id), self.topics, node, self.cluster)
                        for node in self.cluster.nodes.values()]
        for broker in self.brokers:
            broker.features = self.features
            broker.transactions = BrokerTransactions(self.transactions, broker.node_id)
            broker.shares = self.shares
            broker.dynamic_configs = dynamic_configs
            broker.offsets_topic = self.offsets_topic
            broker.client_metrics = self.brokers[0].client_metrics   # the cluster's, as Kafka keeps them
            broker.group_configs = self.group_configs
        self.broker = self.brokers[0]
        # The latest coordinator events, for tests and (later) the admin endpoint. Not the
        # commits: one per OffsetCommit would push the groups' history out of the window, and
        # keeping ten thousand of them alive cost a commit a seventh of its CPU (the cyclic GC
        # walking them) where the journal and metrics only count them. Nor a share group's record
        # events, as frequent as its fetches.
        self.recorded_events: collections.deque = collections.deque(maxlen=10000)
        record = self.recorded_events.append
        runtime.bus.subscribe(lambda e: e.kind is EventKind.OFFSETS_COMMITTED or e.kind in SHARE_RECORD_KINDS
                              or record(e))
        self.journal_topic = (JournalTopic(self.broker.topics, self.config.journal_topic)
                              if self.config.journal_topic else None)
        self.journal = _open_journal(self.config, self.coordinator, self.journal_topic)
        security = security_options(self.config)
        users = security.pop("users")
        # Every broker has its own listener and connection limits; users, the SASL gate, TLS and
        # ACLs are the cluster's.
        self.servers = []
        for broker in self.brokers:
            broker.users = users
            node = broker.cluster.node(broker.node_id)
            limits = security.pop("limits") if not self.servers else security_options(self.config)["limits"]
            self.servers.append(KafkaServer(broker, node.listen_host, node.listen_port, self.config.max_frame_bytes,
                                            limits=limits, **security))
            broker.authorizer = self.servers[-1].acls
        self.server = self.servers[0]
        self.controls = ClusterControls(
            self.cluster, {s.broker.node_id: s for s in self.servers}, runtime, runtime.timer,
            config.broker_session_timeout_ms, config.auto_leader_rebalance_enable,
            config.leader_imbalance_check_interval_seconds * 1000, on_listen=self._listen)
        self.controls.listeners.append(
            lambda action, node_id, details: action == "killed" and self.transactions.node_lost(node_id))
        self.controls.listeners.append(
            lambda action, node_id, details: action == "killed" and (self.share_state.node_lost(node_id),
                                                                     self.shares.node_lost(node_id)))
        dynamic_configs.listeners.append(self._dynamic_configs_changed)
        self.replica_copier = ReplicaCopier(self.cluster, runtime.timer, config.reassignment_copy_bytes_per_second,
                                            dynamic_configs.value)
        for broker in self.brokers:
            broker.replica_copier = self.replica_copier
        self.storage = None
        # Features add their routes here before start().
        self.http = (AdminHttp(self.config.http_host, self.config.http_port)
                     if self.config.http_host is not None else None)
        self.metrics = Metrics(runtime, self.cluster)
        for server in self.servers:
            server.metrics = self.metrics
        if self.http is not None:
            self.http.health_checks.append(lambda: self.storage.failure if self.storage is not None else None)
        if self.http is not None:
            admin_routes.install(self)
            cluster_routes.install(self)
        self.faults = install_faults(self)

    def _dynamic_configs_changed(self, cfg) -> None:
        for server in self.servers:
            limits = server.limits
            limits.max_connections, limits.max_connections_per_ip = cfg.max_connections, cfg.max_connections_per_ip

    async def start(self) -> tuple[str, int]:
        if self.config.data_dir is not None:
            from kcoord.storage import DurableState

            self.storage = DurableState(self.config.data_dir, self.topics, self.config.fsync,
                                        self.config.fsync_interval_ms)
            self.storage.client_metrics = self.broker.client_metrics
            self.storage.load()
            storage = self.storage
            self.cluster.listeners.append(
                lambda change: storage.leadership_changed(change.topic, self.topics.partition(change.topic,
                                                                                               change.partition)))
            self.cluster.partition_listeners.append(storage.leadership_changed)
            self.cluster.elect_missing("the brokers started")
            self.offsets_topic.durable = self.storage
            self.storage.on_compact = self.offsets_topic.compact
            if self.storage.legacy_records:
                self.offsets_topic.append(self.storage.legacy_records)
            # Each broker's coordinators load the groups of the partitions it leads, before any
            # listener accepts a client. On the loop: members' session timers are loop timers.
            self.coordinator.runtime.load_led(n.node_id for n in self.cluster.alive())
            self.transactions.observe_log()
            self.transactions.load_led(n.node_id for n in self.cluster.alive())
            self.share_state.load_led(n.node_id for n in self.cluster.alive())
            await self.storage.start()
        if self.journal_topic is not None:
            self.journal_topic.start()  # after durable state put back the topic's earlier records
        for server in self.servers:
            await self._listen(server)
        host, port = self.server.host, self.server.port
        self.controls.schedule_rebalance()
        self.replica_copier.start()   # reassignments a data dir kept go on
        self.metrics.watch_loop()
        # What node 0 listens on and advertises is also the config's (what `bootstrap` names).
        node = self.cluster.node(self.broker.node_id)
        if self.config.advertised_port in (None, 0) and self.config.listen_port == 0:
            self.config.advertised_port = node.advertised[1]
        self.config.listen_port = port
        if self.http is not None:
            await self.http.start()
        return host, port

    async def _listen(self, server: KafkaServer) -> None:
        node = self.cluster.node(server.broker.node_id)
        host, port = await server.start()
        # A listener on port 0 learns its port only now: it keeps it (a restarted broker comes
        # back where clients knew it) and advertises it.
        if node.listen_port == 0 and node.advertised_port in (None, 0):
            node.advertised_port = port
        node.listen_port = server.port = port

    @property
    def bootstrap(self) -> str:
        """Every broker's address, as a client's bootstrap.servers."""
        return ",".join("%s:%d" % n.advertised for n in self.cluster.nodes.values())

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
        self.metrics.stop_watching()
        self.controls.cancel()
        self.replica_copier.cancel()
        for server in self.servers:
            await server.close()
        await self.coordinator.close()
        if self.journal is not None:
            # Before durable state closes: its last offset_commits records still go to the topic.
            self.journal.close()
        if self.storage is not None:
            await self.storage.close()


def _open_journal(config: ServerConfig, coordinator, topic: JournalTopic | None):
    path = journal_path(config.journal, config.data_dir)
    if path is None and topic is None:
        return None
    journal = Journal(path, max_bytes=config.journal_max_bytes, sinks=(topic,) if topic is not None else ())
    coordinator.runtime.bus.subscribe(journal)
    return journal
