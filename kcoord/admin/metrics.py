"""Prometheus metrics for one kcoord, served at `/metrics` by the admin endpoint.

Each server counts in its own plain objects here, so several in-process servers (tests,
the pytest fixture) never share or collide on counters. Counters and histograms are fed
from the coordinator's events and from the request path (labelled with the broker that
answered); group and broker gauges are read from the coordinator and the cluster when
scraped. `kcoord.admin.metrics_exposition` turns it all into Prometheus' text format: it
alone imports prometheus_client, whose import (with http.server and email) is ~50 ms of a
server's start-up, so a server that is never scraped never pays it.
"""
from __future__ import annotations

import asyncio
import bisect
import time

from kcoord.coordinator.events import EventKind, GroupEvent, RebalanceCause

# prometheus_client's default buckets, which the request latency histogram has always had.
REQUEST_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


class Histogram:
    """Observations counted per bucket (not cumulative, the last bucket +Inf) and summed."""

    def __init__(self, bounds):
        self.bounds = list(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class LabelledCounter:
    """A counter per label value, each with the time it was first counted (Prometheus' `_created`)."""

    def __init__(self):
        self.values: dict[str, float] = {}
        self.created: dict[str, float] = {}

    def inc(self, label: str, amount: float = 1) -> None:
        if label not in self.values:
            self.values[label] = 0
            self.created[label] = time.time()
        self.values[label] += amount


class RequestCounts:
    """Requests answered by (api, version, error, broker) and their latency by (api, broker):
    plain dicts, because a prometheus_client child takes a lock per update, twice per request."""

    def __init__(self):
        self.counts: dict[tuple[str, int, int, int], int] = {}
        self.latency: dict[tuple[str, int], list] = {}   # (api, broker) -> [count per bucket (non-cumulative), sum]
        self.bounds = list(REQUEST_LATENCY_BUCKETS)

    def observe(self, api: str, version: int, error: int, seconds: float, broker: int = 0) -> None:
        key = (api, version, error, broker)
        self.counts[key] = self.counts.get(key, 0) + 1
        entry = self.latency.get((api, broker))
        if entry is None:
            entry = self.latency[(api, broker)] = [[0] * (len(self.bounds) + 1), 0.0]
        entry[0][bisect.bisect_left(self.bounds, seconds)] += 1
        entry[1] += seconds


# How often the event loop's lag is sampled.
LOOP_LAG_INTERVAL_S = 0.05

_CONSUMER_EPOCH_KINDS = (EventKind.GROUP_EPOCH_BUMPED, EventKind.TARGET_ASSIGNMENT_CHANGED,
                         EventKind.MEMBER_EPOCH_BUMPED, EventKind.PARTITIONS_REVOKING)


class Metrics:
    def __init__(self, core=None, cluster=None):
        self.core, self.cluster = core, cluster
        self.rebalances = LabelledCounter()          # by cause
        self.rebalance_seconds = Histogram((0.01, 0.05, 0.1, 0.5, 1, 3, 5, 10, 30, 60, 300))
        self.requests = RequestCounts()
        self.offset_commits = 0                     # partitions
        self.offset_commits_created = time.time()
        # The consumer group protocol (KIP-848) has no rebalances: its epochs move instead.
        self.consumer_epochs = LabelledCounter()     # by event kind
        self._rebalance_started: dict[str, int] = {}
        # How late the loop runs a timer due every LOOP_LAG_INTERVAL_S: the time one piece of
        # work (a request, a timer, a write to disk) kept every other connection waiting.
        self.loop_lag = Histogram((0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5))
        self.loop_lag_max = 0.0
        self._lag_handle: asyncio.TimerHandle | None = None
        self._registry = None   # prometheus_client's, built at the first scrape
        if core is not None:
            core.bus.subscribe(self.on_event)

    def on_event(self, e: GroupEvent) -> None:
        if e.kind is EventKind.OFFSETS_COMMITTED:   # by far the commonest
            self.offset_commits += e.details.get("count", 0)
        elif e.kind is EventKind.REBALANCE_STARTED:
            # The cause, not the free-text reason: member ids would explode label cardinality.
            self.rebalances.inc(str(e.cause or RebalanceCause.OTHER))
            self._rebalance_started.setdefault(e.group_id, e.time_ms)
        elif e.kind in (EventKind.STABLE, EventKind.EMPTY, EventKind.DEAD):
            started = self._rebalance_started.pop(e.group_id, None)
            if started is not None and e.kind is not EventKind.DEAD:
                self.rebalance_seconds.observe(max(e.time_ms - started, 0) / 1000)
        elif e.kind is EventKind.GROUP_CONVERTED and e.details.get("to") == "consumer":
            # An upgraded group's rebalance in progress never completes as a classic one.
            self._rebalance_started.pop(e.group_id, None)
        elif e.kind in _CONSUMER_EPOCH_KINDS:
            self.consumer_epochs.inc(str(e.kind))

    def observe_request(self, api: str, version: int, error: int, seconds: float, broker: int = 0) -> None:
        self.requests.observe(api, version, error, seconds, broker)

    def observe_loop_lag(self, lag: float) -> None:
        self.loop_lag.observe(lag)
        if lag > self.loop_lag_max:
            self.loop_lag_max = lag

    def watch_loop(self) -> None:
        """Start measuring the running loop's lag (until `stop_watching`)."""
        loop = asyncio.get_running_loop()

        def tick(due: float) -> None:
            now = loop.time()
            self.observe_loop_lag(max(now - due, 0.0))
            self._lag_handle = loop.call_at(now + LOOP_LAG_INTERVAL_S, tick, now + LOOP_LAG_INTERVAL_S)

        due = loop.time() + LOOP_LAG_INTERVAL_S
        self._lag_handle = loop.call_at(due, tick, due)

    def stop_watching(self) -> None:
        if self._lag_handle is not None:
            self._lag_handle.cancel()
            self._lag_handle = None

    def exposition(self) -> bytes:
        from kcoord.admin import metrics_exposition

        if self._registry is None:
            self._registry = metrics_exposition.registry(self)
        return metrics_exposition.render(self._registry)


def top_level_error(body: dict | None) -> int:
    """The error a response carries at its top level (0 when it has none or per-item errors only)."""
    if not isinstance(body, dict):
        return 0
    return int(body.get("error_code", 0) or 0)
