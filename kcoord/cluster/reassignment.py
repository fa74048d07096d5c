"""The replicas a reassignment adds, copying their partition over time.

kcoord's brokers share one log per partition, so nothing is really copied: a replica being
added (`Partition.copied`: every replica of a partition being reassigned that is out of its ISR)
counts the partition's bytes it would have fetched, at kcoord's copy rate
(`--reassignment-copy-rate`, what Kafka's network and disks would allow), slowed by Kafka's
replication throttles where they apply:

- `follower.replication.throttled.rate` of the broker the replica is added on, when its topic's
  `follower.replication.throttled.replicas` lists it (`partition:broker`, or `*`);
- `leader.replication.throttled.rate` of the partition's leader, when the topic's
  `leader.replication.throttled.replicas` lists the leader's replica.

A throttle is a broker's budget, shared by the throttled replicas it sends or receives, as
Kafka's replication quotas are. Once a replica has copied what the partition holds (which may
still grow), it joins the ISR (Cluster.replica_caught_up), which may finish the reassignment.
Neither an added broker nor the leader copies while it does not serve.

Progress lives in memory: after a restart an unfinished copy starts over (docs/deviations.md).
"""
from __future__ import annotations

from typing import Callable

from kcoord.cluster.cluster import Cluster
from kcoord.log.configs import throttles

# How often the copies move on: the granularity of a reassignment's progress.
TICK_MS = 100
_TIMER_KEY = "reassignment-copy"
LEADER_RATE, FOLLOWER_RATE = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
LEADER_REPLICAS, FOLLOWER_REPLICAS = ("leader.replication.throttled.replicas",
                                      "follower.replication.throttled.replicas")


class ReplicaCopier:
    def __init__(self, cluster: Cluster, timer, copy_rate: int, broker_config: Callable[[int, str], str | None]):
        self.cluster = cluster
        self.timer = timer
        self.copy_rate = copy_rate          # bytes per second per replica, before the throttles
        self.broker_config = broker_config  # (node id, name) -> its dynamic value in force, or None

    def start(self) -> None:
        """Copy while any reassignment is in progress (called when one starts, and at start-up)."""
        if self.cluster.catching_up() and not self.timer.is_scheduled(_TIMER_KEY):
            self.timer.schedule(_TIMER_KEY, TICK_MS, self._tick)

    def cancel(self) -> None:
        self.timer.cancel(_TIMER_KEY)

    def _throttle(self, node_id: int, name: str) -> float | None:
        text = self.broker_config(node_id, name)
        return None if text is None else float(text)

    def rates(self) -> dict[tuple[str, int, int], float]:
        """Bytes per second of every copy under way, by (topic, partition, broker)."""
        copies = []
        for topic, partition in self.cluster.catching_up():
            configs = self.cluster.topics.topics[topic].configs
            for broker in list(partition.copied):
                if broker in partition.isr or not self.cluster.is_serving(broker) \
                        or not self.cluster.is_serving(partition.leader):
                    continue
                follower = throttles(configs, FOLLOWER_REPLICAS, partition.index, broker)
                leader = throttles(configs, LEADER_REPLICAS, partition.index, partition.leader)
                copies.append((topic, partition, broker, follower, leader))
        # How many throttled copies share each broker's budget.
        receiving: dict[int, int] = {}
        sending: dict[int, int] = {}
        for _, partition, broker, follower, leader in copies:
            if follower:
                receiving[broker] = receiving.get(broker, 0) + 1
            if leader:
                sending[partition.leader] = sending.get(partition.leader, 0) + 1
        out = {}
        for topic, partition, broker, follower, leader in copies:
            rate = float(self.copy_rate)
            budget = self._throttle(broker, FOLLOWER_RATE) if follower else None
            if budget is not None:
                rate = min(rate, budget / receiving[broker])
            budget = self._throttle(partition.leader, LEADER_RATE) if leader else None
            if budget is not None:
                rate = min(rate, budget / sending[partition.leader])
            out[(topic, partition.index, broker)] = rate
        return out

    def _tick(self) -> None:
        for (topic, index, broker), rate in self.rates().items():
            partition = self.cluster.topics.partition(topic, index)
            if broker not in partition.copied:
                continue  # an earlier copy this tick finished the partition's reassignment
            size = partition.size_bytes()
            partition.copied[broker] = min(size, partition.copied.get(broker, 0) + rate * TICK_MS / 1000)
            if partition.copied[broker] >= size:
                self.cluster.replica_caught_up(topic, partition, broker)
        self.start()
