"""The reference Apache Kafka broker of kcoord's test bed.

kcoord's semantics are Kafka's, so the suite can run a test unchanged against a
real Kafka broker: a single KRaft node (broker and controller in one JVM) on free
loopback ports, started from jars Maven fetches once into a cache:

    with ReferenceKafka({"group.initial.rebalance.delay.ms": "0"}) as kafka:
        consumer = KafkaConsumer("t", group_id="g", bootstrap_servers=kafka.bootstrap)

    with ReferenceKafkaCluster() as cluster:      # three nodes, each broker and controller
        cluster.kill(cluster.metadata("t")[0].leader); cluster.start(...)

    python -m kcoord.testing.reference_kafka fetch            # what `make install-test` runs
    python -m kcoord.testing.reference_kafka serve [--config K=V ...]

The jars (broker, tools and the Java client, KAFKA_VERSION) go to
~/.cache/kcoord/kafka-VERSION/libs (root directory: env KCOORD_KAFKA_CACHE;
version: env KCOORD_KAFKA_VERSION). Java 17 and Maven must be on PATH; anything
missing raises ReferenceKafkaUnavailable with one line saying what to install.
"""
from __future__ import annotations

import argparse
import atexit
import base64
import errno
import functools
import itertools
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kcoord.testing import jvm, maven

KAFKA_VERSION = "4.3.1"
POM = Path(__file__).with_name("reference-kafka") / "pom.xml"
MARKER = maven.MARKER
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
# Kafka's own start script uses G1 with a 1 GiB heap; a test broker holds little, and
# the C1-only JIT and serial GC start it faster (bench: see docs/conformance.md, "The reference Kafka").
JVM_OPTS = jvm.lean_options(xms="256m", xmx="1g")
FORMAT_OPTS = jvm.lean_options()  # kafka-storage format: a few seconds, a small heap's default
READY_GROUP = "kcoord-reference-kafka-ready"

# Kafka's log4j layout, which kcoord's analytics (kcoord.analytics.events) parse.
LOG4J2 = """\
status = warn
name = kcoord-reference-kafka
appender.server.type = File
appender.server.name = server
appender.server.fileName = {log}
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.server.ref = server
logger.state.name = state.change.logger
logger.state.level = WARN
"""


class ReferenceKafkaUnavailable(jvm.JavaUnavailable):
    """The reference Kafka cannot run here; the message says what to install or do."""


def kafka_version() -> str:
    return os.environ.get("KCOORD_KAFKA_VERSION") or KAFKA_VERSION


def cache_dir(version: str | None = None) -> Path:
    return maven.cache_root() / f"kafka-{version or kafka_version()}"


def require_java() -> str:
    return jvm.require_java(ReferenceKafkaUnavailable)


def fetch(version: str | None = None) -> Path:
    """The directory of the Kafka jars, fetched with Maven the first time (~55 MB)."""
    version = version or kafka_version()
    return jvm.fetch_jars(cache_dir(version), "libs", POM, {"kafka.version": version}, "kafka_2.13-*.jar",
                          f"Apache Kafka {version}", ReferenceKafkaUnavailable)


def classpath(version: str | None = None) -> str:
    """A java -cp value with every fetched jar (broker, tools, kafka-clients), fetching first if needed."""
    return f"{fetch(version)}/*"


