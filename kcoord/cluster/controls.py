"""Stopping, killing and starting brokers, moving leaders: what a test does to a cluster, as a
Kafka operator or a crash would do it.

- stop: Kafka's controlled shutdown. The controller moves the broker's partitions away first
  (its coordinators unload: a parked JoinGroup or SyncGroup is answered NOT_COORDINATOR), then
  its listener closes, once the requests in flight have had STOP_SETTLE_S to finish (those
  answers among them).
- kill: kill -9. The listener and every connection are reset at once and the broker's
  coordinators are gone from memory, but the controller still counts it in (Metadata and
  FindCoordinator still name it) until broker.session.timeout.ms has passed without it; then
  its partitions move.
- start: the broker listens again on the same address. A broker killed and started before the
  controller gave up on it re-registers, which fences it first (its partitions move). It comes
  back as a follower of its partitions, and leads only those left without a leader.
- move a leader, elect preferred leaders: as the controller does for ElectLeaders, and every
  leader.imbalance.check.interval.seconds when auto.leader.rebalance.enable is on.

Timers run on the coordinator's timer, so a manual clock drives them in tests too.
"""
from __future__ import annotations

import logging

from kcoord.cluster.cluster import Cluster

log = logging.getLogger("kcoord.cluster")

# How long a stopped broker's requests in flight get to finish before its connections close.
STOP_SETTLE_S = 0.5


class ClusterControlError(ValueError):
    """A control that cannot be applied as asked; its text says why, in one line."""


class ClusterControls:
    def __init__(self, cluster: Cluster, servers: dict, runtime, timer, session_timeout_ms: int,
                 auto_rebalance: bool, imbalance_check_ms: int, on_listen=None):
        self.cluster = cluster
        self.servers = servers            # node id -> its kcoord.server.KafkaServer
        self.runtime = runtime            # kcoord.coordinator.runtime.CoordinatorRuntime
        self.timer = timer
        self.session_timeout_ms = session_timeout_ms
        self.auto_rebalance = auto_rebalance
        self.imbalance_check_ms = imbalance_check_ms
        self.on_listen = on_listen        # awaited with a server that starts listening again
        # Told of every control applied: (action, node id or None, details).
        self.listeners: list = []

    def _node(self, node_id: int):
        node = self.cluster.nodes.get(node_id)
        if node is None:
            raise ClusterControlError(f"no broker {node_id} (brokers: {', '.join(map(str, self.cluster.nodes))})")
        return node

    def _tell(self, action: str, node_id: int | None, **details) -> None:
        for listen in list(self.listeners):
            listen(action, node_id, details)

    # ---------------------------------------------------------------- brokers
    async def stop(self, node_id: int) -> None:
        node = self._node(node_id)
        if not node.running:
            raise ClusterControlError(f"broker {node_id} is not running")
        log.info("broker %d: controlled shutdown", node_id)
        self.cluster.fence(node_id, f"broker {node_id} shut down")
        node.running = False
        # Kafka's socket server stops only once the controlled shutdown has moved the broker's
        # leaderships, so the answers that move gave (NOT_COORDINATOR to the requests parked in
        # the unloaded groups) reach their clients.
        await self.servers[node_id].close(settle_s=STOP_SETTLE_S)
        self._tell("stopped", node_id)

    async def kill(self, node_id: int) -> None:
        node = self._node(node_id)
        if not node.running:
            raise ClusterControlError(f"broker {node_id} is not running")
        log.info("broker %d: killed; the controller fences it after %d ms", node_id, self.session_timeout_ms)
        node.running = False
        await self.servers[node_id].close(abort=True)
        self.runtime.node_lost(node_id)
        self.timer.schedule(self._fence_key(node_id), self.session_timeout_ms,
                            lambda: self._session_expired(node_id))
        self._tell("killed", node_id, fenced_after_ms=self.session_timeout_ms)

    def _fence_key(self, node_id: int) -> str:
        return f"broker-session-{node_id}"

    def _session_expired(self, node_id: int) -> None:
        if not self.cluster.node(node_id).running:
            self.cluster.fence(node_id, f"broker {node_id} missed its session (broker.session.timeout.ms)")
            self._tell("fenced", node_id)

    async def start(self, node_id: int) -> None:
        node = self._node(node_id)
        if node.running:
            raise ClusterControlError(f"broker {node_id} is already running")
        self.timer.cancel(self._fence_key(node_id))
        if not node.fenced:
            # Back before the controller gave up on it: its new registration fences the old one.
            self.cluster.fence(node_id, f"broker {node_id} registered again")
        await self.on_listen(self.servers[node_id])
        node.running = True
        self.cluster.unfence(node_id, f"broker {node_id} started")
        log.info("broker %d: started", node_id)
        self._tell("started", node_id)

    # ---------------------------------------------------------------- leaders
    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._node(node_id)
        error = self.cluster.move_leader(topic, partition, node_id, f"moved to broker {node_id} on request")
        if error is not None:
            raise ClusterControlError(f"cannot move {topic}-{partition} to broker {node_id}: {error}")
        self._tell("leader_moved", node_id, topic=topic, partition=partition)

    def elect_preferred(self, partitions=None) -> dict[tuple[str, int], str | None]:
        """Preferred-leader election of `partitions` ((topic, index) pairs; None: every partition
        led elsewhere); each partition's outcome: None, or the ErrorCode name Kafka answers."""
        targets = self.cluster.imbalanced() if partitions is None else list(partitions)
        return {(t, p): self.cluster.elect(t, p, preferred=True, reason="preferred leader election")
                for t, p in targets}

    def schedule_rebalance(self) -> None:
        """auto.leader.rebalance.enable: each check elects every preferred leader that can lead."""
        if self.auto_rebalance:
            self.timer.schedule("leader-imbalance-check", self.imbalance_check_ms, self._rebalance)

    def _rebalance(self) -> None:
        elected = [tp for tp, error in self.elect_preferred().items() if error is None]
        if elected:
            log.info("auto leader rebalance: %d partitions back on their preferred leader", len(elected))
            self._tell("preferred_elected", None, partitions=elected)
        self.schedule_rebalance()

    def cancel(self) -> None:
        self.timer.cancel("leader-imbalance-check")
        for node_id in self.cluster.nodes:
            self.timer.cancel(self._fence_key(node_id))
