"""A broker: one node of the cluster, as its request handlers see it.

Every broker of a kcoord has its own listener and node id; they share the topics, the
cluster's leadership, the group coordinator, users and ACLs. A handler reaches all of it
through `ctx.broker`; it knows no bytes (handlers do) and no group rules (the coordinator
does).
"""
from __future__ import annotations

import asyncio

from kcoord.client_metrics import ClientMetricsStore
from kcoord.config import ServerConfig
from kcoord.features import FeatureLevels
from kcoord.group_configs import GroupConfigs
from kcoord.log.topics import TopicStore
from kcoord.share.sessions import ShareSessionCache


class Broker:
    def __init__(self, config: ServerConfig, coordinator=None, topics: TopicStore | None = None,
                 node=None, cluster=None):
        self.config = config
        self.topics = topics or TopicStore(config.default_partitions)
        # kcoord.cluster.Node and Cluster; without them (a broker built on its own, in a test),
        # the broker is node `node.id` of a cluster of one.
        self.cluster = cluster
        self._node = node
        self.coordinator = coordinator
        self.users = None        # kcoord.security.users.UserStore, set by the app
        self.authorizer = None   # kcoord.security.acls.Authorizer when ACLs are on
        # kcoord.log.consumer_offsets.OffsetsTopic: __consumer_offsets, created on first use.
        self.offsets_topic = None
        # kcoord.dynamic_broker_config.DynamicBrokerConfigs, set by the app.
        self.dynamic_configs = None
        self.client_metrics = ClientMetricsStore()
        # Per-group configs (GROUP resources): the cluster's, as the app sets them.
        self.group_configs = GroupConfigs(config)
        # kcoord.features.FeatureLevels, the cluster's; kcoord.transaction.runtime.BrokerTransactions.
        self.features = FeatureLevels()
        self.transactions = None
        # kcoord.share.manager.ShareManager: the share-partitions, the kcoord's (set by the app).
        self.shares = None
        # kcoord.cluster.reassignment.ReplicaCopier: the cluster's, set by the app.
        self.replica_copier = None
        # This broker's own share sessions: a share consumer keeps one with each broker it fetches from.
        self.share_sessions = ShareSessionCache(config.group_share_max_share_sessions, self._share_member_gone)

    def _share_member_gone(self, group_id: str, member_id: str, partitions: list[tuple[str, int]]) -> None:
        """A share session's connection closed: the member's records in its partitions are released."""
        if self.shares is not None and partitions:
            asyncio.get_running_loop().create_task(self.shares.release_member(group_id, member_id, partitions))

    @property
    def node_id(self) -> int:
        return self._node.node_id if self._node is not None else self.config.node_id

    @property
    def rack(self) -> str | None:
        return self._node.rack if self._node is not None else self.config.rack

    def node(self) -> dict:
        """This broker as Metadata and FindCoordinator name it."""
        if self._node is not None:
            return self._node.describe()
        host, port = self.config.advertised
        return {"node_id": self.config.node_id, "host": host, "port": port, "rack": self.config.rack}

    def brokers(self) -> list[dict]:
        """Every broker Metadata lists: those the controller has not fenced."""
        if self.cluster is None:
            return [self.node()]
        return [n.describe() for n in self.cluster.alive()]

    def describe(self, node_id: int) -> dict | None:
        """Broker `node_id` as Metadata names it, or None if there is no such broker."""
        if self.cluster is None:
            return self.node() if node_id == self.node_id else None
        node = self.cluster.nodes.get(node_id)
        return None if node is None else node.describe()

    @property
    def controller_id(self) -> int:
        return self.node_id if self.cluster is None else self.cluster.controller_id

    def leads(self, partition) -> bool:
        """Whether this broker leads `partition` (a kcoord.log.partition.Partition)."""
        return partition.leader == self.node_id
