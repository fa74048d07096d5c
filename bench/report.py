"""Throughput of `kcoord report`'s pipeline on generated Kafka server.log lines: PySpark (local[*])
side by side with the same computation in plain single-process Python.

    python bench/report.py [--lines 1000000] [--brokers 4] [--master local[*]]
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kcoord.analytics import events as ev  # noqa: E402
from kcoord.analytics import rebalances as rb  # noqa: E402


def _ts(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def generate(out_dir: Path, lines: int, brokers: int, seed: int = 7) -> list[Path]:
    """Kafka 3.x-worded coordinator lines for many groups, with noise from other components."""
    rnd = random.Random(seed)
    files = [open(out_dir / f"broker-{b}-server.log", "w") for b in range(brokers)]
    t = int(datetime(2025, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)
    groups = [{"id": f"group-{i}", "gen": 0, "members": [], "b": i % brokers} for i in range(2000)]
    written = 0
    n = 0
    while written < lines:
        g = rnd.choice(groups)
        f = files[g["b"]]
        pre = f"INFO [GroupCoordinator {g['b']}]: "
        suf = " (kafka.coordinator.group.GroupCoordinator)\n"
        t += rnd.randint(1, 50)
        out = []
        roll = rnd.random()
        if not g["members"] or roll < 0.5:
            n += 1
            m = f"app-{n % 500}-{n:08x}-0000-4000-8000-{n:012x}"
            out.append(f"Dynamic member with unknown member id joins group {g['id']} in Stable state. "
                       f"Created a new member id {m} and request the member to rejoin with this id.")
            reason = f"Adding new member {m} with group instance id None; client reason: not provided"
            g["members"].append(m)
        elif roll < 0.75:
            m = g["members"].pop(rnd.randrange(len(g["members"])))
            out.append(f"Member {m} in group {g['id']} has failed, removing it from the group")
            reason = f"removing member {m} on heartbeat expiration"
        else:
            m = g["members"].pop(rnd.randrange(len(g["members"])))
            out.append(f"Member {m} has left group {g['id']} through explicit `LeaveGroup`; client reason: closing")
            reason = f"Removing member {m} on LeaveGroup; client reason: closing"
        times = [t, t + 1]
        out.append(f"Preparing to rebalance group {g['id']} in state PreparingRebalance with old generation "
                   f"{g['gen']} (__consumer_offsets-{g['b']}) (reason: {reason})")
        g["gen"] += 1
        dur = rnd.randint(50, 5000)
        if g["members"]:
            out.append(f"Stabilized group {g['id']} generation {g['gen']} (__consumer_offsets-{g['b']}) with "
                       f"{len(g['members'])} members")
            out.append(f"Assignment received from leader {g['members'][0]} for group {g['id']} for generation "
                       f"{g['gen']}. The group has {len(g['members'])} members, 0 of which are static.")
            times += [t + dur, t + dur + 5]
        else:
            out.append(f"Group {g['id']} with generation {g['gen']} is now empty (__consumer_offsets-{g['b']})")
            times += [t + 1]
        for ms, msg in zip(times, out):
            f.write(f"[{_ts(ms)}] {pre}{msg}{suf}")
        f.write(f"[{_ts(t)}] INFO [LocalLog partition=t-{g['b']}, dir=/k] Rolled new log segment "
                f"(kafka.log.LocalLog$)\n")
        written += len(out) + 1
    for f in files:
        f.close()
    return [Path(f.name) for f in files], written


def plain_python(paths) -> tuple[int, int, int]:
    skips: dict[str, int] = {}
    by_group = collections.defaultdict(list)
    n = 0
    for p in paths:
        with open(p) as fh:
            for row in ev.parse_lines(fh, "kafka-log", "b", skips):
                by_group[row["group_id"]].append(row)
                n += 1
    rebalances = []
    for events in by_group.values():
        rebalances += rb.rebalances_for_group(events)
    hourly = collections.Counter()
    for r in rebalances:
        for g, hour, ms in rb.hourly_slices(r):
            hourly[(g, hour)] += ms
    return n, len(rebalances), len(hourly)


def spark_pipeline(spark, paths) -> tuple[int, int, int]:
    from kcoord.analytics.job import compute

    events, rebalances, hourly, _ = compute(spark, [(str(p), "kafka-log") for p in paths])
    return events.count(), rebalances.count(), hourly.count()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        paths, lines = generate(Path(d), a.lines, a.brokers)
        size = sum(os.path.getsize(p) for p in paths)
        print(f"generated {lines} log lines ({size / 1e6:.0f} MB, {a.brokers} brokers) in "
              f"{time.perf_counter() - t0:.1f}s", flush=True)

        t0 = time.perf_counter()
        py = plain_python(paths)
        py_s = time.perf_counter() - t0

        from kcoord.analytics.job import spark_session
        t0 = time.perf_counter()
        spark = spark_session(a.master)
        start_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        sp = spark_pipeline(spark, paths)
        sp_s = time.perf_counter() - t0
        cores = spark.sparkContext.defaultParallelism
        spark.stop()
    assert sp == py, (sp, py)  # same events, rebalances and group-hours either way
    print(f"{'pipeline':34} {'events':>9} {'rebalances':>10} {'seconds':>8} {'events/s':>10}")
    print(f"{'plain Python (1 process)':34} {py[0]:>9} {py[1]:>10} {py_s:>8.1f} {py[0] / py_s:>10.0f}")
    print(f"{f'PySpark {a.master} ({cores} cores)':34} {sp[0]:>9} {sp[1]:>10} {sp_s:>8.1f} {sp[0] / sp_s:>10.0f}"
          f"   (+{start_s:.1f}s JVM/session start)")


if __name__ == "__main__":
    main()
