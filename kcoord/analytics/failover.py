"""From one group's coordinator loads and unloads to its failover windows: the spans in which no
broker coordinated it (its clients got NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or no
connection at all).

Plain Python over one group at a time, like rebalances.py: Spark runs it per group. A window runs
from the group's unload (or, where the old coordinator logged none, from the new leader beginning
to load it) to the next load of the group. Two starts need evidence from outside the group, which
the job fills in afterwards on the driver (`refine_starts`):

- a kcoord journal's load with no unload before it is a restart (the process ended without a
  word): it starts at the journal's last record before the restart;
- a Kafka broker that was killed logs no unload, and the new leader only begins loading after the
  controller fenced it (broker.session.timeout.ms later): the window starts at the first time a
  follower's fetcher lost that broker (`Node N disconnected.`), if the logs show it.
"""
from __future__ import annotations

import bisect
from collections import defaultdict

from kcoord.analytics.events import COORDINATOR_LOADED, COORDINATOR_LOADING, COORDINATOR_UNLOADED

KINDS = (COORDINATOR_UNLOADED, COORDINATOR_LOADING, COORDINATOR_LOADED)

WINDOW_FIELDS = ["group_id", "partition", "source", "from_broker", "to_broker", "start_ms", "end_ms", "duration_ms",
                 "reason"]

# Kafka logs do not say why a broker gave a partition up: it stopped leading it (a controlled
# shutdown, a leader move, a preferred election).
REASON_UNLOADED = "unloaded: its broker no longer leads the partition"
REASON_NO_UNLOAD = "no unload logged: from when its broker was lost"
REASON_NO_UNLOAD_ELECTION = "no unload logged: from the new leader's election (when its broker was lost is not shown)"
REASON_RESTART = "loaded with no unload before it: a restart"
REASON_LOAD_ONLY = "loaded with no unload or election before it in the input"

# Within one millisecond an unload comes before the load it makes way for.
_ORDER = {COORDINATOR_UNLOADED: 0, COORDINATOR_LOADING: 1, COORDINATOR_LOADED: 2}


def windows_for_group(events) -> list[dict]:
    """The failover windows of one group, per source (a journal and a cluster's logs are two
    different coordinators). Rows read from __consumer_offsets say nothing of coordinators."""
    by_source = defaultdict(list)
    for e in events:
        if e["source"] in ("journal", "kafka-log"):
            by_source[e["source"]].append(e)
    out = []
    for source in sorted(by_source):
        out += _windows(by_source[source], source)
    return out


def _windows(events, source: str) -> list[dict]:
    events = sorted(events, key=lambda e: (e["time_ms"], _ORDER.get(e["kind"], -1)))
    out: list[dict] = []
    cur: dict | None = None
    holder: str | None = None       # the broker last seen coordinating the group
    seen_ms: int | None = None      # when it was last seen doing so
    for e in events:
        kind = e["kind"]
        if kind not in _ORDER:
            # A Kafka log line of the group shows which broker coordinates it; a journal's other
            # records are the whole kcoord's (`kcoord`), not a broker's.
            if source == "kafka-log" and cur is None:
                holder, seen_ms = e["broker"], e["time_ms"]
            continue
        if kind == COORDINATOR_UNLOADED:
            if cur is None:
                cur = _open(e, source, e["time_ms"], e["broker"], e.get("reason") or REASON_UNLOADED)
            continue
        if kind == COORDINATOR_LOADING:
            if cur is None:
                lost = holder if holder != e["broker"] else None
                cur = _open(e, source, e["time_ms"], lost, REASON_NO_UNLOAD_ELECTION)
                cur["_lost_after_ms"] = seen_ms if lost is not None else None
            continue
        if cur is None:  # loaded with no unload or election before it
            cur = _open(e, source, None, holder, REASON_RESTART if source == "journal" else REASON_LOAD_ONLY)
        cur.update(end_ms=e["time_ms"], to_broker=e["broker"])
        if e.get("partition") is not None:
            cur["partition"] = e["partition"]
        if cur["start_ms"] is not None:
            cur["duration_ms"] = cur["end_ms"] - cur["start_ms"]
        out.append(cur)
        cur = None
        holder, seen_ms = e["broker"], e["time_ms"]
    if cur is not None:  # still without a coordinator when the input ends
        out.append(cur)
    return out


def _open(e: dict, source: str, start_ms: int | None, from_broker: str | None, reason: str) -> dict:
    w = dict.fromkeys(WINDOW_FIELDS)
    w.update(group_id=e["group_id"], partition=e.get("partition"), source=source, from_broker=from_broker,
             start_ms=start_ms, reason=reason, _lost_after_ms=None)
    return w


