"""Real Kafka Connect distributed workers (ConnectDistributed) against any bootstrap.

    python -m kcoord.testing.connect fetch          # what `make install-test` runs

    with ConnectCluster(bootstrap, protocol="sessioned", max_delay_ms=10_000) as cluster:
        cluster.add_workers(3)                       # started together, each its own JVM
        cluster.create_connector("src-a", verifiable_source_config(topic, tasks=4))
        status = cluster.wait_running({"src-a": 4}, workers=3)
        cluster.stop(cluster.workers[0])             # SIGTERM: leaves the group
        cluster.kill(cluster.workers[1])             # SIGKILL: found out by the session timeout
        cluster.assignments(worker)                  # what the worker's log says it was given

The jars (connect-runtime, connect-file, connect-json and what they need) are fetched with
Maven once into ~/.cache/kcoord/connect-VERSION/libs (root directory: env
KCOORD_KAFKA_CACHE; version: the reference Kafka's, env KCOORD_KAFKA_VERSION). Each worker
is `java -cp libs/* org.apache.kafka.connect.cli.ConnectDistributed worker.properties`
with a small heap, its REST listener on a free loopback port (its worker id is
127.0.0.1:PORT) and its log (INFO, Kafka's layout) in the cluster's temp directory.
Missing Java or jars raise ConnectUnavailable with one line saying what to install.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kcoord.testing import jvm, maven
from kcoord.testing.reference_kafka import free_port, kafka_version

POM = Path(__file__).with_name("connect") / "pom.xml"
MARKER = maven.MARKER
MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
VERIFIABLE_SOURCE = "org.apache.kafka.connect.tools.VerifiableSourceConnector"
# As kcoord.testing.kafka_tools: a worker holds a few tasks; the C1-only JIT and the serial GC
# start it with far less CPU, which four workers and a broker on 2 shared cores need.
JVM_OPTS = jvm.lean_options(xms="64m", xmx="256m")
PROTOCOLS = ("eager", "compatible", "sessioned")
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0
INSTALL_HINT = "run `make install-test` (it fetches Kafka Connect's jars with Maven)"

LOG4J2 = """\
status = warn
name = kcoord-connect-worker
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.coord.name = org.apache.kafka.clients.consumer.internals.AbstractCoordinator
logger.coord.level = INFO
logger.jetty.name = org.eclipse.jetty
logger.jetty.level = WARN
"""


class ConnectUnavailable(jvm.JavaUnavailable):
    """Kafka Connect cannot run here; the message says what to install or do."""


def cache_dir(version: str | None = None) -> Path:
    return maven.cache_root() / f"connect-{version or kafka_version()}"


def fetch(version: str | None = None) -> Path:
    """The directory of Connect's jars, fetched with Maven the first time (~30 MB)."""
    version = version or kafka_version()
    return jvm.fetch_jars(cache_dir(version), "libs", POM, {"kafka.version": version}, "connect-runtime-*.jar",
                          f"Kafka Connect {version}", ConnectUnavailable)


def classpath(version: str | None = None) -> str:
    """Connect's jars, which must have been fetched already: starting a worker never starts
    a Maven download on its own."""
    return jvm.fetched_jars(cache_dir(version), "connect-file-*.jar", "Kafka Connect's", INSTALL_HINT,
                            ConnectUnavailable)


def verifiable_source_config(topic: str, tasks: int = 4, throughput: int = 5) -> dict[str, str]:
    """A VerifiableSourceConnector (Kafka's connect-test-plugins, what Kafka's own Connect
    system tests run): `tasks` tasks, each producing a sequence to `topic` at `throughput`
    records a second and printing each record on the worker's stdout."""
    return {"connector.class": VERIFIABLE_SOURCE, "tasks.max": str(tasks), "topic": topic,
            "throughput": str(throughput)}


# "Joined group at generation 3 with protocol version 2 and got assignment: Assignment{error=0,
# leader='connect-...', leaderUrl='http://127.0.0.1:p/', offset=5, connectorIds=[a],
# taskIds=[a-0, b-1], revokedConnectorIds=[], revokedTaskIds=[], delay=0} with rebalance delay: 0"
_JOINED = re.compile(r"^\[(?P<ts>[^\]]+)\] \w+ .*Joined group at generation (?P<gen>-?\d+) with protocol version "
                     r"(?P<version>\d+) and got assignment: Assignment\{(?P<body>.*?)\}")