_PORTS = random.SystemRandom()   # not the global generator, which tests may seed alike


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768   # Linux's default


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now, for a server started later. Taken below the ephemeral range: a port the
    kernel handed out (bind to 0) can be taken again, between our close and the server's bind,
    as the local end of any process's outgoing connection (seen as a JVM's "Address already in
    use" under the full suite); a port below the range is only ever taken by a bind."""
    low = _ephemeral_low()
    first = max(1024, low - 12000)
    for _ in range(200):
        port = _PORTS.randrange(first, low)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _port_in_use(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError as err:
            return err.errno == errno.EADDRINUSE
    return False


def _cluster_id() -> str:
    # What `kafka-storage.sh random-uuid` prints (org.apache.kafka.common.Uuid.randomUuid),
    # without a JVM start: 16 random bytes, base64url, unpadded, never starting with "-".
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def format_storage(configs: list[Path], cluster_id: str, version: str | None = None, timeout: float = 120.0) -> None:
    """`kafka-storage format` of each server.properties' log dirs for `cluster_id`, the
    JVMs run side by side; a failure raises ReferenceKafkaUnavailable with its last line."""
    cp = classpath(version)
    procs = [jvm.spawn(jvm.command("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config),
                                   classpath=cp, options=FORMAT_OPTS, error=ReferenceKafkaUnavailable),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for config in configs]
    try:
        outputs = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                jvm.kill(proc)
    for proc, (out, err) in zip(procs, outputs):
        if proc.returncode != 0:
            raise ReferenceKafkaUnavailable(
                f"kafka-storage format failed ({proc.returncode}): "
                f"{(err or out).strip().splitlines()[-1:] or ['no output']}"[:2000])


DIR_PREFIX = "kcoord-kafka-"


@functools.lru_cache(maxsize=4)
def ready_groups(partitions: int) -> tuple[str, ...]:
    """One group id for each __consumer_offsets partition, READY_GROUP's first."""
    from kcoord.coordinator.config import offsets_partition_for

    found: dict[int, str] = {}
    for n in itertools.count():
        group = READY_GROUP if n == 0 else f"{READY_GROUP}-{n}"
        found.setdefault(offsets_partition_for(group, partitions), group)
        if len(found) == partitions:
            return tuple(found.values())


def unready(nodes: dict[int, tuple[str, int]], partitions: int) -> str | None:
    """What keeps KRaft nodes (node id -> host, port) from serving every group, or None when
    nothing does: each must list all of them in Metadata (a fenced broker is left out), and
    the coordinator of a group in each of the `partitions` __consumer_offsets partitions must
    answer DescribeGroups. FindCoordinator (whose first call creates the topic) names a
    partition's leader before it has loaded the partition; group requests answer
    COORDINATOR_LOAD_IN_PROGRESS until then, which a test's first JoinGroup must not see
    (kcoord never says it)."""
    from kcoord.protocol_client import Connection, ProtocolError

    def connect(node_id: int) -> Connection:
        host, port = nodes[node_id]
        return Connection(host, port, timeout=5.0, client_id="kcoord-reference-kafka")

    groups = ready_groups(partitions)
    try:
        for node_id in nodes:
            with connect(node_id) as conn:
                meta = conn.call(3, conn.version(3, 4, 1), {"topics": [], "allow_auto_topic_creation": False})
            listed = {b.node_id for b in meta.brokers}
            if not set(nodes) <= listed:
                return f"node {node_id}'s Metadata lists brokers {sorted(listed)}"
        with connect(next(iter(nodes))) as conn:
            found = conn.call(10, conn.version(10, 4, 4), {"key_type": 0, "coordinator_keys": list(groups)})
        by_node: dict[int, list[str]] = {}
        for c in found.coordinators:
            if c.error_code:
                return f"FindCoordinator error {c.error_code} for {c.key}"
            by_node.setdefault(c.node_id, []).append(c.key)
        for node_id, keys in by_node.items():
            if node_id not in nodes:
                return f"node {node_id}, which is down, coordinates {len(keys)} of the groups"
            with connect(node_id) as conn:
                described = conn.call(15, conn.version(15, 5), {"groups": keys})
            codes = sorted({g.error_code for g in described.groups} - {0})
            if codes:
                return f"DescribeGroups on node {node_id}: errors {codes}"
    except (OSError, ProtocolError) as err:
        return f"{type(err).__name__}: {err}"
    return None


# How to stop each broker or cluster still running: at exit, whatever a test left running goes.
_LIVE: set[Callable[[], None]] = set()


@atexit.register
def _stop_all() -> None:
    for stop in list(_LIVE):
        stop()


def _keep_logs(home: Path, keep: Path) -> Path | None:
    """server.log and stdout.log of `home` copied into `keep`; the kept server.log, if any."""
    keep.mkdir(parents=True, exist_ok=True)
    for name in ("server.log", "stdout.log"):
        if (home / name).exists():
            shutil.copy2(home / name, keep / name)
    return keep / "server.log" if (keep / "server.log").exists() else None


def write_node_config(home: Path, node_id: int, host: str, port: int, voters: str, settings: dict[str, str]) -> dict:
    """A combined-mode (broker and controller) KRaft node's server.properties and log4j2.properties
    in `home`, its log dir `home`/data: the node's listeners (PLAINTEXT on `port`, CONTROLLER on
    its entry in `voters`, "ID@HOST:PORT,..."), then `settings`. Its config, as written."""
    controller_port = next(v.rsplit(":", 1)[1] for v in voters.split(",") if v.startswith(f"{node_id}@"))
    (home / "data").mkdir(exist_ok=True)
    config = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(home / "data"),
        **settings,
    }
    (home / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in config.items()))
    (home / "log4j2.properties").write_text(LOG4J2.format(log=home / "server.log"))
    return config


