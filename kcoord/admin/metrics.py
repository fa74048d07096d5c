"""Prometheus metrics for one kcoord, served at `/metrics` by the admin endpoint.

Each server has its own CollectorRegistry, so several in-process servers (tests,
the pytest fixture) never share or collide on counters. Group and broker gauges
are read from the coordinator and the cluster when scraped; counters and
histograms are fed from the coordinator's events and from the request path
(labelled with the broker that answered).
"""
from __future__ import annotations

import asyncio
import bisect
import itertools

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from kcoord.admin.cluster_view import groups_coordinated, partitions_led
from kcoord.coordinator.consumer.group import ConsumerGroupState
from kcoord.coordinator.events import EventKind, GroupEvent, RebalanceCause
from kcoord.coordinator.classic.state import GroupState

class _RequestCollector:
    """kcoord_requests_total{api,version,error,broker} and kcoord_request_latency_seconds{api,broker}:
    `broker` is the node id of the broker whose listener answered."""

    BUCKETS = Histogram.DEFAULT_BUCKETS   # as the Histogram this replaces had them

    def __init__(self):
        self.counts: dict[tuple[str, int, int, int], int] = {}
        self.latency: dict[tuple[str, int], list] = {}   # (api, broker) -> [count per bucket (non-cumulative), sum]
        self._bounds = [b for b in self.BUCKETS if b != float("inf")]

    def observe(self, api: str, version: int, error: int, seconds: float, broker: int = 0) -> None:
        key = (api, version, error, broker)
        self.counts[key] = self.counts.get(key, 0) + 1
        entry = self.latency.get((api, broker))
        if entry is None:
            entry = self.latency[(api, broker)] = [[0] * (len(self._bounds) + 1), 0.0]
        entry[0][bisect.bisect_left(self._bounds, seconds)] += 1
        entry[1] += seconds

    def collect(self):
        total = CounterMetricFamily("kcoord_requests", "Requests answered, by api, version, error and broker",
                                    labels=["api", "version", "error", "broker"])
        for (api, version, error, broker), n in list(self.counts.items()):
            total.add_metric([api, str(version), str(error), str(broker)], n)
        yield total
        latency = HistogramMetricFamily("kcoord_request_latency_seconds",
                                        "Time to answer a request, by api and broker", labels=["api", "broker"])
        bounds = [floatToGoString(b) for b in self._bounds] + ["+Inf"]
        for (api, broker), (counts, total_seconds) in list(self.latency.items()):
            cumulative = list(itertools.accumulate(counts))
            latency.add_metric([api, str(broker)], list(zip(bounds, cumulative)), total_seconds)
        yield latency


class _BrokerCollector:
    """Per broker: kcoord_broker_running, kcoord_partitions_led, kcoord_groups_coordinated."""

    def __init__(self, cluster, core):
        self.cluster = cluster
        self.core = core

    def collect(self):
        nodes = list(self.cluster.nodes.values())
        running = GaugeMetricFamily("kcoord_broker_running", "1 while the broker's listener accepts connections",
                                    labels=["broker"])
        led = GaugeMetricFamily("kcoord_partitions_led", "Partitions (of every topic, internal ones too) the "
                                "broker leads", labels=["broker"])
        groups = GaugeMetricFamily("kcoord_groups_coordinated", "Groups the broker's coordinators hold",
                                   labels=["broker"])
        by_node = partitions_led(self.cluster.topics) if self.cluster.topics is not None else {}
        coordinated = groups_coordinated(self.core)
        for node in nodes:
            label = [str(node.node_id)]
            running.add_metric(label, 1 if node.running else 0)
            led.add_metric(label, sum(by_node.get(node.node_id, {}).values()))
            groups.add_metric(label, coordinated.get(node.node_id, 0))
        yield running
        yield led
        yield groups


# How often the event loop's lag is sampled.
LOOP_LAG_INTERVAL_S = 0.05


class _GroupCollector:
    def __init__(self, core):
        self.core = core

    def collect(self):
        by_state = GaugeMetricFamily("kcoord_groups", "Groups by state", labels=["state"])
        counts = {str(s): 0 for s in GroupState if s is not GroupState.DEAD}
        members = 0
        for group in list(self.core.groups.values()):
            counts[str(group.state)] = counts.get(str(group.state), 0) + 1
            members += group.size
        for state, n in counts.items():
            by_state.add_metric([state], n)
        yield by_state
        # Consumer groups (KIP-848) have states of their own (Assigning, Reconciling): a family of
        # their own, so the classic one keeps its label set.
        consumer = GaugeMetricFamily("kcoord_consumer_groups", "Consumer groups (KIP-848) by state",
                                     labels=["state"])
        consumer_counts = {str(s): 0 for s in ConsumerGroupState if s is not ConsumerGroupState.DEAD}
        for group in list(self.core.consumer_groups.values()):
            consumer_counts[str(group.state)] = consumer_counts.get(str(group.state), 0) + 1
            members += group.size
        for state, n in consumer_counts.items():
            consumer.add_metric([state], n)
        yield consumer
        yield GaugeMetricFamily("kcoord_group_members", "Members of all groups", value=members)