_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|'[^']*'|[^,\s}]+)")


@dataclass
class Assignment:
    """One "Joined group ... got assignment" line of a worker's log."""
    generation: int
    protocol_version: int
    leader: str
    connectors: list[str]
    tasks: list[str]
    revoked_connectors: list[str]
    revoked_tasks: list[str]
    delay: int
    error: int
    at: str


def _items(value: str) -> list[str]:
    value = value.strip("[]").strip()
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def parse_assignments(log_text: str) -> list[Assignment]:
    out = []
    for line in log_text.splitlines():
        m = _JOINED.search(line)
        if not m:
            continue
        f = dict(_FIELD.findall(m.group("body")))
        out.append(Assignment(
            generation=int(m.group("gen")), protocol_version=int(m.group("version")),
            leader=f.get("leader", "").strip("'"), connectors=_items(f.get("connectorIds", "")),
            tasks=_items(f.get("taskIds", "")), revoked_connectors=_items(f.get("revokedConnectorIds", "")),
            revoked_tasks=_items(f.get("revokedTaskIds", "")), delay=int(f.get("delay", "0") or 0),
            error=int(f.get("error", "0") or 0), at=m.group("ts")))
    return out


@dataclass
class ConnectWorker:
    """One ConnectDistributed JVM."""
    name: str
    port: int
    home: Path
    proc: jvm.JvmProcess | None = None

    @property
    def worker_id(self) -> str:  # what the REST status calls it
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.home / "worker.log"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def assignments(self) -> list[Assignment]:
        return parse_assignments(self.log_text())

    def log_tail(self, lines: int = 40) -> str:
        return jvm.tail(self.log, lines)


@dataclass
class Sample:
    """The REST status after a change: `tasks` maps "connector-N" to the worker_id running it."""
    label: str
    seconds: float
    connectors: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)