def restart_loads(windows: list[dict]) -> tuple[list[int], set[tuple[str, int]]]:
    """The journal's loads with no unload before them: their times (sorted) and (group, time)s."""
    loads = {(w["group_id"], w["end_ms"]) for w in windows
             if w["start_ms"] is None and w["source"] == "journal" and w["end_ms"] is not None}
    return sorted({end for _, end in loads}), loads


def journal_times(rows, loads: set[tuple[str, int]]):
    """The times of the journal records among `rows` ((group, time, kind, source) tuples), less the
    restart's own loads (`loads`), which are no sign of the process before it."""
    return (t for g, t, kind, source in rows
            if source == "journal" and not (kind == COORDINATOR_LOADED and (g, t) in loads))


def merge(parts, pick) -> dict:
    """Dicts computed over parts of the input (Spark partitions) as one: `pick` (max, min) per key."""
    out: dict = {}
    for part in parts:
        for key, value in part.items():
            out[key] = pick(value, out[key]) if key in out else value
    return out


def last_records_before(ends: list[int], times) -> dict[int, int]:
    """For each restart time in `ends` (sorted), the last of `times` before it and after the restart
    before. `times` may be any part of the records (one Spark partition's): parts merge with max."""
    last: dict[int, int] = {}
    for t in times:
        i = bisect.bisect_right(ends, t)
        if i < len(ends) and last.get(ends[i], -1) < t:
            last[ends[i]] = t
    return last


def carry_forward(ends: list[int], last: dict[int, int]) -> dict[int, int]:
    """For each restart, the last record before it: the one in its own gap, else (two restarts with
    no record between them) the one before the restart before."""
    out: dict[int, int] = {}
    best = None
    for end in ends:
        best = last.get(end, best)
        if best is not None:
            out[end] = best
    return out


def first_losses(pending: list[tuple[str, int | None, int]], losses) -> dict[int, int]:
    """`pending`: (broker, after_ms, until_ms) per window; `losses`: (broker, time_ms) of
    BROKER_DISCONNECTED rows, any part of them (parts merge with min). For each window (by index),
    the first time its broker was lost after `after_ms` and not after `until_ms`."""
    by_broker: dict[str, list[tuple[int, int | None, int]]] = defaultdict(list)
    for i, (broker, after, until) in enumerate(pending):
        by_broker[broker].append((i, after, until))
    first: dict[int, int] = {}
    for broker, t in losses:
        for i, after, until in by_broker.get(broker, ()):
            if (after is None or t > after) and t <= until and t < first.get(i, t + 1):
                first[i] = t
    return first


def lost_pending(windows: list[dict]) -> list[tuple[int, tuple[str, int | None, int]]]:
    """The windows whose start may move back to when their broker was lost: (index, query)."""
    return [(i, (w["from_broker"], w["_lost_after_ms"], w["start_ms"])) for i, w in enumerate(windows)
            if w["reason"] == REASON_NO_UNLOAD_ELECTION and w["from_broker"] is not None]


def refine_starts(windows: list[dict], restart_starts: dict[int, int], lost_at: dict[int, int]) -> list[dict]:
    """The windows with the starts that need evidence from outside their group (module doc):
    `restart_starts` by restart time (carry_forward), `lost_at` by window index."""
    for i, w in enumerate(windows):
        w.pop("_lost_after_ms", None)
        if w["start_ms"] is None and w["source"] == "journal" and w["end_ms"] in restart_starts:
            w["start_ms"] = restart_starts[w["end_ms"]]
        elif i in lost_at:
            w["start_ms"], w["reason"] = lost_at[i], REASON_NO_UNLOAD
        if w["start_ms"] is not None and w["end_ms"] is not None:
            w["duration_ms"] = w["end_ms"] - w["start_ms"]
    return windows


def all_windows(events, losses) -> list[dict]:
    """Every failover window of `events` (dicts with FIELDS) in one process, as the Spark job
    computes them; `losses`: (broker, time_ms) of BROKER_DISCONNECTED rows."""
    events = list(events)
    by_group = defaultdict(list)
    for e in events:
        by_group[e["group_id"]].append(e)
    windows = [w for g in sorted(by_group) for w in windows_for_group(by_group[g])]
    ends, loads = restart_loads(windows)
    rows = ((e["group_id"], e["time_ms"], e["kind"], e["source"]) for e in events)
    restart_starts = carry_forward(ends, last_records_before(ends, journal_times(rows, loads)))
    pending = lost_pending(windows)
    lost = first_losses([q for _, q in pending], losses)
    return refine_starts(windows, restart_starts, {pending[j][0]: t for j, t in lost.items()})
