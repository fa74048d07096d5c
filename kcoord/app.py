"""One running kcoord: broker state, group coordinator and the TCP listener.

Used by `kcoord serve`, by the pytest fixture and by tests that need a real
server in-process.
"""
from __future__ import annotations

import collections

from kcoord.admin import routes as admin_routes
from kcoord.admin.http import AdminHttp
from kcoord.broker import Broker
from kcoord.config import ServerConfig
from kcoord.coordinator import build_coordinator
from kcoord.coordinator.events import EventKind
from kcoord.dynamic_broker_config import DynamicBrokerConfigs
from kcoord.journal import Journal, JournalTopic, journal_path
from kcoord.log.consumer_offsets import OffsetsTopic
from kcoord.admin.metrics import Metrics
from kcoord.faults.routes import install_faults
from kcoord.security.setup import security_options
from kcoord.server import KafkaServer


class Kcoord:
    def __init__(self, config: ServerConfig | None = None, clock=None):
        self.config = config or ServerConfig()
        self.broker = Broker(self.config)
        # Dynamic broker configs (AlterConfigs on a BROKER resource) kept in the data dir are put
        # back first: they override the static values everything below starts from.
        self.broker.dynamic_configs = DynamicBrokerConfigs(self.config, self.config.data_dir)
        self.broker.dynamic_configs.load()
        self.coordinator = build_coordinator(self.config, self.broker.topics, clock)
        self.broker.coordinator = self.coordinator
        # The coordinator's records go to __consumer_offsets (and, with a data dir, to disk
        # in the same write: see start()).
        self.offsets_topic = OffsetsTopic(self.broker.topics, self.config.offsets_topic_partitions,
                                          self.coordinator.core.now)
        self.broker.offsets_topic = self.offsets_topic
        self.coordinator.core.record_sink = self.offsets_topic
        # The latest coordinator events, for tests and (later) the admin endpoint. Not the
        # commits: one per OffsetCommit would push the groups' history out of the window, and
        # keeping ten thousand of them alive cost a commit a seventh of its CPU (the cyclic GC
        # walking them) where the journal and metrics only count them.
        self.recorded_events: collections.deque = collections.deque(maxlen=10000)
        record = self.recorded_events.append
        self.coordinator.core.bus.subscribe(lambda e: e.kind is EventKind.OFFSETS_COMMITTED or record(e))
        self.journal_topic = (JournalTopic(self.broker.topics, self.config.journal_topic)
                              if self.config.journal_topic else None)
        self.journal = _open_journal(self.config, self.coordinator, self.journal_topic)
        security = security_options(self.config)
        self.broker.users = security.pop("users")
        self.server = KafkaServer(self.broker, self.config.listen_host, self.config.listen_port,
                                  self.config.max_frame_bytes, **security)
        self.broker.dynamic_configs.listeners.append(self._dynamic_configs_changed)
        self.broker.authorizer = self.server.acls
        self.storage = None
        # Features add their routes here before start().
        self.http = (AdminHttp(self.config.http_host, self.config.http_port)
                     if self.config.http_host is not None else None)
        self.metrics = Metrics(self.coordinator.core)
        self.server.metrics = self.metrics
        if self.http is not None:
            self.http.health_checks.append(lambda: self.storage.failure if self.storage is not None else None)
        if self.http is not None:
            admin_routes.install(self)
        self.faults = install_faults(self)

    def _dynamic_configs_changed(self, cfg) -> None:
        limits = self.server.limits
        limits.max_connections, limits.max_connections_per_ip = cfg.max_connections, cfg.max_connections_per_ip

    async def start(self) -> tuple[str, int]:
        if self.config.data_dir is not None:
            from kcoord.storage import DurableState

            # Loaded on the loop: restored members' session timers are loop timers.
            self.storage = DurableState(self.config.data_dir, self.coordinator.core, self.broker.topics,
                                        self.config.fsync, self.config.fsync_interval_ms)
            self.storage.client_metrics = self.broker.client_metrics
            self.storage.load()
            self.offsets_topic.durable = self.storage
            self.storage.offsets_in_batches = True
            self.storage.on_compact = self.offsets_topic.compact
            self.coordinator.core.record_sink = self.offsets_topic
            await self.storage.start()
        if self.journal_topic is not None:
            self.journal_topic.start()  # after durable state put back the topic's earlier records
        host, port = await self.server.start()
        self.metrics.watch_loop()
        # A listener on port 0 learns its port only now; advertise the real one.
        if self.config.advertised_port in (None, 0) and self.config.listen_port == 0:
            self.config.advertised_port = port
        self.config.listen_port = port
        if self.http is not None:
            await self.http.start()
        return host, port

    @property
    def bootstrap(self) -> str:
        host, port = self.config.advertised
        return f"{host}:{port}"

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
        self.metrics.stop_watching()
        await self.server.close()
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
    coordinator.core.bus.subscribe(journal)
    return journal
