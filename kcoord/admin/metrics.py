"""Prometheus metrics for one kcoord, served at `/metrics` by the admin endpoint.

Each server has its own CollectorRegistry, so several in-process servers (tests,
the pytest fixture) never share or collide on counters. Group gauges are read
from the coordinator when scraped; counters and histograms are fed from the
coordinator's events and from the request path.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from kcoord.coordinator.consumer_group import ConsumerGroupState
from kcoord.coordinator.events import EventKind, GroupEvent, RebalanceCause
from kcoord.coordinator.state import GroupState

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
        for group in list(self.core.ctx.consumer_groups.values()):
            consumer_counts[str(group.state)] = consumer_counts.get(str(group.state), 0) + 1
            members += group.size
        for state, n in consumer_counts.items():
            consumer.add_metric([state], n)
        yield consumer
        yield GaugeMetricFamily("kcoord_group_members", "Members of all groups", value=members)


_CONSUMER_EPOCH_KINDS = (EventKind.GROUP_EPOCH_BUMPED, EventKind.TARGET_ASSIGNMENT_CHANGED,
                         EventKind.MEMBER_EPOCH_BUMPED, EventKind.PARTITIONS_REVOKING)


class Metrics:
    def __init__(self, core=None):
        self.registry = CollectorRegistry()
        self.rebalances = Counter("kcoord_rebalances", "Rebalances started, by cause",
                                  ["reason"], registry=self.registry)
        self.rebalance_seconds = Histogram(
            "kcoord_rebalance_duration_seconds", "From PreparingRebalance to Stable (or Empty)",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 3, 5, 10, 30, 60, 300), registry=self.registry)
        self.requests = Counter("kcoord_requests", "Requests answered, by api, version and error",
                                ["api", "version", "error"], registry=self.registry)
        self.request_seconds = Histogram("kcoord_request_latency_seconds", "Time to answer a request, by api",
                                         ["api"], registry=self.registry)
        self.offset_commits = Counter("kcoord_offset_commits", "Offsets committed (partitions)",
                                      registry=self.registry)
        # The consumer group protocol (KIP-848) has no rebalances: its epochs move instead.
        self.consumer_epochs = Counter("kcoord_consumer_group_epoch_changes",
                                       "Consumer group (KIP-848) epoch changes, by kind: group epoch bumps, "
                                       "target assignments, member epoch bumps, revocations asked for",
                                       ["kind"], registry=self.registry)
        self._rebalance_started: dict[str, int] = {}
        if core is not None:
            self.registry.register(_GroupCollector(core))
            core.bus.subscribe(self.on_event)

    def on_event(self, e: GroupEvent) -> None:
        if e.kind is EventKind.REBALANCE_STARTED:
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
        elif e.kind is EventKind.OFFSETS_COMMITTED:
            self.offset_commits.inc(e.details.get("count", 0))
        elif e.kind in _CONSUMER_EPOCH_KINDS:
            self.consumer_epochs.labels(str(e.kind)).inc()

    def observe_request(self, api: str, version: int, error: int, seconds: float) -> None:
        self.requests.labels(api, str(version), str(error)).inc()
        self.request_seconds.labels(api).observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def top_level_error(body: dict | None) -> int:
    """The error a response carries at its top level (0 when it has none or per-item errors only)."""
    if not isinstance(body, dict):
        return 0
    return int(body.get("error_code", 0) or 0)
