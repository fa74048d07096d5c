"""The report's Connect view: rounds of Kafka Connect groups from the journal.

The journal's `assignment_received` record of a group of protocol type "connect" carries
`details.connect`: each member's decoded assignment (kcoord.connect_protocol.journal_summary),
with the worker's url and what it holds after the round. Plain Python, run per group on
Spark like `rebalances.rebalances_for_group`, and by tests without Spark.

A *round* is one sync (generation). A *rebalance* is the run of rounds from a change until
the group settles: a round that revokes nothing, asks nobody to wait (delay 0) and leaves no
known task unassigned. Incremental cooperative rebalances take several rounds (revoke, then
assign; or wait out scheduled.rebalance.max.delay.ms, then reassign); eager ones take one.

A task is *unassigned* from the moment the journal knows its worker stopped holding it (the
member left or expired, or a round left it out or revoked it) until a round gives it to a
worker; a killed worker stops before its session expires, which the journal cannot see.
"""
from __future__ import annotations

import json
import re

ROUND_FIELDS = ["group_id", "rebalance_seq", "round", "generation", "time_ms", "protocol", "leader", "workers",
                "tasks_held", "tasks_assigned", "tasks_moved", "tasks_revoked", "connectors_revoked",
                "tasks_unassigned", "unassigned_ms", "delay_ms", "settled"]
LIST_FIELDS = {"tasks_moved", "tasks_revoked", "connectors_revoked", "tasks_unassigned"}
HOLDING_FIELDS = ["group_id", "worker", "task", "from_ms", "to_ms"]


def parse_line(line: str):
    """(group_id, record) for a journal line the Connect view needs, else None."""
    if '"connect' not in line:  # cheap: connect groups' records only
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("group_id"), str):
        return None
    kind = rec.get("kind")
    if kind == "assignment_received" and isinstance((rec.get("details") or {}).get("connect"), dict):
        return rec["group_id"], rec
    if kind in ("member_left", "member_expired", "member_replaced"):
        return rec["group_id"], rec
    return None


_MEMBER = re.compile(r"^connect-(.+:\d+)-[0-9a-f-]{36}$")


def _worker(member_id: str, summary: dict | None) -> str:
    """The worker's host:port: from its url, else from Connect's member id (connect-HOST:PORT-UUID)."""
    url = (summary or {}).get("url")
    if url:
        return url.removeprefix("http://").removeprefix("https://").rstrip("/")
    m = _MEMBER.match(member_id)
    return m.group(1) if m else member_id


def _held(summary: dict, before: set) -> set:
    if "held_tasks" in summary:
        return set(summary["held_tasks"] or [])
    if not summary.get("version"):
        return set(summary.get("tasks") or [])  # eager: the whole set
    return before - set(summary.get("revoked_tasks") or []) | set(summary.get("tasks") or [])


def rounds_for_group(records) -> tuple[list[dict], list[dict]]:
    """(round rows, holding rows) of one group from its journal records (any order)."""
    records = sorted(records, key=lambda r: (r["time_ms"], 0 if r["kind"] != "assignment_received" else 1))
    if not any(r["kind"] == "assignment_received" for r in records):
        return [], []
    group = records[0]["group_id"]
    holder: dict[str, str] = {}          # task -> worker holding it now
    member_tasks: dict[str, set] = {}    # member id -> tasks it holds now
    last_holder: dict[str, str] = {}     # task -> the worker that held it last
    dropped_at: dict[str, int] = {}      # task -> when it lost its worker
    since: dict[tuple[str, str], int] = {}  # (worker, task) -> holding since
    known: set[str] = set()
    rounds, holdings = [], []
    seq, in_rebalance, n = 0, False, 0

    def drop(task: str, worker: str, at: int) -> None:
        holder.pop(task, None)
        dropped_at.setdefault(task, at)
        start = since.pop((worker, task), None)
        if start is not None:
            holdings.append({"group_id": group, "worker": worker, "task": task, "from_ms": start, "to_ms": at})

    for rec in records:
        at = rec["time_ms"]
        if rec["kind"] != "assignment_received":
            for task in sorted(member_tasks.pop(rec.get("member_id"), set())):
                if task in holder:
                    drop(task, holder[task], at)
            continue
        assignments = rec["details"]["connect"]
        now = {mid: _held(s, member_tasks.get(mid, set())) for mid, s in assignments.items()}
        workers = {mid: _worker(mid, s) for mid, s in assignments.items()}
        revoked = sorted({t for s in assignments.values() for t in s.get("revoked_tasks") or []})
        revoked_conns = sorted({c for s in assignments.values() for c in s.get("revoked_connectors") or []})
        # Members that are not in this round hold nothing any more.
        for mid in list(member_tasks):
            if mid not in assignments:
                for task in sorted(member_tasks.pop(mid)):
                    if task in holder:
                        drop(task, holder[task], at)
        new_holder = {t: workers[mid] for mid, ts in now.items() for t in ts}
        for task, worker in list(holder.items()):
            if new_holder.get(task) != worker:
                drop(task, worker, at)
        moved, unassigned_ms, assigned = [], 0, 0
        for task, worker in sorted(new_holder.items()):
            if holder.get(task) == worker:
                continue
            assigned += 1
            if task in last_holder and last_holder[task] != worker:
                moved.append(task)
            if task in dropped_at:
                unassigned_ms += at - dropped_at.pop(task)
            holder[task] = worker
            last_holder[task] = worker
            since[(worker, task)] = at
        member_tasks = {mid: set(ts) for mid, ts in now.items()}
        known |= set(new_holder)
        unassigned = sorted(known - set(holder))
        delay = max((int(s.get("delay") or 0) for s in assignments.values()), default=0)
        settled = not revoked and not revoked_conns and delay == 0 and not unassigned
        if not in_rebalance:
            seq += 1
            n = 0
        n += 1
        in_rebalance = not settled
        leader = next((s.get("leader") for s in assignments.values() if s.get("leader")), None)
        rounds.append({"group_id": group, "rebalance_seq": seq, "round": n, "generation": rec.get("generation"),
                       "time_ms": at, "protocol": rec.get("protocol"), "leader": leader,
                       "workers": len(assignments), "tasks_held": len(holder), "tasks_assigned": assigned,
                       "tasks_moved": moved, "tasks_revoked": revoked, "connectors_revoked": revoked_conns,
                       "tasks_unassigned": unassigned, "unassigned_ms": unassigned_ms, "delay_ms": delay,
                       "settled": settled})
    for (worker, task), start in sorted(since.items()):
        holdings.append({"group_id": group, "worker": worker, "task": task, "from_ms": start, "to_ms": None})
    return rounds, holdings


