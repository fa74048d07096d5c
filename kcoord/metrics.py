"""Prometheus metrics for one kcoord, served at `/metrics` by the admin endpoint.

Each server has its own CollectorRegistry, so several in-process servers (tests,
the pytest fixture) never share or collide on counters. Group gauges are read
from the coordinator when scraped; counters and histograms are fed from the
coordinator's events and from the request path.
"""
from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from kcoord.coordinator import events as E
from kcoord.coordinator.state import GroupState

# Free-text rebalance reasons become a few label values (member ids would explode
# cardinality). Rules read the coordinator's own wording, never the client's reason.
_REASON_CATEGORIES = [
    ("static_replacement", re.compile(r"static member", re.I)),
    ("leader_rejoin", re.compile(r"^leader .* re-joining", re.I)),
    ("metadata_changed", re.compile(r"^Updating metadata", re.I)),
    ("member_joined", re.compile(r"^Adding new member", re.I)),
    ("member_failed", re.compile(r"heartbeat expiration|pending sync request expiration", re.I)),
    ("member_left", re.compile(r"on LeaveGroup", re.I)),
    ("coordinator_restart", re.compile(r"coordinator restart", re.I)),
]


def reason_category(reason: str | None) -> str:
    own = (reason or "").split("; client reason:", 1)[0]
    for name, pattern in _REASON_CATEGORIES:
        if pattern.search(own):
            return name
    return "other"


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
        yield GaugeMetricFamily("kcoord_group_members", "Members of all groups", value=members)


class Metrics:
    def __init__(self, core=None):
        self.registry = CollectorRegistry()
        self.rebalances = Counter("kcoord_rebalances", "Rebalances started, by reason category",
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
        self._rebalance_started: dict[str, int] = {}
        if core is not None:
            self.registry.register(_GroupCollector(core))
            core.bus.subscribe(self.on_event)

    def on_event(self, e: E.GroupEvent) -> None:
        if e.kind == E.REBALANCE_STARTED:
            self.rebalances.labels(reason_category(e.reason)).inc()
            self._rebalance_started.setdefault(e.group_id, e.time_ms)
        elif e.kind in (E.STABLE, E.EMPTY, E.DEAD):
            started = self._rebalance_started.pop(e.group_id, None)
            if started is not None and e.kind != E.DEAD:
                self.rebalance_seconds.observe(max(e.time_ms - started, 0) / 1000)
        elif e.kind == E.OFFSETS_COMMITTED:
            self.offset_commits.inc(e.details.get("count", 0))

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
