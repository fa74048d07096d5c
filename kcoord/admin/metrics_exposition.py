"""One kcoord's metrics (`kcoord.admin.metrics.Metrics`) in Prometheus' text format, for `/metrics`.

Imported at the first scrape only (see `Metrics.exposition`). Each server gets a registry of
its own; every family is built from the server's counts when scraped.
"""
from __future__ import annotations

import itertools

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from kcoord.admin.cluster_view import groups_coordinated, partitions_led
from kcoord.admin.metrics import LOOP_LAG_INTERVAL_S
from kcoord.coordinator.classic.state import GroupState
from kcoord.coordinator.consumer.group import ConsumerGroupState


def registry(metrics) -> CollectorRegistry:
    reg = CollectorRegistry()
    reg.register(_CountsCollector(metrics))
    if metrics.core is not None:
        reg.register(_GroupCollector(metrics.core))
        if metrics.cluster is not None:
            reg.register(_BrokerCollector(metrics.cluster, metrics.core))
    return reg


def render(reg: CollectorRegistry) -> bytes:
    return generate_latest(reg)


def _histogram(name: str, doc: str, labels: list[str], rows) -> HistogramMetricFamily:
    """rows: (label values, bounds, non-cumulative counts with +Inf last, sum, created time or None)."""
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, bounds, counts, total, created_at in rows:
        les = [floatToGoString(b) for b in bounds] + ["+Inf"]
        family.add_metric(values, list(zip(les, itertools.accumulate(counts))), total)
        if created_at is not None:
            family.add_sample(name + "_created", dict(zip(labels, values)), created_at)
    return family


def _counter(name: str, doc: str, label: str, counter) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=[label])
    for value, n in list(counter.values.items()):
        family.add_metric([value], n, created=counter.created[value])
    return family


class _CountsCollector:
    """What the server counted: rebalances, requests, commits, consumer group epochs, loop lag
    (in the order the families have always been listed)."""

    def __init__(self, metrics):
        self.m = metrics

    def collect(self):
        m = self.m
        yield _counter("kcoord_rebalances", "Rebalances started, by cause", "reason", m.rebalances)
        h = m.rebalance_seconds
        yield _histogram("kcoord_rebalance_duration_seconds", "From PreparingRebalance to Stable (or Empty)", [],
                         [([], h.bounds, h.counts, h.sum, h.created)])
        # kcoord_requests_total{api,version,error,broker} and kcoord_request_latency_seconds{api,broker}:
        # `broker` is the node id of the broker whose listener answered.
        total = CounterMetricFamily("kcoord_requests", "Requests answered, by api, version, error and broker",
                                    labels=["api", "version", "error", "broker"])
        for (api, version, error, broker), n in list(m.requests.counts.items()):
            total.add_metric([api, str(version), str(error), str(broker)], n)
        yield total
        bounds = m.requests.bounds
        yield _histogram("kcoord_request_latency_seconds", "Time to answer a request, by api and broker",
                         ["api", "broker"],
                         [([api, str(broker)], bounds, counts, seconds, None)
                          for (api, broker), (counts, seconds) in list(m.requests.latency.items())])
        commits = CounterMetricFamily("kcoord_offset_commits", "Offsets committed (partitions)")
        commits.add_metric([], m.offset_commits, created=m.offset_commits_created)
        yield commits
        yield _counter("kcoord_consumer_group_epoch_changes",
                       "Consumer group (KIP-848) epoch changes, by kind: group epoch bumps, target assignments, "
                       "member epoch bumps, revocations asked for", "kind", m.consumer_epochs)
        lag = m.loop_lag
        yield _histogram("kcoord_event_loop_lag_seconds",
                         f"How late the event loop ran a timer due every {LOOP_LAG_INTERVAL_S * 1000:.0f} ms", [],
                         [([], lag.bounds, lag.counts, lag.sum, lag.created)])
        yield GaugeMetricFamily("kcoord_event_loop_lag_max_seconds", "The worst event-loop lag since the start",
                                value=m.loop_lag_max)


def _groups_by_state(name: str, doc: str, states, groups) -> tuple[GaugeMetricFamily, int]:
    """A gauge of `groups` per state (every state but Dead, at 0 when none), and their members."""
    family = GaugeMetricFamily(name, doc, labels=["state"])
    counts = {str(s): 0 for s in states if s is not states.DEAD}
    members = 0
    for group in groups:
        counts[str(group.state)] = counts.get(str(group.state), 0) + 1
        members += group.size
    for state, n in counts.items():
        family.add_metric([state], n)
    return family, members


class _GroupCollector:
    def __init__(self, core):
        self.core = core

    def collect(self):
        classic, members = _groups_by_state("kcoord_groups", "Groups by state", GroupState,
                                            list(self.core.groups.values()))
        yield classic
        # Consumer groups (KIP-848) have states of their own (Assigning, Reconciling): a family of
        # their own, so the classic one keeps its label set.
        consumer, consumer_members = _groups_by_state("kcoord_consumer_groups", "Consumer groups (KIP-848) by state",
                                                      ConsumerGroupState, list(self.core.consumer_groups.values()))
        yield consumer
        yield GaugeMetricFamily("kcoord_group_members", "Members of all groups", value=members + consumer_members)


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
