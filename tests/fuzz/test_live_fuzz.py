"""100,000+ mutated frames against a live kcoord process while a real consumer group
(kafka-python, in its own process) keeps heartbeating: the server must not die, the
group must stay Stable in the same generation, a control connection must keep being
answered, no request may hit an internal error, and the server's memory must stay
bounded.

The server runs with auto-create off: a fuzzed Metadata request naming a random
topic would otherwise (rightly, as in Kafka) create it, and state growth would hide
a leak. Mutated names come from a small pool for the same reason (fuzz/corpus.py).
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from fuzz.corpus import seed_requests
from fuzz.live import blast
from wire import codec

ROOT = Path(__file__).resolve().parents[2]
FRAMES = 100_000


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def _call(reader, writer, api_key, version, body, correlation_id):
    payload = codec.encode_request(api_key, version, {"correlation_id": correlation_id, "client_id": "watch"}, body)
    writer.write(len(payload).to_bytes(4, "big") + payload)
    await writer.drain()
    size = int.from_bytes(await reader.readexactly(4), "big")
    return codec.decode_response(api_key, version, await reader.readexactly(size))[1]


async def describe(port, group):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        resp = await asyncio.wait_for(_call(reader, writer, 15, 0, {"groups": [group]}, 1), 30)
        g = resp.groups[0]
        return g.group_state, sorted(m.member_id for m in g.members)
    finally:
        writer.close()


async def watchdog(port, group, stop: asyncio.Event, log: list):
    """One long-lived connection asking for the guarded group every 200 ms."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    n = 0
    try:
        while not stop.is_set():
            n += 1
            resp = await asyncio.wait_for(_call(reader, writer, 15, 0, {"groups": [group]}, n), 30)
            g = resp.groups[0]
            log.append((g.group_state, sorted(m.member_id for m in g.members)))
            await asyncio.sleep(0.2)
    finally:
        writer.close()


def test_100k_mutated_frames_against_a_live_server(tmp_path):
    stderr_path = tmp_path / "server.err"
    server = subprocess.Popen(
        [sys.executable, "-m", "kcoord", "serve", "--listen", "127.0.0.1:0", "--initial-rebalance-delay-ms", "0",
         "--no-auto-create-topics", "--log-level", "WARNING"],
        stdout=subprocess.PIPE, stderr=open(stderr_path, "w"), text=True, cwd=ROOT)
    member = None
    try:
        line = server.stdout.readline()
        assert "listening on" in line, stderr_path.read_text()
        port = int(line.rsplit(":", 1)[1])
        bootstrap = f"127.0.0.1:{port}"

        from kafka.admin import KafkaAdminClient, NewTopic
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("guarded", 3, 1)])
        admin.close()

        group = f"guard-{uuid.uuid4().hex}"
        member = subprocess.Popen(
            [sys.executable, "-m", "kcoord.conformance.member", "--client", "kafka-python", "--bootstrap", bootstrap,
             "--topic", "guarded", "--group", group, "--session-ms", "10000"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        events: list[dict] = []
        assigned = threading.Event()

        def read_events():
            for out in member.stdout:
                if out.startswith("{"):
                    events.append(json.loads(out))
                    if events[-1]["event"] == "assigned":
                        assigned.set()
        threading.Thread(target=read_events, daemon=True).start()
        assert assigned.wait(90), f"the guard consumer never got an assignment: {events}"

        async def scenario():
            deadline = time.monotonic() + 60
            while (state := await describe(port, group))[0] != "Stable" and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            assert state[0] == "Stable" and len(state[1]) == 1, state
            seeds = seed_requests()
            await blast("127.0.0.1", port, seeds, 5_000, seed=1)   # warm up caches and pools
            rss_before = rss_mib(server.pid)
            events_before = list(events)
            stop, seen = asyncio.Event(), []
            watch = asyncio.create_task(watchdog(port, group, stop, seen))
            started = time.monotonic()
            stats = await blast("127.0.0.1", port, seeds, FRAMES, seed=2)
            elapsed = time.monotonic() - started
            stop.set()
            await watch
            rss_after = rss_mib(server.pid)
            return state, stats, elapsed, rss_before, rss_after, events_before, seen, await describe(port, group)

        state, stats, elapsed, rss_before, rss_after, events_before, seen, final = asyncio.run(scenario())
        print(f"\nfuzz: {stats.frames_consumed} frames consumed ({stats.frames_sent} sent, "
              f"{stats.responses} answered, {stats.closed_by_server} connections closed by the server, "
              f"{stats.stalled} parked) in {elapsed:.1f}s; server RSS {rss_before:.1f} -> {rss_after:.1f} MiB; "
              f"{len(seen)} watchdog checks")
        assert server.poll() is None, "the server died"
        assert stats.frames_consumed >= FRAMES
        assert len(seen) >= 5 and all(s == state for s in seen), f"the guarded group moved: {set(map(str, seen))}"
        assert final == state
        assert events == events_before, f"the guard consumer rebalanced or failed: {events[len(events_before):]}"
        assert member.poll() is None, member.stderr.read()
        assert rss_after - rss_before < 64, f"server RSS grew {rss_before:.1f} -> {rss_after:.1f} MiB"
        errors = stderr_path.read_text()
        assert "Traceback" not in errors and "internal error" not in errors, errors[-5000:]
    finally:
        if member is not None:
            member.terminate()
            member.wait(30)
        server.terminate()
        server.wait(30)