class ConnectCluster:
    """N distributed workers of one Connect group on `bootstrap`, in a temp directory."""

    def __init__(self, bootstrap: str, protocol: str = "sessioned", group_id: str | None = None,
                 max_delay_ms: int = 10_000, session_timeout_ms: int = 6_000, heartbeat_ms: int = 1_000,
                 rebalance_timeout_ms: int = 20_000, workdir: Path | None = None, extra: dict | None = None,
                 version: str | None = None):
        if protocol not in PROTOCOLS:
            raise ValueError(f"connect.protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
        self.bootstrap = bootstrap
        self.protocol = protocol
        self.group_id = group_id or f"connect-{protocol}-{os.getpid()}-{int(time.time() * 1000) % 10**8}"
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="kcoord-connect-"))
        self.version = version
        self.config = {
            "bootstrap.servers": bootstrap,
            "group.id": self.group_id,
            "config.storage.topic": f"{self.group_id}-configs",
            "offset.storage.topic": f"{self.group_id}-offsets",
            "status.storage.topic": f"{self.group_id}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.storage.partitions": "3",
            "status.storage.partitions": "1",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "connect.protocol": protocol,
            "scheduled.rebalance.max.delay.ms": str(max_delay_ms),
            "session.timeout.ms": str(session_timeout_ms),
            "heartbeat.interval.ms": str(heartbeat_ms),
            "rebalance.timeout.ms": str(rebalance_timeout_ms),
            "offset.flush.interval.ms": "2000",
            "task.shutdown.graceful.timeout.ms": "2000",
            "plugin.discovery": "service_load",
            "rest.host.name": "127.0.0.1",
            "rest.advertised.host.name": "127.0.0.1",
            **(extra or {}),
        }
        self.workers: list[ConnectWorker] = []
        self.timeline: list[Sample] = []
        self._began = time.monotonic()

    # -- workers ---------------------------------------------------------------------------

    def _spawn(self, worker: ConnectWorker) -> None:
        jvm.require_java(ConnectUnavailable)
        worker.home.mkdir(parents=True, exist_ok=True)
        props = {**self.config, "listeners": f"http://127.0.0.1:{worker.port}",
                 "rest.advertised.port": str(worker.port)}
        (worker.home / "worker.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (worker.home / "log4j2.properties").write_text(LOG4J2.format(log=worker.log))
        cmd = jvm.command(MAIN, str(worker.home / "worker.properties"), classpath=classpath(self.version),
                          options=(*JVM_OPTS, jvm.log4j_option(worker.home / "log4j2.properties")),
                          error=ConnectUnavailable)
        worker.proc = jvm.spawn(cmd, log=worker.home / "stdout", append=True, cwd=worker.home, own_group=True)

    def add_worker(self, wait: bool = True) -> ConnectWorker:
        worker = ConnectWorker(f"w{len(self.workers)}", free_port(), self.dir / f"w{len(self.workers)}")
        self.workers.append(worker)
        self._spawn(worker)
        if wait:
            self.wait_rest(worker)
        return worker

    def add_workers(self, n: int) -> list[ConnectWorker]:
        new = [self.add_worker(wait=False) for _ in range(n)]
        for w in new:
            self.wait_rest(w)
        return new

    def restart(self, worker: ConnectWorker, wait: bool = True) -> ConnectWorker:
        """The same worker (port, so worker id, and directory) started again after a stop or kill."""
        if worker.alive:
            raise RuntimeError(f"{worker.name} is still running")
        self._spawn(worker)
        if wait:
            self.wait_rest(worker)
        return worker

    def wait_rest(self, worker: ConnectWorker, timeout: float = START_TIMEOUT) -> None:
        """Until the worker's REST answers GET / (it has read the config topic and joined)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not worker.alive:
                raise RuntimeError(f"Connect worker {worker.name} exited with {worker.proc.returncode}:\n"
                                   f"{worker.log_tail()}")
            try:
                with urllib.request.urlopen(worker.url + "/connectors", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise TimeoutError(f"Connect worker {worker.name} did not serve REST within {timeout:.0f} s:\n"
                           f"{worker.log_tail()}")

    def stop(self, worker: ConnectWorker, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM: the worker stops its tasks and leaves the group."""
        if worker.alive:
            jvm.stop(worker.proc, timeout)

    def kill(self, worker: ConnectWorker) -> None:
        """SIGKILL: the group only finds out when the session times out."""
        if worker.alive:
            jvm.kill(worker.proc)

    def close(self) -> None:
        jvm.stop_all([w.proc for w in self.workers if w.proc is not None], STOP_TIMEOUT)
        if self._own_dir and not os.environ.get("KCOORD_KEEP_CONNECT_LOGS"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "ConnectCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def live(self) -> list[ConnectWorker]:
        return [w for w in self.workers if w.alive]

    # -- REST ------------------------------------------------------------------------------

    def rest(self, method: str, path: str, body: dict | None = None, timeout: float = 30.0):
        """A REST call on a live worker (a follower forwards writes to the leader); 409
        (rebalance in progress) and connection errors are retried until `timeout`."""
        deadline = time.monotonic() + timeout
        data = json.dumps(body).encode() if body is not None else None
        last = None
        while True:
            for w in self.live:
                req = urllib.request.Request(w.url + path, data=data, method=method,
                                             headers={"Content-Type": "application/json", "Accept": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        text = r.read().decode()
                        return json.loads(text) if text else None
                except urllib.error.HTTPError as err:
                    last = f"{err.code} {err.read().decode(errors='replace')[:300]}"
                    if err.code not in (409, 500, 503):
                        raise RuntimeError(f"{method} {path} on {w.name}: {last}") from None
                except (urllib.error.URLError, OSError) as err:
                    last = str(err)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{method} {path}: no worker answered within {timeout:.0f} s ({last})")
            time.sleep(0.5)

    def create_connector(self, name: str, config: dict[str, str]) -> dict:
        return self.rest("POST", "/connectors", {"name": name, "config": config}, timeout=60)

    def status(self) -> dict[str, dict]:
        """GET /connectors?expand=status: connector -> {"connector": {state, worker_id}, "tasks": [...]}."""
        return {name: v["status"] for name, v in self.rest("GET", "/connectors?expand=status").items()}

    def sample(self, label: str) -> Sample:
        """The REST status now, as connector -> worker_id and "connector-N" -> worker_id of its
        RUNNING tasks, appended to the timeline."""
        s = Sample(label, round(time.monotonic() - self._began, 1))
        for name, st in self.status().items():
            if st["connector"]["state"] == "RUNNING":
                s.connectors[name] = st["connector"]["worker_id"]
            for t in st.get("tasks", []):
                if t["state"] == "RUNNING":
                    s.tasks[f"{name}-{t['id']}"] = t["worker_id"]
        self.timeline.append(s)
        return s

    def wait_running(self, tasks: dict[str, int], workers: int | None = None, label: str = "",
                     timeout: float = 90.0, stable_for: float = 0.0, settled: bool = False) -> Sample:
        """Until every connector in `tasks` and its `tasks[name]` tasks are RUNNING on live
        workers (on `workers` distinct ones if given) per the REST status, then for
        `stable_for` seconds more; the sample goes on the timeline. With `settled`, also until
        every live worker's latest assignment is of one generation and none waits on a scheduled
        rebalance (delay 0): a round the leader still owes (a lost worker back within the delay
        is followed by one when the delay ends) would otherwise land inside the next step."""
        deadline = time.monotonic() + timeout
        since = None
        last = None
        while time.monotonic() < deadline:
            try:
                s = self.sample(label or f"wait {tasks}")
            except (TimeoutError, RuntimeError) as err:
                last = err
                time.sleep(1)
                continue
            self.timeline.pop()
            live = {w.worker_id for w in self.live}
            held = self.held()
            by_log = {item: wid for wid, (conns, ts) in held.items() for item in (*conns, *ts)}
            # The status topic keeps a dead worker's last word: a worker restarted on its port
            # (same worker id) looks RUNNING at once. So the workers' own logs must agree.
            ok = (all(s.connectors.get(c) in live and by_log.get(c) == s.connectors[c] for c in tasks)
                  and all(s.tasks.get(t) in live and by_log.get(t) == s.tasks[t]
                          for t in (f"{c}-{i}" for c, n in tasks.items() for i in range(n)))
                  and sum(len(c) + len(t) for c, t in held.values()) == len(by_log)
                  and (workers is None or len(set(s.tasks.values()) | set(s.connectors.values())) >= workers)
                  and (not settled or self._settled()))
            if ok:
                since = since or time.monotonic()
                if time.monotonic() - since >= stable_for:
                    self.timeline.append(s)
                    return s
            else:
                since = None
            last = s
            time.sleep(1)
        raise TimeoutError(f"not all of {tasks} RUNNING on live workers within {timeout:.0f} s: {last}\n"
                           + "\n".join(f"--- {w.name} ({'up' if w.alive else 'down'})\n{w.log_tail(15)}"
                                       for w in self.workers))

    def _settled(self) -> bool:
        latest = [got[-1] for got in (w.assignments() for w in self.live) if got]
        return (len(latest) == len(self.live) and len({a.generation for a in latest}) == 1
                and all(a.delay == 0 for a in latest))

    def held(self) -> dict[str, tuple[list[str], list[str]]]:
        """What each live worker runs by its own log: its latest assignment's (connectors,
        tasks). Under every protocol version the line lists the whole set kept (revoked ones
        are listed apart), by worker id."""
        out = {}
        for w in self.live:
            got = w.assignments()
            out[w.worker_id] = (got[-1].connectors, got[-1].tasks) if got else ([], [])
        return out

    def follower_with_tasks(self, sample: Sample) -> ConnectWorker:
        """A live worker that is not the leader (the leader holds the lost-task bookkeeping, so
        killing it shows a different story) and runs tasks: the one running the most
        (connectors, then tasks), so that on two brokers whose shapes agree the victim's share,
        and so what the others get back, is the same."""
        leader = next(a.leader for w in self.live for a in reversed(w.assignments()) if a.leader)
        followers = [w for w in self.live if f"-{w.worker_id}-" not in f"-{leader.removeprefix('connect-')}"
                     and w.worker_id in sample.tasks.values()]
        if not followers:
            raise AssertionError(f"no follower with tasks (leader {leader}): {sample}")

        def load(w):
            return (sum(1 for wid in sample.connectors.values() if wid == w.worker_id),
                    sum(1 for wid in sample.tasks.values() if wid == w.worker_id))
        return max(followers, key=load)

    def assignments(self) -> dict[str, list[Assignment]]:
        """Each worker's "got assignment" log lines, by worker name."""
        return {w.name: w.assignments() for w in self.workers}

    def generations(self) -> list[int]:
        """The distinct generations any worker joined, in order."""
        return sorted({a.generation for w in self.workers for a in w.assignments()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="connect", description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default=None, help="Kafka version (default: the reference Kafka's)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="fetch Connect's jars into the cache once (what make install-test runs)")
    args = ap.parse_args(argv)
    try:
        libs = fetch(args.version)
        print(f"Kafka Connect {args.version or kafka_version()}: {len(list(libs.glob('*.jar')))} jars in {libs}")
        return 0
    except ConnectUnavailable as err:
        print(f"connect: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
