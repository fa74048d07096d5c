"""Kafka's VerifiableProducer and VerifiableConsumer (kafka-tools), the clients Kafka's own
system tests drive, run against any bootstrap:

    with VerifiableProducer(bootstrap, "t", max_messages=1000) as producer:
        producer.wait_done()
    consumer = VerifiableConsumer(bootstrap, "t", "g", assignment_strategy="range").start()
    wait_assigned([consumer], partitions=3)
    consumer.stop()           # SIGTERM: it commits (or not) and prints shutdown_complete
    consumer.kill()           # SIGKILL: no goodbye, the group notices after the session timeout

Each tool prints one JSON object a line; a reader thread parses them into `events` and
keeps the running views a test asserts on (assignment, consumed offsets, commits).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from kcoord.testing import jvm
from kcoord.testing.kafka_tools import classpath, tool_options
from kcoord.testing.reference_kafka import ReferenceKafkaUnavailable

CONSUMER_CLASS = "org.apache.kafka.tools.VerifiableConsumer"
PRODUCER_CLASS = "org.apache.kafka.tools.VerifiableProducer"
STRATEGIES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}

TopicPartition = tuple[str, int]


class _Tool:
    """One tool process with its stdout parsed on a reader thread."""

    cls = ""

    def __init__(self, name: str, args: list[str], properties: dict[str, str] | None = None):
        self.name = name
        self.args = args
        self.properties = dict(properties or {})
        self.proc: subprocess.Popen | None = None
        self.events: list[dict] = []
        self.lock = threading.Condition()
        self._reader: threading.Thread | None = None
        self._stderr = None
        self._config: Path | None = None

    def command(self) -> list[str]:
        cmd = jvm.command(self.cls, *self.args, classpath=classpath(), options=tool_options(),
                          error=ReferenceKafkaUnavailable)
        if self.properties:
            fd, name = tempfile.mkstemp(prefix=f"kcoord-{self.name}-", suffix=".properties")
            with os.fdopen(fd, "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in self.properties.items())
            self._config = Path(name)
            cmd += ["--command-config", name]
        return cmd

    def start(self):
        self.events = []
        self._reset()
        self._stderr = tempfile.TemporaryFile()
        self.proc = jvm.spawn(self.command(), stdout=subprocess.PIPE, stderr=self._stderr)
        self._reader = threading.Thread(target=self._read, args=(self.proc,), name=f"read-{self.name}",
                                        daemon=True)
        self._reader.start()
        return self

    def _read(self, proc: subprocess.Popen) -> None:
        for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:  # a stray non-JSON line (a log line on stdout): keep going
                continue
            with self.lock:
                self.events.append(event)
                self._on_event(event)
                self.lock.notify_all()
        with self.lock:
            self.lock.notify_all()

    def _reset(self) -> None:
        pass

    def _on_event(self, event: dict) -> None:
        pass

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def names(self) -> list[str]:
        with self.lock:
            return [e.get("name") for e in self.events]

    def wait(self, predicate, timeout: float, what: str = "condition"):
        """Block until predicate(self) is true (checked on each event); TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                result = predicate(self)
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.name}: no {what} within {timeout:g}s; last events "
                                       f"{[e.get('name') for e in self.events[-8:]]}; stderr: {self.stderr()[-800:]}")
                self.lock.wait(min(left, 0.5))

    def stderr(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def _end(self, sig: int, timeout: float) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        code = jvm.stop(proc, timeout, sig)
        if self._reader is not None:
            self._reader.join(5)
        return code

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM: the tool's shutdown hook closes the client cleanly."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self) -> int | None:
        """SIGKILL: the process vanishes without leaving its group."""
        return self._end(signal.SIGKILL, 10)

    def close(self) -> None:
        self.kill()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._config is not None:
            self._config.unlink(missing_ok=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


class VerifiableProducer(_Tool):
    """Sends the integers 0..max_messages-1 as values; `acked` holds what the broker took."""

    cls = PRODUCER_CLASS

    def __init__(self, bootstrap: str, topic: str, max_messages: int = -1, throughput: int = -1,
                 repeating_keys: int | None = None, name: str = "producer",
                 properties: dict[str, str] | None = None):
        args = ["--bootstrap-server", bootstrap, "--topic", topic,
                "--max-messages", str(max_messages), "--throughput", str(throughput)]
        if repeating_keys:  # keyed records spread over the partitions; unkeyed ones fill one at a time
            args += ["--repeating-keys", str(repeating_keys)]
        super().__init__(name, args, properties)
        self.max_messages = max_messages

    def _reset(self) -> None:
        self.acked: list[tuple[TopicPartition, int, str]] = []  # (tp, offset, value)
        self.failed = 0

    def _on_event(self, event: dict) -> None:
        if event.get("name") == "producer_send_success":
            self.acked.append(((event["topic"], event["partition"]), event["offset"], event["value"]))
        elif event.get("name") == "producer_send_error":
            self.failed += 1

    def wait_done(self, timeout: float = 60.0) -> None:
        self.wait(lambda p: "shutdown_complete" in [e.get("name") for e in p.events] or not p.alive,
                  timeout, "end of sending")
        self.proc.wait(10)

    def wait_acked(self, count: int, timeout: float = 60.0) -> None:
        self.wait(lambda p: len(p.acked) >= count, timeout, f"{count} acked records")

    def end_offsets(self) -> dict[TopicPartition, int]:
        """Per partition, one past the highest acked offset."""
        with self.lock:
            ends: dict[TopicPartition, int] = {}
            for tp, offset, _ in self.acked:
                ends[tp] = max(ends.get(tp, 0), offset + 1)
            return ends


class VerifiableConsumer(_Tool):
    """A classic-protocol consumer (auto-commit off unless asked: it commits after each
    batch it consumed), with the views Kafka's system tests keep of it."""

    cls = CONSUMER_CLASS

    def __init__(self, bootstrap: str, topic: str, group: str, *, instance_id: str | None = None,
                 assignment_strategy: str = "range", session_timeout_ms: int = 10000,
                 enable_auto_commit: bool = False, max_messages: int = -1, name: str | None = None,
                 properties: dict[str, str] | None = None):
        args = ["--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group,
                "--group-protocol", "classic", "--session-timeout", str(session_timeout_ms),
                "--assignment-strategy", STRATEGIES.get(assignment_strategy, assignment_strategy),
                "--max-messages", str(max_messages), "--reset-policy", "earliest"]
        if instance_id is not None:
            args += ["--group-instance-id", instance_id]
        if enable_auto_commit:
            args.append("--enable-autocommit")
        super().__init__(name or instance_id or "consumer", args, properties)
        self.topic = topic
        self.group = group
        self.instance_id = instance_id
        self._reset()

    def _reset(self) -> None:
        self.assignment: set[TopicPartition] = set()
        self.assignments: list[frozenset[TopicPartition]] = []  # after each assigned/revoked event
        self.rebalances = 0  # partitions_assigned events (incremental ones count too)
        self.position: dict[TopicPartition, int] = {}  # next offset this process will read
        self.consumed: dict[TopicPartition, list[tuple[int, int]]] = defaultdict(list)  # (min, max) ranges
        self.last_commit: dict[TopicPartition, int] = {}
        self.commits: list[dict[TopicPartition, int]] = []
        self.commit_errors: list[str] = []

    def _on_event(self, event: dict) -> None:
        name = event.get("name")
        tps = {(p["topic"], p["partition"]) for p in event.get("partitions", ())}
        if name == "partitions_assigned":
            # The eager protocol revokes everything first; the cooperative one adds to what is kept.
            self.assignment |= tps
            self.rebalances += 1
            self.assignments.append(frozenset(self.assignment))
        elif name == "partitions_revoked":
            self.assignment -= tps
            for tp in tps:
                self.position.pop(tp, None)
            self.assignments.append(frozenset(self.assignment))
        elif name == "records_consumed":
            for p in event.get("partitions", ()):
                tp = (p["topic"], p["partition"])
                self.consumed[tp].append((p["minOffset"], p["maxOffset"]))
                self.position[tp] = p["maxOffset"] + 1
        elif name == "offsets_committed":
            if event.get("success", True):
                offsets = {(o["topic"], o["partition"]): o["offset"] for o in event.get("offsets") or ()}
                self.last_commit.update(offsets)
                self.commits.append(offsets)
            else:
                self.commit_errors.append(event.get("error", ""))

    # ---- views (under the lock: the reader thread updates them) ----
    def current_assignment(self) -> set[TopicPartition]:
        with self.lock:
            return set(self.assignment)

    def committed(self) -> dict[TopicPartition, int]:
        with self.lock:
            return dict(self.last_commit)

    def consumed_offsets(self) -> set[tuple[TopicPartition, int]]:
        """Every (partition, offset) this process consumed (repeats fold together)."""
        with self.lock:
            return {(tp, off) for tp, ranges in self.consumed.items() for lo, hi in ranges
                    for off in range(lo, hi + 1)}


# The clients a ClientConsumer can be: the Python ones through kcoord's driver, Kafka's Java
# client 3.9.1 ("java") and 4.3.1 ("java4") through kcoord's Java driver.
CLIENTS = ("kafka-python", "aiokafka", "confluent", "java", "java4")


class ClientConsumer(VerifiableConsumer):
    """A group member of any stock client, reporting as Kafka's VerifiableConsumer reports (it
    commits synchronously after each batch): the same views and helpers serve every client.
    `group_protocol="consumer"` (KIP-848) for confluent and java4. `member_ids` lists each
    (member id, generation) the member reported after an assignment (the generation is None
    where the client does not tell it, and the member epoch with the consumer protocol)."""

    def __init__(self, client: str, bootstrap: str, topic: str, group: str, *, instance_id: str | None = None,
                 session_timeout_ms: int = 10000, group_protocol: str = "classic", name: str | None = None):
        if client not in CLIENTS:
            raise ValueError(f"client {client!r}: one of {', '.join(CLIENTS)}")
        if group_protocol == "consumer" and client not in ("confluent", "java4"):
            raise ValueError(f"{client} has no consumer group protocol; confluent and java4 have")
        _Tool.__init__(self, name or instance_id or client, [], None)
        self.client, self.group_protocol = client, group_protocol
        self.bootstrap, self.topic, self.group, self.instance_id = bootstrap, topic, group, instance_id
        self.session_timeout_ms = session_timeout_ms
        self._reset()

    def command(self) -> list[str]:
        args = ["--bootstrap", self.bootstrap, "--topic", self.topic, "--group", self.group,
                "--session-ms", str(self.session_timeout_ms), "--group-protocol", self.group_protocol]
        if self.instance_id is not None:
            args += ["--instance-id", self.instance_id]
        if self.client in ("java", "java4"):
            from kcoord.conformance import javaclient

            return javaclient.command_for(self.client, "verify", *args)
        return [sys.executable, "-m", "kcoord.conformance.verifiable_member", "--client", self.client, *args]

    def start(self):
        from kcoord.conformance.members import _child_env

        self.events = []
        self._reset()
        self._stderr = tempfile.TemporaryFile()
        self.proc = jvm.spawn(self.command(), stdout=subprocess.PIPE, stderr=self._stderr, env=_child_env())
        self._reader = threading.Thread(target=self._read, args=(self.proc,), name=f"read-{self.name}", daemon=True)
        self._reader.start()
        return self

    def _reset(self) -> None:
        super()._reset()
        self.member_ids: list[tuple[str, int | None]] = []

    def _on_event(self, event: dict) -> None:
        super()._on_event(event)
        if event.get("name") == "group_member":
            self.member_ids.append((event.get("member_id"), event.get("generation")))


def _group_union(consumers: list[VerifiableConsumer]) -> list[TopicPartition]:
    seen: list[TopicPartition] = []
    for c in consumers:
        seen.extend(c.current_assignment())
    return seen


def wait_assigned(consumers: list[VerifiableConsumer], partitions: int, timeout: float = 60.0,
                  each: bool = True) -> dict[str, set[TopicPartition]]:
    """Block until the consumers together own `partitions` partitions, each exactly once
    (and with `each`, every consumer owns at least one when there are enough to go round);
    returns name -> assignment."""
    deadline = time.monotonic() + timeout
    while True:
        owned = _group_union(consumers)
        ok = len(owned) == partitions and len(set(owned)) == partitions
        if ok and each and partitions >= len(consumers):
            ok = all(c.current_assignment() for c in consumers)
        if ok:
            return {c.name: c.current_assignment() for c in consumers}
        if time.monotonic() > deadline:
            view = {c.name: sorted(c.current_assignment()) for c in consumers}
            raise TimeoutError(f"consumers did not cover {partitions} partitions within {timeout:g}s: {view}")
        for c in consumers:
            if not c.alive:
                raise RuntimeError(f"{c.name} exited ({c.proc.returncode}): {c.stderr()[-1500:]}")
        time.sleep(0.1)


def consumed_union(consumers) -> set[tuple[TopicPartition, int]]:
    seen: set[tuple[TopicPartition, int]] = set()
    for c in consumers:
        seen |= c.consumed_offsets()
    return seen


def wait_consumed(consumers, ends: dict[TopicPartition, int], timeout: float = 60.0) -> None:
    """Block until every offset below `ends` has been consumed by one of the consumers
    (across restarts a consumer's history is lost, so the tests keep retired processes too)."""
    want = {(tp, off) for tp, end in ends.items() for off in range(end)}
    deadline = time.monotonic() + timeout
    while True:
        missing = want - consumed_union(consumers)
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(missing)} of {len(want)} records never consumed, e.g. {sorted(missing)[:5]}")
        time.sleep(0.2)