_CONSUMER_EPOCH_KINDS = (EventKind.GROUP_EPOCH_BUMPED, EventKind.TARGET_ASSIGNMENT_CHANGED,
                         EventKind.MEMBER_EPOCH_BUMPED, EventKind.PARTITIONS_REVOKING)


class Metrics:
    def __init__(self, core=None, cluster=None):
        self.registry = CollectorRegistry()
        self.rebalances = Counter("kcoord_rebalances", "Rebalances started, by cause",
                                  ["reason"], registry=self.registry)
        self.rebalance_seconds = Histogram(
            "kcoord_rebalance_duration_seconds", "From PreparingRebalance to Stable (or Empty)",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 3, 5, 10, 30, 60, 300), registry=self.registry)
        # Requests are counted in plain dicts and turned into metric families when scraped:
        # a prometheus_client child takes a lock per update, twice per request.
        self.requests = _RequestCollector()
        self.registry.register(self.requests)
        self.offset_commits = Counter("kcoord_offset_commits", "Offsets committed (partitions)",
                                      registry=self.registry)
        # The consumer group protocol (KIP-848) has no rebalances: its epochs move instead.
        self.consumer_epochs = Counter("kcoord_consumer_group_epoch_changes",
                                       "Consumer group (KIP-848) epoch changes, by kind: group epoch bumps, "
                                       "target assignments, member epoch bumps, revocations asked for",
                                       ["kind"], registry=self.registry)
        self._rebalance_started: dict[str, int] = {}
        # How late the loop runs a timer due every LOOP_LAG_INTERVAL_S: the time one piece of
        # work (a request, a timer, a write to disk) kept every other connection waiting.
        self.loop_lag = Histogram("kcoord_event_loop_lag_seconds",
                                  f"How late the event loop ran a timer due every {LOOP_LAG_INTERVAL_S * 1000:.0f} ms",
                                  buckets=(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5),
                                  registry=self.registry)
        self.loop_lag_max = Gauge("kcoord_event_loop_lag_max_seconds", "The worst event-loop lag since the start",
                                  registry=self.registry)
        self._lag_handle: asyncio.TimerHandle | None = None
        if core is not None:
            self.registry.register(_GroupCollector(core))
            core.bus.subscribe(self.on_event)
            if cluster is not None:
                self.registry.register(_BrokerCollector(cluster, core))

    def on_event(self, e: GroupEvent) -> None:
        if e.kind is EventKind.OFFSETS_COMMITTED:   # by far the commonest
            self.offset_commits.inc(e.details.get("count", 0))
        elif e.kind is EventKind.REBALANCE_STARTED:
            # The cause, not the free-text reason: member ids would explode label cardinality.
            self.rebalances.labels(e.cause or RebalanceCause.OTHER).inc()
            self._rebalance_started.setdefault(e.group_id, e.time_ms)
        elif e.kind in (EventKind.STABLE, EventKind.EMPTY, EventKind.DEAD):
            started = self._rebalance_started.pop(e.group_id, None)
            if started is not None and e.kind is not EventKind.DEAD:
                self.rebalance_seconds.observe(max(e.time_ms - started, 0) / 1000)
        elif e.kind is EventKind.GROUP_CONVERTED and e.details.get("to") == "consumer":
            # An upgraded group's rebalance in progress never completes as a classic one.
            self._rebalance_started.pop(e.group_id, None)
        elif e.kind in _CONSUMER_EPOCH_KINDS:
            self.consumer_epochs.labels(str(e.kind)).inc()

    def observe_request(self, api: str, version: int, error: int, seconds: float, broker: int = 0) -> None:
        self.requests.observe(api, version, error, seconds, broker)

    def watch_loop(self) -> None:
        """Start measuring the running loop's lag (until `stop_watching`)."""
        loop = asyncio.get_running_loop()
        worst = 0.0

        def tick(due: float) -> None:
            nonlocal worst
            now = loop.time()
            lag = max(now - due, 0.0)
            self.loop_lag.observe(lag)
            if lag > worst:
                worst = lag
                self.loop_lag_max.set(lag)
            self._lag_handle = loop.call_at(now + LOOP_LAG_INTERVAL_S, tick, now + LOOP_LAG_INTERVAL_S)

        due = loop.time() + LOOP_LAG_INTERVAL_S
        self._lag_handle = loop.call_at(due, tick, due)

    def stop_watching(self) -> None:
        if self._lag_handle is not None:
            self._lag_handle.cancel()
            self._lag_handle = None

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def top_level_error(body: dict | None) -> int:
    """The error a response carries at its top level (0 when it has none or per-item errors only)."""
    if not isinstance(body, dict):
        return 0
    return int(body.get("error_code", 0) or 0)