def broker_process(home: Path, libs: Path, options: tuple[str, ...] = JVM_OPTS) -> jvm.JvmProcess:
    """kafka.Kafka on `home`/server.properties, logging by `home`/log4j2.properties, its
    stdout in `home`/stdout.log (appended to: a node started again keeps its first words)."""
    cmd = jvm.command("kafka.Kafka", str(home / "server.properties"), classpath=f"{libs}/*",
                      options=(*options, jvm.log4j_option(home / "log4j2.properties"), f"-Dkafka.logs.dir={home}"),
                      error=ReferenceKafkaUnavailable)
    # Its own process group: stop() signals the JVM and nothing else.
    return jvm.spawn(cmd, log=home / "stdout.log", append=True, cwd=home, own_group=True, die_with_parent=True)


class ReferenceKafka:
    """One single-node KRaft Apache Kafka on loopback; a context manager.

    `config` adds or overrides server.properties keys. `port` (default: a free one) is
    the PLAINTEXT listener's. With `keep_logs_in`, stop() copies server.log there."""

    host = "127.0.0.1"

    def __init__(self, config: dict[str, str] | None = None, *, port: int | None = None,
                 controller_port: int | None = None, version: str | None = None,
                 keep_logs_in: str | os.PathLike | None = None, start_timeout: float = START_TIMEOUT):
        self.version = version or kafka_version()
        self.extra = {k: str(v) for k, v in (config or {}).items()}
        self.port = port or 0
        self.controller_port = controller_port or 0
        self.keep_logs_in = Path(keep_logs_in) if keep_logs_in else None
        self.start_timeout = start_timeout
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.spawned_at: float | None = None
        self.pid: int | None = None  # the JVM's, kept after stop()
        self.config: dict[str, str] = {}
        self._kept_log: Path | None = None
        self.started_in: float | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        """server.log (log4j's layout): in the broker's directory while it runs, then the kept copy."""
        if self.dir is not None:
            return self.dir / "server.log"
        return self._kept_log

    def __enter__(self) -> "ReferenceKafka":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ReferenceKafka({self.version} at {self.bootstrap}, {'running' if self.running else 'stopped'})"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> "ReferenceKafka":
        if self.proc is not None:
            raise RuntimeError("this ReferenceKafka is already started")
        began = time.monotonic()
        require_java()
        libs = fetch(self.version)
        for name, port in (("port", self.port), ("controller port", self.controller_port)):
            if port and _port_in_use(self.host, port):
                raise ReferenceKafkaUnavailable(
                    f"cannot start the reference Kafka: {name} {self.host}:{port} is already in use "
                    f"(another broker?); pick another or leave it unset for a free one")
        self.port = self.port or free_port(self.host)
        self.controller_port = self.controller_port or free_port(self.host)
        jvm.sweep_orphans(DIR_PREFIX)
        self.dir = jvm.owned_dir(DIR_PREFIX)
        _LIVE.add(self.stop)
        try:
            self._write_config()
            format_storage([self.dir / "server.properties"], _cluster_id(), self.version)
            self.spawned_at = time.monotonic()   # the broker's own start (bench/hotpath.py's start-up)
            self.proc = broker_process(self.dir, libs)
            self.pid = self.proc.pid
            self._wait_ready(began + self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        return self

    def _write_config(self) -> None:
        assert self.dir is not None
        self.config = write_node_config(self.dir, 1, self.host, self.port, f"1@{self.host}:{self.controller_port}", {
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",  # one __consumer_offsets partition loads fastest
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            **self.extra,
        })

    def _failure(self, what: str) -> ReferenceKafkaUnavailable:
        log = jvm.tail(self.dir / "server.log") if self.dir else ""
        out = jvm.tail(self.dir / "stdout.log") if self.dir else ""
        if "Address already in use" in log + out:
            what = (f"its port {self.host}:{self.port} or {self.host}:{self.controller_port} is already in use "
                    f"(another broker?)")
        detail = "\n".join(part for part in (f"server.log tail:\n{log}" if log else "",
                                             f"stdout tail:\n{out}" if out else "") if part)
        return ReferenceKafkaUnavailable(f"the reference Kafka {self.version} on {self.bootstrap} {what}"
                                         + (f"\n{detail}" if detail else ""))

    def _wait_ready(self, deadline: float) -> None:
        last = "no answer yet"
        while True:
            if self.proc.poll() is not None:
                raise self._failure(f"exited with status {self.proc.returncode} while starting")
            if time.monotonic() > deadline:
                raise self._failure(f"did not answer within {self.start_timeout:g}s (last: {last})")
            last = unready({1: (self.host, self.port)}, 1)
            if last is None:
                return
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM, up to 15 s for a clean shutdown, then SIGKILL; the temp dir goes."""
        proc, self.proc = self.proc, None
        if proc is not None:
            jvm.stop(proc, STOP_TIMEOUT)
        if self.dir is not None:
            if self.keep_logs_in is not None:
                self._kept_log = _keep_logs(self.dir, self.keep_logs_in)
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        _LIVE.discard(self.stop)


# A node of a three-node cluster: a third of the ~1 GiB a single test broker may take, so the
# cluster fits beside the suite's other JVMs; the serial GC and C1-only JIT as everywhere.
CLUSTER_JVM_OPTS = jvm.lean_options(xms="64m", xmx="384m")
# What a cluster runs with unless told otherwise: groups form without the initial delay;
# broker heartbeats, sessions and the rest are Kafka's defaults, the replication factors of
# the internal topics too (3, min ISR 2).
CLUSTER_CONFIG = {"group.initial.rebalance.delay.ms": "0"}


@dataclass
class ClusterNode:
    """One combined-mode node of a ReferenceKafkaCluster."""
    node_id: int
    host: str
    port: int
    controller_port: int
    home: Path
    rack: str | None = None
    config: dict[str, str] = field(default_factory=dict)
    proc: jvm.JvmProcess | None = None
    pid: int | None = None  # the latest JVM's, kept after it ends
    stopped: bool = False  # by stop() or kill(): its end is no failure

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def log_path(self) -> Path:
        """server.log (log4j's layout), appended to across restarts."""
        return self.home / "server.log"

    @property
    def stdout_path(self) -> Path:
        return self.home / "stdout.log"


@dataclass
class PartitionState:
    """A partition as Metadata describes it."""
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


class ReferenceKafkaCluster:
    """Three Apache Kafka KRaft nodes in combined mode (each broker and controller, node ids
    0, 1, 2, static controller.quorum.voters) on loopback; a context manager.

    `config` adds or overrides every node's server.properties keys (CLUSTER_CONFIG's by
    default: group.initial.rebalance.delay.ms=0, otherwise Kafka's defaults);
    `racks` gives each node a broker.rack. stop(i) is a SIGTERM (Kafka's controlled
    shutdown), kill(i) a SIGKILL, start(i) brings node i back on its ports and log dir.
    With `keep_logs_in`, close() copies each node's logs to node-I/ there."""

    host = "127.0.0.1"

    def __init__(self, config: dict[str, str] | None = None, *, size: int = 3, racks: list[str] | None = None,
                 version: str | None = None, keep_logs_in: str | os.PathLike | None = None,
                 start_timeout: float = 2 * START_TIMEOUT):
        if racks is not None and len(racks) != size:
            raise ValueError(f"{size} nodes, {len(racks)} racks: give one rack per node")
        self.size = size
        self.racks = racks
        self.version = version or kafka_version()
        self.config = {**CLUSTER_CONFIG, **{k: str(v) for k, v in (config or {}).items()}}
        self.keep_logs_in = Path(keep_logs_in) if keep_logs_in else None
        self.start_timeout = start_timeout
        self.dir: Path | None = None
        self.nodes: list[ClusterNode] = []
        self._libs: Path | None = None
        self.started_in: float | None = None

    @property
    def bootstrap(self) -> str:
        """Every node's listener, comma-separated, as clients take bootstrap.servers."""
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def partitions(self) -> int:
        """__consumer_offsets' partition count."""
        return int(self.config.get("offsets.topic.num.partitions", "50"))

    def node(self, i: int) -> ClusterNode:
        return self.nodes[i]

    def running(self, i: int) -> bool:
        return self.nodes[i].running

    def __enter__(self) -> "ReferenceKafkaCluster":
        return self.start_all()

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        states = ", ".join(f"{n.node_id}: {'up' if n.running else 'down'}" for n in self.nodes)
        return f"ReferenceKafkaCluster({self.version} at {self.bootstrap}; {states})"

    def start_all(self) -> "ReferenceKafkaCluster":
        """Format every node's log dir with one cluster id, start the JVMs side by side and
        wait until each lists all three brokers and every group coordinator answers."""
        if self.nodes:
            raise RuntimeError("this ReferenceKafkaCluster is already started")
        began = time.monotonic()
        require_java()
        self._libs = fetch(self.version)
        jvm.sweep_orphans(DIR_PREFIX)
        self.dir = jvm.owned_dir(f"{DIR_PREFIX}cluster-")
        _LIVE.add(self.close)
        try:
            ports = [(free_port(self.host), free_port(self.host)) for _ in range(self.size)]
            voters = ",".join(f"{i}@{self.host}:{c}" for i, (_, c) in enumerate(ports))
            for i, (port, controller_port) in enumerate(ports):
                home = self.dir / f"node-{i}"
                home.mkdir()
                rack = self.racks[i] if self.racks else None
                settings = {"offsets.topic.replication.factor": str(min(3, self.size)),
                            **({"broker.rack": rack} if rack else {}), **self.config}
                self.nodes.append(ClusterNode(i, self.host, port, controller_port, home, rack,
                                              write_node_config(home, i, self.host, port, voters, settings)))
            format_storage([n.home / "server.properties" for n in self.nodes], _cluster_id(), self.version)
            for n in self.nodes:  # from this thread, which lives on: each dies with it
                self._spawn(n)
            self.wait_ready(began + self.start_timeout)
        except BaseException:
            self.close()
            raise
        self.started_in = time.monotonic() - began
        return self

    def _spawn(self, node: ClusterNode) -> None:
        node.proc = broker_process(node.home, self._libs, CLUSTER_JVM_OPTS)
        node.pid = node.proc.pid
        node.stopped = False

    def start(self, i: int, wait: bool = True) -> ClusterNode:
        """Node i again, on its ports and log dir, after stop(i) or kill(i); with `wait`, until
        the cluster is ready again (wait_ready)."""
        node = self.nodes[i]
        if node.running:
            raise RuntimeError(f"node {i} is running")
        self._spawn(node)
        if wait:
            self.wait_ready(time.monotonic() + self.start_timeout)
        return node

    def stop(self, i: int, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM: Kafka's controlled shutdown (its leaderships move first), SIGKILL after
        `timeout`; the exit status."""
        self.nodes[i].stopped = True
        return jvm.stop(self.nodes[i].proc, timeout)

    def kill(self, i: int) -> int:
        """SIGKILL: the controller finds out when the node's broker session times out."""
        self.nodes[i].stopped = True
        return jvm.kill(self.nodes[i].proc)

    def wait_ready(self, deadline: float) -> None:
        """Until every running node lists all running ones in Metadata and every group
        coordinator answers (unready()); a node that exits, or the deadline, raises
        ReferenceKafkaUnavailable with each node's log tail."""
        last = "no answer yet"
        while True:
            exited = [n for n in self.nodes if not n.stopped and n.proc is not None and n.proc.poll() is not None]
            if exited:
                raise self._failure(f"node {exited[0].node_id} exited with status {exited[0].proc.returncode}")
            if time.monotonic() > deadline:
                raise self._failure(f"was not ready in time (last: {last})")
            live = {n.node_id: (n.host, n.port) for n in self.nodes if n.running}
            last = unready(live, self.partitions) if live else "no node is running"
            if last is None:
                return
            time.sleep(0.2)

    def log_tails(self, lines: int = 15) -> str:
        """Each node's server.log tail (and stdout's, when it has one), for a failure's message."""
        parts = []
        for n in self.nodes:
            parts.append(f"--- node {n.node_id} ({'up' if n.running else 'down'}) server.log:\n{jvm.tail(n.log_path, lines)}")
            out = jvm.tail(n.stdout_path, lines)
            if out:
                parts.append(f"--- node {n.node_id} stdout:\n{out}")
        return "\n".join(parts)

    def _failure(self, what: str) -> ReferenceKafkaUnavailable:
        return ReferenceKafkaUnavailable(f"the reference Kafka cluster {self.version} on {self.bootstrap} {what}\n"
                                         f"{self.log_tails()}")

    def metadata(self, topic: str, via: int | None = None) -> dict[int, PartitionState]:
        """Partition -> its leader, epoch, replicas and ISR, from Metadata on node `via` (by
        default the first running node)."""
        from kcoord.protocol_client import Connection

        node = self.nodes[via] if via is not None else next(n for n in self.nodes if n.running)
        with Connection(node.host, node.port, timeout=10.0) as conn:
            answer = conn.call(3, conn.version(3, 12, 7), {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                                            "include_topic_authorized_operations": False})
        return {p.partition_index: PartitionState(p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes))
                for t in answer.topics if t.name == topic and t.error_code == 0 for p in t.partitions}

    def create_topic(self, topic: str, partitions: int = 1, replication_factor: int = 3, timeout: float = 30.0) -> None:
        """CreateTopics, then until each partition's leader answers ListOffsets for it."""
        from kcoord.testing import brokers

        via = next(n for n in self.nodes if n.running)
        brokers.create_topic(via.bootstrap, topic, partitions, timeout, replication_factor=replication_factor,
                             wait=False)
        self.wait_led(topic, partitions, timeout)

    def wait_led(self, topic: str, partitions: int, timeout: float = 30.0) -> dict[int, PartitionState]:
        """Until each of the topic's partitions has a running leader that answers for it (after
        a leader's death too); the partitions' states then."""
        deadline = time.monotonic() + timeout
        while not self._led(topic, partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic}: not every partition led after {timeout:g}s: {self.metadata(topic)}")
            time.sleep(0.1)
        return self.metadata(topic)

    def restore(self) -> None:
        """Every node that is not running started again, then wait_ready: what a test that
        stops or kills nodes leaves behind for the next one."""
        down = [n.node_id for n in self.nodes if not n.running]
        for i in down:
            self.start(i, wait=False)
        if down:
            self.wait_ready(time.monotonic() + self.start_timeout)

    def _led(self, topic: str, count: int) -> bool:
        """Whether Metadata names a running leader for each partition and each answers ListOffsets
        for its own (Metadata names a leader a moment before it leads)."""
        from kcoord.testing import brokers

        by_leader: dict[int, set[int]] = {}
        for p, state in self.metadata(topic).items():
            by_leader.setdefault(state.leader, set()).add(p)
        if sum(map(len, by_leader.values())) != count:
            return False
        for leader, parts in by_leader.items():
            if not (0 <= leader < self.size and self.nodes[leader].running):
                return False
            if parts & set(brokers.unled_partitions(self.nodes[leader].bootstrap, topic, count)):
                return False
        return True

    def close(self) -> None:
        """Every running node stopped together (SIGTERM, SIGKILL after 15 s); the temp dir goes."""
        jvm.stop_all([n.proc for n in self.nodes if n.proc is not None], STOP_TIMEOUT)
        if self.dir is not None:
            if self.keep_logs_in is not None:
                for n in self.nodes:
                    _keep_logs(n.home, self.keep_logs_in / f"node-{n.node_id}")
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        _LIVE.discard(self.close)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kcoord.testing.reference_kafka",
                                 description="The reference Apache Kafka broker of kcoord's test bed.")
    ap.add_argument("--version", default=None, help=f"Kafka version (default {KAFKA_VERSION}, env KCOORD_KAFKA_VERSION)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="fetch the jars into the cache once (what make install-test runs)")
    serve = sub.add_parser("serve", help="run a broker in the foreground until Ctrl-C/SIGTERM")
    serve.add_argument("--config", action="append", default=[], metavar="K=V", help="a server.properties key")
    serve.add_argument("--port", type=int, default=None, help="PLAINTEXT port (default: a free one)")
    serve.add_argument("--keep-logs-in", default=None, metavar="DIR", help="copy server.log here on exit")
    args = ap.parse_args(argv)
    prog = "reference-kafka"
    try:
        if args.command == "fetch":
            libs = fetch(args.version)
            print(f"Apache Kafka {args.version or kafka_version()}: {len(list(libs.glob('*.jar')))} jars in {libs}")
            return 0
        config = {}
        for item in args.config:
            key, sep, value = item.partition("=")
            if not sep or not key:
                ap.error(f"--config wants K=V, got {item!r}")
            config[key] = value
        kafka = ReferenceKafka(config, port=args.port, version=args.version, keep_logs_in=args.keep_logs_in)
        stop = []
        signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
        with kafka:
            print(f"reference Kafka {kafka.version} listening on {kafka.bootstrap} "
                  f"(started in {kafka.started_in:.1f}s; log {kafka.log_path})", flush=True)
            try:
                while not stop and kafka.running:
                    time.sleep(0.5)
            except KeyboardInterrupt:
                pass
            if not kafka.running and not stop:
                print(f"{prog}: the broker exited", file=sys.stderr)
                return 1
        return 0
    except ReferenceKafkaUnavailable as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
