"""The reference Apache Kafka broker of kcoord's test bed.

kcoord's semantics are Kafka's, so the suite can run a test unchanged against a
real Kafka broker: a single KRaft node (broker and controller in one JVM) on free
loopback ports, started from jars Maven fetches once into a cache:

    with ReferenceKafka({"group.initial.rebalance.delay.ms": "0"}) as kafka:
        consumer = KafkaConsumer("t", group_id="g", bootstrap_servers=kafka.bootstrap)

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
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

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
    if not ((cache_dir(version) / MARKER).exists() and (cache_dir(version) / "libs").is_dir()):
        require_java()
    return maven.fetch(cache_dir(version), "libs", POM, {"kafka.version": version}, "kafka_2.13-*.jar",
                       f"Apache Kafka {version}", ReferenceKafkaUnavailable)


def classpath(version: str | None = None) -> str:
    """A java -cp value with every fetched jar (broker, tools, kafka-clients), fetching first if needed."""
    return f"{fetch(version)}/*"


def free_port(host: str = "127.0.0.1") -> int:
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


_LIVE: set["ReferenceKafka"] = set()


@atexit.register
def _stop_all() -> None:
    for kafka in list(_LIVE):
        kafka.stop()


def broker_process(home: Path, libs: Path) -> jvm.JvmProcess:
    """kafka.Kafka on `home`/server.properties, logging by `home`/log4j2.properties, its
    stdout in `home`/stdout.log (appended to: a node started again keeps its first words)."""
    cmd = jvm.command("kafka.Kafka", str(home / "server.properties"), classpath=f"{libs}/*",
                      options=(*JVM_OPTS, jvm.log4j_option(home / "log4j2.properties"), f"-Dkafka.logs.dir={home}"),
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

    @property
    def stdout_path(self) -> Path | None:
        return None if self.dir is None else self.dir / "stdout.log"

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
        _LIVE.add(self)
        try:
            self._write_config()
            format_storage([self.dir / "server.properties"], _cluster_id(), self.version)
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
        (self.dir / "data").mkdir()
        self.config = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.dir / "data"),
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",  # one __consumer_offsets partition loads fastest
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            **self.extra,
        }
        (self.dir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in self.config.items()))
        (self.dir / "log4j2.properties").write_text(LOG4J2.format(log=self.dir / "server.log"))

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
        """Until Metadata answers, FindCoordinator finds a coordinator (the first one creates
        __consumer_offsets; until it is loaded the answer is COORDINATOR_NOT_AVAILABLE) and
        that coordinator answers a group request."""
        from kcoord.protocol_client import Connection, ProtocolError

        last = "no answer yet"
        while True:
            if self.proc.poll() is not None:
                raise self._failure(f"exited with status {self.proc.returncode} while starting")
            if time.monotonic() > deadline:
                raise self._failure(f"did not answer within {self.start_timeout:g}s (last: {last})")
            try:
                with Connection(self.host, self.port, timeout=5.0, client_id="kcoord-reference-kafka") as conn:
                    meta = conn.call(3, conn.version(3, 4, 1), {"topics": [], "allow_auto_topic_creation": False})
                    if not meta.brokers:
                        last = "Metadata lists no broker"
                    else:
                        while time.monotonic() < deadline and self.proc.poll() is None:
                            found = conn.call(10, conn.version(10, 3), {"key": READY_GROUP, "key_type": 0})
                            if found.error_code == 0:
                                # FindCoordinator names the partition's leader before its
                                # coordinator has loaded it; group requests answer
                                # COORDINATOR_LOAD_IN_PROGRESS until then, which a test's first
                                # JoinGroup must not see (kcoord never says it).
                                described = conn.call(15, conn.version(15, 5), {"groups": [READY_GROUP]})
                                code = described.groups[0].error_code
                                if code == 0:
                                    return
                                last = f"DescribeGroups error {code}"
                            else:
                                last = f"FindCoordinator error {found.error_code}"
                            time.sleep(0.1)
                        continue
            except (OSError, ProtocolError) as err:
                last = f"{type(err).__name__}: {err}"
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM, up to 15 s for a clean shutdown, then SIGKILL; the temp dir goes."""
        proc, self.proc = self.proc, None
        if proc is not None:
            jvm.stop(proc, STOP_TIMEOUT)
        if self.dir is not None:
            if self.keep_logs_in is not None:
                self.keep_logs_in.mkdir(parents=True, exist_ok=True)
                for name in ("server.log", "stdout.log"):
                    if (self.dir / name).exists():
                        shutil.copy2(self.dir / name, self.keep_logs_in / name)
                if (self.keep_logs_in / "server.log").exists():
                    self._kept_log = self.keep_logs_in / "server.log"
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        _LIVE.discard(self)


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
