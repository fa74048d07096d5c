"""The self-contained report.html: tables plus matplotlib PNGs embedded as data URIs."""
from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _when(ms) -> str:
    return "" if ms is None else datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _num(ms: int) -> float:
    import matplotlib.dates

    return matplotlib.dates.date2num(datetime.fromtimestamp(ms / 1000, timezone.utc))


def plots(summary: dict) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # finished, with a start (rebalances read from __consumer_offsets have none)
    rebs = [r for r in summary["rebalances"] if r["duration_ms"] is not None]
    out = {}
    # timeline: one row per group (the 20 groups with most stop-the-world time, then those whose
    # coordinator moved), a bar per rebalance, the failover windows shaded over them
    windows = (summary.get("failover") or {}).get("windows") or []
    top = [g["group_id"] for g in summary["top_groups"]][:20]
    top += sorted({w["group_id"] for w in windows} - set(top))[:max(0, 30 - len(top))]
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(top), 2) + 1.2))
    day_ms = 86_400_000
    last_ms = max([r["end_ms"] for r in rebs] + [w[k] for w in windows for k in ("start_ms", "end_ms")
                                                  if w[k] is not None], default=0)
    for i, g in enumerate(top):
        spans = [(_num(r["start_ms"]), max(r["duration_ms"], 1) / day_ms) for r in rebs if r["group_id"] == g]
        ax.broken_barh(spans, (i - 0.35, 0.7))
        # a tick per rebalance too: over days, a few seconds' bar is thinner than a pixel
        ax.plot([s for s, _ in spans], [i] * len(spans), "|", markersize=12, color="C1")
        mine = [w for w in windows if w["group_id"] == g]
        # still open at the end of the input: drawn up to the last thing the input shows
        gaps = [(_num(w["start_ms"]), max((w["end_ms"] or last_ms) - w["start_ms"], 1) / day_ms)
                for w in mine if w["start_ms"] is not None]
        ax.broken_barh(gaps, (i - 0.45, 0.9), facecolors="tab:red", alpha=0.35, hatch="//", edgecolor="tab:red")
        ax.plot([s for s, _ in gaps], [i] * len(gaps), "|", markersize=14, color="tab:red")
        # a load whose window's start the input does not show
        ends = [_num(w["end_ms"]) for w in mine if w["start_ms"] is None and w["end_ms"] is not None]
        ax.plot(ends, [i] * len(ends), "x", markersize=9, color="tab:red")
    ax.set_yticks(range(len(top)), top)
    ax.invert_yaxis()
    ax.xaxis_date()
    if windows:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color="C0", label="rebalance"),
                           Patch(facecolor="tab:red", alpha=0.35, hatch="//", edgecolor="tab:red",
                                 label="failover window (× : loaded, start not in the input)")],
                  loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title("Rebalances per group (bar = PreparingRebalance → Stable; red = failover window: no coordinator)")
    fig.autofmt_xdate()
    txns = (summary.get("transactions") or {}).get("transactions") or []
    if txns:
        txn_fig, txn_ax = transactions_timeline(txns)
        if rebs or windows:
            # one time axis for both, so a transaction lines up with the generations beside it
            (a0, a1), (b0, b1) = ax.get_xlim(), txn_ax.get_xlim()
            for each in (ax, txn_ax):
                each.set_xlim(min(a0, b0), max(a1, b1))
        out["transactions"] = _png(txn_fig)
    out["timeline"] = _png(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    durations = [r["duration_ms"] / 1000 for r in rebs]
    ax.hist(durations or [0], bins=40)
    ax.set_xlabel("rebalance duration (s)")
    ax.set_ylabel("rebalances")
    ax.set_title("Duration distribution")
    out["durations"] = _png(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    causes = sorted(summary["causes"].items(), key=lambda kv: -kv[1])
    ax.barh([c for c, _ in causes] or ["none"], [n for _, n in causes] or [0])
    ax.invert_yaxis()
    ax.set_xlabel("rebalances")
    ax.set_title("Causes")
    out["causes"] = _png(fig)
    return out


TXN_COLOURS = {"committed": "tab:green", "aborted": "tab:orange", "timed_out": "tab:red", "open": "tab:gray"}


def transactions_timeline(txns: list[dict], max_ids: int = 20):
    """One row per transactional id (the `max_ids` with most transactions), a bar per transaction
    from its start to its markers, coloured by outcome; an open one runs to the input's end."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    counts: dict[str, int] = {}
    for t in txns:
        counts[t["transactional_id"]] = counts.get(t["transactional_id"], 0) + 1
    ids = sorted(counts, key=lambda i: (-counts[i], i))[:max_ids]
    last_ms = max(t["end_ms"] or t["start_ms"] for t in txns)
    day_ms = 86_400_000
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(ids), 2) + 1.2))
    for i, tid in enumerate(ids):
        for outcome, colour in TXN_COLOURS.items():
            mine = [t for t in txns if t["transactional_id"] == tid and t["outcome"] == outcome]
            spans = [(_num(t["start_ms"]), max((t["end_ms"] or last_ms) - t["start_ms"], 1) / day_ms) for t in mine]
            ax.broken_barh(spans, (i - 0.35, 0.7), facecolors=colour)
            # a tick per transaction: a few milliseconds' bar is thinner than a pixel
            ax.plot([s for s, _ in spans], [i] * len(spans), "|", markersize=12, color=colour)
    ax.set_yticks(range(len(ids)), ids)
    ax.invert_yaxis()
    ax.xaxis_date()
    ax.legend(handles=[Patch(color=c, label=o.replace("_", " ")) for o, c in TXN_COLOURS.items()],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title("Transactions per transactional id (bar = first partition added → markers written)")
    fig.autofmt_xdate()
    return fig, ax


def _table(rows: list[dict], cols: list[str], fmt=None) -> str:
    fmt = fmt or {}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(fmt.get(c, lambda v: v)(r.get(c))))}</td>" for c in cols)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def connect_section(summary: dict, max_groups: int = 10) -> str:
    """The Connect view: per Connect group, a timeline of which worker holds which task, its
    rebalances (rounds, tasks moved and revoked, unassigned time, scheduled delays) and rounds."""
    from kcoord.analytics.connect import rebalance_summary, timeline_figure

    connect = summary.get("connect") or {}
    rounds, holdings = connect.get("rounds") or [], connect.get("holdings") or []
    if not rounds:
        return ""
    groups = sorted({r["group_id"] for r in rounds})
    parts = [f"<h2>Kafka Connect groups</h2><p>{len(groups)} Connect groups, {len(rounds)} rounds. A rebalance "
             "runs from a change until a round revokes nothing, asks nobody to wait and leaves no task "
             "unassigned.</p>"]
    ms = {"start_ms": _when, "end_ms": _when, "time_ms": _when}
    lists = {f: (lambda v: ",".join(v or []) or "-") for f in
             ("tasks_moved", "tasks_revoked", "connectors_revoked", "tasks_unassigned")}
    for g in groups[:max_groups]:
        rs = [r for r in rounds if r["group_id"] == g]
        parts.append(f"<h3>{html.escape(g)}</h3>")
        fig = timeline_figure(holdings, rs, g)
        if fig is not None:
            parts.append(f'<img src="{_png(fig)}" alt="Connect timeline of {html.escape(g)}">')
        parts.append(_table(rebalance_summary(rs), ["rebalance_seq", "start_ms", "end_ms", "generations", "rounds",
                                                    "tasks_moved", "tasks_revoked", "unassigned_ms",
                                                    "max_delay_ms", "settled"], ms))
        parts.append(_table(rs[-200:], ["generation", "time_ms", "rebalance_seq", "round", "workers", "tasks_held",
                                        "tasks_assigned", "tasks_moved", "tasks_revoked", "tasks_unassigned",
                                        "unassigned_ms", "delay_ms", "settled"], {**ms, **lists}))
    return "\n".join(parts)


def _failover_counts(failover: dict) -> str:
    n, longest = failover["count"], failover["longest_ms"]
    return f"{n} failover windows" + (f" (longest {longest} ms)" if longest is not None else "")


def failover_section(failover: dict, shown: int = 50) -> str:
    """The failover windows: when each group had no coordinator, longest first (open ones, whose
    end the input does not show, before all)."""
    windows = failover["windows"]
    if not windows:
        return ""
    longest = sorted(windows, key=lambda w: (w["end_ms"] is not None, -(w["duration_ms"] or 0)))[:shown]
    cols = ["group_id", "partition", "source", "from_broker", "to_broker", "start_ms", "end_ms", "duration_ms",
            "reason"]
    fmt = {c: (lambda v: "" if v is None else v) for c in cols}
    fmt.update(start_ms=_when, end_ms=_when)
    return (f"<h2>Failover windows</h2><p>{html.escape(_failover_counts(failover))}: from a group's coordinator "
            "going away (its unload, or when its broker was lost) to the next broker loading it; its members got "
            "NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or no connection meanwhile. An empty start: the input "
            "does not show it; an empty end: still without a coordinator when the input ends.</p>"
            + _table(longest, cols, fmt))


def _transaction_counts(transactions: dict) -> str:
    o = transactions["outcomes"]
    return (f"{transactions['count']} transactions ({o['committed']} committed, {o['aborted']} aborted, "
            f"{o['timed_out']} timed out, {o['open']} open)")


def streams_section(groups: list[dict]) -> str:
    """Streams groups (KIP-1071): no rebalances, their epochs instead."""
    if not groups:
        return ""
    return ("<h2>Streams groups</h2><p>Streams groups have no rebalances: their epochs move instead "
            "(each member's tasks over time are in the events table's <code>tasks</code>).</p>"
            + _table(groups, ["group_id", "group_epoch", "assignment_epoch", "members", "members_seen", "revocations",
                              "sources"]))


def share_section(groups: list[dict], minutely: list[dict], shown: int = 200) -> str:
    """Share groups (KIP-932): what happened to their records, and their deliveries over time."""
    if not groups:
        return ""
    return ("<h2>Share groups</h2><p>Records delivered (redeliveries: at a delivery count above 1), "
            "acknowledged, released by a closed share session, whose locks expired, and archived at the "
            "delivery count limit.</p>"
            + _table(groups, ["group_id", "members_seen", "deliveries", "redeliveries", "max_delivery_count",
                              "accepted", "released", "rejected", "renewed", "session_releases", "lock_expiries",
                              "archived"])
            + f"<h3>Deliveries per minute</h3><p>The first {shown} group-minutes.</p>"
            + _table(minutely[:shown], ["group_id", "minute_ms", "deliveries", "redeliveries"], {"minute_ms": _when}))


def transactions_section(transactions: dict, plot: str | None, shown: int = 50) -> str:
    """The transactions: their timeline beside the groups', per transactional id how they ended,
    and the open ones and the longest."""
    txns = transactions["transactions"]
    if not txns:
        return ""
    longest = sorted(txns, key=lambda t: (t["end_ms"] is not None, -(t["duration_ms"] or 0)))[:shown]
    cols = ["transactional_id", "seq", "producer_id", "producer_epoch", "start_ms", "end_ms", "duration_ms",
            "outcome", "partitions"]
    fmt = {c: (lambda v: "" if v is None else v) for c in cols}
    fmt.update(start_ms=_when, end_ms=_when)
    per_id = ["transactional_id", "opened", "committed", "aborted", "timed_out", "open", "total_ms", "max_ms"]
    return (f"<h2>Transactions</h2><p>{html.escape(_transaction_counts(transactions))}: from a transaction's first "
            "partition to its markers being written; timed out: aborted by the coordinator for its "
            "transaction.timeout.ms; open: not ended when the input ends (empty end).</p>"
            + (f'<img src="{plot}" alt="transactions">' if plot else "")
            + "<h3>Per transactional id</h3>" + _table(transactions["per_id"], per_id,
                                                       {c: (lambda v: "" if v is None else v) for c in per_id})
            + "<h3>Open and longest transactions</h3>" + _table(longest, cols, fmt))


def write_report(summary: dict, path) -> None:
    p = plots(summary)
    ms = {"start_ms": _when, "end_ms": _when, "hour_ms": _when}
    slow = sorted((r for r in summary["rebalances"] if r["duration_ms"] is not None),
                  key=lambda r: -r["duration_ms"])[:30]
    skips = summary.get("skips") or {}
    failover = summary.get("failover") or {"count": 0, "longest_ms": None, "windows": []}
    transactions = summary.get("transactions") or {"count": 0, "transactions": []}
    txn_counts = f", {_transaction_counts(transactions)}" if transactions["count"] else ""
    doc = f"""<!doctype html><html><head><meta charset="utf-8"><title>kcoord rebalance report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin-bottom:1.5em}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:13px}}th{{background:#eee}}</style></head><body>
<h1>Rebalance report</h1>
<p>{summary['inputs']} input files, {summary['events']} events, {summary['groups']} groups,
{summary['rebalance_count']} rebalances, {_failover_counts(failover)}{html.escape(txn_counts)}.
Skipped lines: {html.escape(str(sum(skips.values())))} {html.escape(str(skips)) if skips else ''}.</p>
<h2>Timeline</h2><img src="{p['timeline']}" alt="timeline">
{transactions_section(transactions, p.get('transactions'))}
{streams_section(summary.get('streams_groups') or [])}
{share_section(summary.get('share_groups') or [], summary.get('share_minutely') or [])}
<h2>Durations</h2><img src="{p['durations']}" alt="durations">
<h2>Causes</h2><img src="{p['causes']}" alt="causes">
<h2>Top groups by rebalance time</h2>
{_table(summary['top_groups'], ['group_id', 'rebalances', 'total_ms', 'max_ms'])}
<h2>Members that caused most rebalances</h2>
{_table(summary['top_members'], ['trigger_client', 'cause', 'rebalances'])}
<h2>Static-membership rejoins that avoided a rebalance</h2>
{_table(summary['static_avoided'], ['group_id', 'rejoins'])}
<h2>Worst hours (stop-the-world per group per hour)</h2>
{_table(summary['hourly_top'], ['group_id', 'hour_ms', 'rebalances', 'stop_the_world_ms', 'offset_commits',
                                 'static_rejoins_without_rebalance'], ms)}
{failover_section(failover)}
<h2>Longest rebalances</h2>
{_table(slow, ['group_id', 'start_ms', 'duration_ms', 'cause', 'trigger_member', 'generation_from', 'generation_to',
               'members_affected', 'outcome'], ms)}
{connect_section(summary)}
</body></html>"""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(doc)
