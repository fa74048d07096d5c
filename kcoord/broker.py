"""The broker: one node that owns every partition and coordinates every group.

It holds the pieces handlers talk to; it knows no bytes (handlers do) and no
group rules (the coordinator does).
"""
from __future__ import annotations

from kcoord.client_metrics import ClientMetricsStore
from kcoord.config import ServerConfig
from kcoord.log.topics import TopicStore


class Broker:
    def __init__(self, config: ServerConfig, coordinator=None, topics: TopicStore | None = None):
        self.config = config
        self.topics = topics or TopicStore(config.default_partitions)
        self.coordinator = coordinator
        self.users = None        # kcoord.security.users.UserStore, set by the app
        self.authorizer = None   # kcoord.security.acls.Authorizer when ACLs are on
        # kcoord.log.consumer_offsets.OffsetsTopic: __consumer_offsets, created on first use.
        self.offsets_topic = None
        # kcoord.dynamic_broker_config.DynamicBrokerConfigs, set by the app.
        self.dynamic_configs = None
        self.client_metrics = ClientMetricsStore()

    @property
    def node_id(self) -> int:
        return self.config.node_id

    def node(self) -> dict:
        host, port = self.config.advertised
        return {"node_id": self.config.node_id, "host": host, "port": port, "rack": self.config.rack}