def rebalance_summary(rounds: list[dict]) -> list[dict]:
    """One row per (group, rebalance): its rounds, moved and revoked task counts, unassigned
    time and the longest scheduled delay."""
    out: dict[tuple[str, int], dict] = {}
    for r in rounds:
        key = (r["group_id"], r["rebalance_seq"])
        s = out.setdefault(key, {"group_id": r["group_id"], "rebalance_seq": r["rebalance_seq"],
                                 "start_ms": r["time_ms"], "end_ms": r["time_ms"], "rounds": 0, "tasks_moved": 0,
                                 "tasks_revoked": 0, "unassigned_ms": 0, "max_delay_ms": 0, "settled": False,
                                 "generations": ""})
        s["end_ms"] = r["time_ms"]
        s["rounds"] += 1
        s["tasks_moved"] += len(r["tasks_moved"])
        s["tasks_revoked"] += len(r["tasks_revoked"])
        s["unassigned_ms"] += r["unassigned_ms"]
        s["max_delay_ms"] = max(s["max_delay_ms"], r["delay_ms"])
        s["settled"] = r["settled"]
        s["generations"] = f"{s['generations']},{r['generation']}".lstrip(",")
    return sorted(out.values(), key=lambda s: (s["group_id"], s["rebalance_seq"]))


def timeline_figure(holdings: list[dict], rounds: list[dict], group: str, end_ms: int | None = None,
                    title: str | None = None):
    """A matplotlib figure: one row per task, a bar per stretch a worker held it (a colour per
    worker), a dotted line per round (red: a round that asked workers to wait)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hs = [h for h in holdings if h["group_id"] == group]
    rs = [r for r in rounds if r["group_id"] == group]
    if not hs and not rs:
        return None
    t0 = min([h["from_ms"] for h in hs] + [r["time_ms"] for r in rs])
    t1 = end_ms or max([h["to_ms"] or h["from_ms"] for h in hs] + [r["time_ms"] for r in rs]) + 2000
    tasks = sorted({h["task"] for h in hs}, key=_task_key)
    workers = sorted({h["worker"] for h in hs})
    colours = {w: f"C{i % 10}" for i, w in enumerate(workers)}
    fig, ax = plt.subplots(figsize=(9, 0.32 * max(len(tasks), 3) + 1.4))
    for h in hs:
        start = (h["from_ms"] - t0) / 1000
        stop = ((h["to_ms"] or t1) - t0) / 1000
        ax.broken_barh([(start, max(stop - start, 0.05))], (tasks.index(h["task"]) - 0.4, 0.8),
                       color=colours[h["worker"]])
    for r in rs:
        ax.axvline((r["time_ms"] - t0) / 1000, color="red" if r["delay_ms"] else "grey", linestyle=":", linewidth=0.8)
    ax.set_yticks(range(len(tasks)), tasks)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (dotted: a round; red: workers told to wait)")
    ax.set_title(title or f"{group}: which worker runs which task")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=colours[w], label=w) for w in workers], loc="upper left",
              bbox_to_anchor=(1.01, 1), fontsize=8)
    return fig


def _task_key(task: str):
    name, _, n = task.rpartition("-")
    return (name, int(n)) if n.isdigit() else (task, -1)
