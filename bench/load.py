"""Sustained load: many raw members heartbeating at their interval, as real consumers do.

    .venv/bin/python bench/load.py [--members 10000] [--groups 1000] [--duration 600]
        [--heartbeat-ms 3000] [--session-ms 45000] [--bootstrap HOST:PORT]

Without --bootstrap a fresh `kcoord serve` is started (group.initial.rebalance.delay.ms
3000, Kafka's default). Each member has its own connection, speaks the protocol
through `wire/` (JoinGroup, SyncGroup), then sends one Heartbeat per interval, spread
evenly over the interval. Prints the sustained heartbeats/s, p50/p99 heartbeat
latency, the server's RSS at the start and end of the steady phase, and the
rebalances seen (heartbeats answered REBALANCE_IN_PROGRESS, or another error): 0 is
expected. The load generator shares the machine with the server.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rebalance import RawMember  # noqa: E402
from wire.errors import ErrorCode  # noqa: E402


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def start_server(delay_ms: int = 3000) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kcoord", "serve", "--listen", "127.0.0.1:0",
                             "--initial-rebalance-delay-ms", str(delay_ms),
                             "--log-level", "WARNING"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()
    if "listening on" not in line:
        raise RuntimeError(f"kcoord did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


class SharedMember(RawMember):
    """A member whose connection other members use too, one request at a time: the coordinator
    sees the same members, groups and heartbeats, over fewer sockets."""

    lock = None   # set once the member shares a connection (it joins over one of its own)
    # Joining 100,000 members in waves takes minutes, and the first waves send no heartbeat
    # meanwhile: a session long enough to outlast it (kcoord's maximum is 30 minutes).
    session_timeout_ms = 600_000

    async def call(self, api_key: int, version: int, body: dict):
        if self.lock is None:
            return await super().call(api_key, version, body)
        async with self.lock:
            return await super().call(api_key, version, body)


def cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(args, bootstrap: str, server_pid: int | None) -> dict:
    per_group = args.members // args.groups
    share = max(args.members_per_connection, 1)
    cls = SharedMember if share > 1 else RawMember
    members = [cls(bootstrap, f"load-{i // per_group}", i) for i in range(per_group * args.groups)]
    gate = asyncio.Semaphore(200)  # do not overflow the listen backlog

    async def connect(m):
        async with gate:
            await m.connect()
    rss_base = rss_mib(server_pid)   # the server before any member: what members add is measured from here
    t0 = time.monotonic()
    owners = members[::share]
    if share > 1:
        # A parked JoinGroup holds its connection (a broker answers a connection's requests in
        # order), so members join over connections of their own, a wave of groups at a time,
        # and share connections only for the heartbeats.
        wave = max(5000 // per_group, 1) * per_group
        for start in range(0, len(members), wave):
            batch = members[start:start + wave]
            await asyncio.gather(*(connect(m) for m in batch))
            results = await asyncio.gather(*(m.join_and_sync() for m in batch), return_exceptions=True)
            failed = [r for r in results if isinstance(r, Exception)]
            if failed:
                raise RuntimeError(f"{len(failed)} members could not join: {failed[0]!r}")
            for m in batch:
                m.writer.close()
        await asyncio.gather(*(connect(m) for m in owners))
        for i, m in enumerate(members):
            owner = owners[i // share]
            if owner is m:
                m.lock = asyncio.Lock()
            else:
                m.reader, m.writer, m.lock = owner.reader, owner.writer, owner.lock
        print(f"{len(members)} members joined over their own connections, now sharing {len(owners)}, "
              f"in {time.monotonic() - t0:.1f}s", flush=True)
    else:
        await asyncio.gather(*(connect(m) for m in owners))
        print(f"{len(owners)} connections for {len(members)} members in {time.monotonic() - t0:.1f}s", flush=True)
        t0 = time.monotonic()
        results = await asyncio.gather(*(m.join_and_sync() for m in members), return_exceptions=True)
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            raise RuntimeError(f"{len(failed)} members could not join: {failed[0]!r}")
    generations = {m.group: m.generation for m in members}
    print(f"{len(members)} members in {args.groups} groups joined and synced in "
          f"{time.monotonic() - t0:.1f}s", flush=True)

    latencies: list[float] = []
    rebalances = 0
    errors: dict[str, int] = {}
    interval = args.heartbeat_ms / 1000
    rss_start = rss_mib(server_pid)
    cpu_start = cpu_seconds(server_pid)
    start = time.monotonic()
    deadline = start + args.duration

    async def beat(m: RawMember, offset: float):
        nonlocal rebalances
        next_at = start + offset
        while True:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            if time.monotonic() >= deadline:
                return
            t = time.perf_counter()
            code = await m.heartbeat()
            latencies.append(time.perf_counter() - t)
            if code:
                name = ErrorCode.of(code).name
                errors[name] = errors.get(name, 0) + 1
                if code == ErrorCode.REBALANCE_IN_PROGRESS:
                    rebalances += 1
                    await m.join_and_sync()
            next_at += interval

    async def progress():
        while time.monotonic() < deadline:
            await asyncio.sleep(min(60, args.duration))
            n = len(latencies)
            print(f"  {time.monotonic() - start:5.0f}s  {n} heartbeats  RSS {rss_mib(server_pid) or 0:.1f} MiB", flush=True)

    rnd = random.Random(0)
    prog = asyncio.create_task(progress())
    await asyncio.gather(*(beat(m, rnd.random() * interval) for m in members))
    prog.cancel()
    elapsed = min(time.monotonic() - start, args.duration)  # heartbeats are only sent before the deadline
    rss_end = rss_mib(server_pid)
    cpu_end = cpu_seconds(server_pid)
    changed = sum(1 for m in members if generations[m.group] != m.generation)
    latencies.sort()
    return {
        "members": len(members), "groups": args.groups, "duration_s": round(elapsed, 1),
        "heartbeat_interval_ms": args.heartbeat_ms, "heartbeats": len(latencies),
        "heartbeats_per_s": round(len(latencies) / elapsed, 1),
        "expected_per_s": round(len(members) / interval, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        "server_rss_start_mib": rss_start, "server_rss_end_mib": rss_end,
        "rebalances": rebalances, "members_with_new_generation": changed, "errors": errors,
        "connections": len(owners),
        "server_cpu_percent": None if cpu_start is None else round((cpu_end - cpu_start) / elapsed * 100, 1),
        "server_rss_per_member_kib": None if rss_end is None or rss_base is None
        else round((rss_end - rss_base) * 1024 / len(members), 2),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=10000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=600, help="seconds of steady heartbeating (default 600)")
    ap.add_argument("--heartbeat-ms", type=int, default=3000, help="heartbeat.interval.ms (default 3000, Kafka's)")
    ap.add_argument("--initial-rebalance-delay-ms", type=int, default=3000,
                    help="the started server's group.initial.rebalance.delay.ms (default Kafka's 3000)")
    ap.add_argument("--members-per-connection", type=int, default=1,
                    help="members sharing one connection (a process here may hold 20,000 sockets; "
                         "100,000 members need sharing)")
    ap.add_argument("--bootstrap", default=None, help="an already running server (default: start kcoord)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.members + 1000)), hard))
    proc = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        proc, bootstrap = start_server(args.initial_rebalance_delay_ms)
    try:
        result = asyncio.run(run(args, bootstrap, proc.pid if proc else None))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"members {result['members']} in {result['groups']} groups, {result['duration_s']}s steady")
        print(f"heartbeats/s {result['heartbeats_per_s']} (expected {result['expected_per_s']})  "
              f"p50 {result['p50_ms']} ms  p99 {result['p99_ms']} ms")
        print(f"server RSS start {result['server_rss_start_mib']:.1f} MiB  end {result['server_rss_end_mib']:.1f} MiB  "
              f"({result['server_rss_per_member_kib']} KiB per member over the empty server)  "
              f"server CPU {result['server_cpu_percent']}% of a core  connections {result['connections']}")
        print(f"rebalances {result['rebalances']}  members whose generation changed "
              f"{result['members_with_new_generation']}  errors {result['errors']}")


if __name__ == "__main__":
    main()
