"""Drive the consumer group protocol (KIP-848) by hand: a manual clock, topics in memory, and a
test double for the server assignor until the real ones land (kcoord.coordinator.assignors.spec)."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

from kcoord.coordinator import CoordinatorConfig, EventBus, GroupCoordinator, ManualTimer
from kcoord.coordinator.requests import ConsumerHeartbeatRequest


class RoundRobin:
    """Deals every subscribed partition, in (topic name, partition) order, to the subscribed
    members in member id order: deterministic, and enough to see partitions move."""

    def __init__(self, name):
        self.name = name

    def assign(self, members, topics, subscription_type=None):
        out = {m: {} for m in members}
        ordered = sorted(topics.values(), key=lambda t: t.name)
        for topic in ordered:
            takers = sorted(m for m, spec in members.items() if topic.topic_id in spec.subscribed_topic_ids)
            for p in range(topic.partitions):
                if takers:
                    who = takers[p % len(takers)]
                    out[who][topic.topic_id] = out[who].get(topic.topic_id, frozenset()) | {p}
        return out


class Topics:
    def __init__(self, **counts):
        self.topics = {}
        for name, n in (counts or {"t": 4}).items():
            self.create(name, n)

    def create(self, name, n):
        self.topics[name] = SimpleNamespace(name=name, topic_id=uuid.uuid4(), partitions=[None] * n, internal=False)

    def grow(self, name, n):
        self.topics[name].partitions = [None] * n

    def delete(self, name):
        del self.topics[name]

    def id(self, name):
        return str(self.topics[name].topic_id)

    def partition_exists(self, topic, partition):
        t = self.topics.get(topic)
        return t is not None and 0 <= partition < len(t.partitions)


class ConsumerHarness:
    def __init__(self, topics: Topics | None = None, **config):
        config.setdefault("initial_rebalance_delay_ms", 0)
        # Most tests look at one step at a time: targets computed at once (Kafka's interval 0); the
        # assignment interval's own tests set it.
        config.setdefault("consumer_assignment_interval_ms", 0)
        self.timer = ManualTimer()
        self.events = []
        self.records = []
        bus = EventBus()
        bus.subscribe(self.events.append)
        self.topics = topics or Topics()
        self.c = GroupCoordinator(self.timer, CoordinatorConfig(**config), self.topics, bus,
                                  assignors=lambda: {"uniform": RoundRobin("uniform"), "range": RoundRobin("range")})
        self.c.record_sink = self

    def append(self, records):  # the record sink
        self.records.extend(records)

    def advance(self, ms):
        self.timer.advance(ms)

    def group(self, g="g"):
        return self.c.consumer_group(g)

    def hb(self, member_id="m1", epoch=0, group="g", topics=("t",), owned=(), rebalance=30000, version=1,
           instance=None, regex=None, assignor=None, rack=None, partial=False):
        """A heartbeat; `owned` as {topic name: [partitions]} or a list of (name, partitions).
        With `partial`, only the epoch and owned partitions go (what the client sends when steady)."""
        if isinstance(owned, dict):
            owned = list(owned.items())
        tps = None if owned is None else [(self.topics.id(n), list(ps)) for n, ps in owned]
        req = ConsumerHeartbeatRequest(
            group, member_id, epoch, instance_id=instance, rack_id=rack,
            rebalance_timeout_ms=-1 if partial else rebalance,
            subscribed_topic_names=None if partial or topics is None else list(topics),
            subscribed_topic_regex=None if partial else regex, server_assignor=assignor,
            topic_partitions=tps, client_id="client", client_host="/127.0.0.1", version=version)
        return self.c.consumer_group_heartbeat(req)

    def named(self, assignment):
        """An answer's assignment by topic name."""
        if assignment is None:
            return None
        names = {self.topics.id(n): n for n in self.topics.topics}
        return {names[t]: sorted(ps) for t, ps in assignment.items()}
