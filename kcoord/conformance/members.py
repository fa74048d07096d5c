"""Consumer-group members as real processes (Python clients or the Java driver)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from kcoord.conformance import javaclient
from kcoord.testing import jvm
from wire import codec

ROOT = Path(__file__).resolve().parents[2]


def _child_env() -> dict:
    # The driver runs as `python -m kcoord.conformance.member`: make kcoord importable even from a source tree.
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


# The clients that speak the consumer group protocol (KIP-848, group.protocol=consumer) here:
# kafka-clients 4.x and librdkafka (confluent-kafka >= 2.10). kafka-clients 3.9.1 only has
# its early-access version, kafka-python and aiokafka none.
CONSUMER_PROTOCOL_CLIENTS = ("java4", "confluent")


class Member:
    """One member process. `group_protocol="consumer"` joins with KIP-848's ConsumerGroupHeartbeat
    (CONSUMER_PROTOCOL_CLIENTS only): session timeout, heartbeat interval and assignor are then
    the broker's, and `session_ms`/`assignor` are not sent; `remote_assignor` names a server-side
    assignor (group.remote.assignor). A `topic` starting with "^" is a regex subscription: broker
    side (SubscribedTopicRegex) with the consumer protocol, unless `client_regex` (Java only:
    subscribe(Pattern), matched by the client). `commit` commits after the records it got
    (java, java4, confluent).

    `hold`: the process starts and loads its client, then waits for `go()` before it joins
    (`ready()` waits until it is loaded): a replacement made ready before its member is killed
    joins right after the kill, however long a loaded machine takes to start a JVM.

    Events carry partition numbers; for topics too, see `topic_partitions(event)`."""

    def __init__(self, client: str, bootstrap: str, topic: str, group: str, *, instance_id: str | None = None,
                 session_ms: int = 6000, assignor: str = "range", group_protocol: str = "classic",
                 remote_assignor: str | None = None, client_regex: bool = False, commit: bool = False,
                 hold: bool = False):
        if group_protocol not in ("classic", "consumer"):
            raise ValueError(f"group_protocol {group_protocol!r}: classic or consumer")
        if group_protocol == "consumer" and client not in CONSUMER_PROTOCOL_CLIENTS:
            raise ValueError(f"{client} cannot join with the consumer group protocol; "
                             f"these can: {', '.join(CONSUMER_PROTOCOL_CLIENTS)}")
        self.client, self.instance_id, self.group_protocol = client, instance_id, group_protocol
        if client in javaclient.CLIENT_VERSIONS:  # "java" (kafka-clients 3.9.1), "java4" (4.3.1)
            args = ["--bootstrap", bootstrap, "--topic-regex" if topic.startswith("^") else "--topic", topic,
                    "--group", group, "--count", "-1", "--max-seconds", "600"]
            if group_protocol == "consumer":
                args += ["--group-protocol", "consumer"]
                if remote_assignor:
                    args += ["--remote-assignor", remote_assignor]
            else:
                args += ["--session-ms", str(session_ms), "--assignor", assignor]
            if instance_id:
                args += ["--instance-id", instance_id]
            if client_regex:
                args += ["--client-regex"]
            if commit:
                args += ["--commit"]
            if hold:
                args += ["--hold"]
            cmd = javaclient.command_for(client, "consume", *args)
        else:
            if client_regex:
                raise ValueError("client_regex is the Java driver's (librdkafka decides itself)")
            cmd = [sys.executable, "-m", "kcoord.conformance.member", "--client", client, "--bootstrap", bootstrap,
                   "--topic", topic, "--group", group, "--session-ms", str(session_ms), "--assignor", assignor]
            if group_protocol == "consumer":
                cmd += ["--group-protocol", "consumer"]
                if remote_assignor:
                    cmd += ["--remote-assignor", remote_assignor]
            if instance_id:
                cmd += ["--instance-id", instance_id]
            if commit:
                cmd += ["--commit"]
            if hold:
                cmd += ["--hold"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if hold else None, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=_child_env())
        self.events: list[dict] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                for key in ("partitions", "owned"):  # the Java driver names partitions [topic, p]
                    if key in event:
                        if any(isinstance(p, list) for p in event[key]):
                            event[f"{key}_tp"] = sorted(tuple(p) for p in event[key])
                        event[key] = sorted(p[1] if isinstance(p, list) else p for p in event[key])
                with self._lock:
                    self.events.append(event)

    def wait_event(self, kind: str, timeout: float = 60, after: int = 0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for e in self.events[after:]:
                    if e["event"] == kind:
                        return e
            if self.proc.poll() is not None and kind not in ("closed", "fenced"):
                break
            time.sleep(0.05)
        raise AssertionError(f"{self.client} member: no {kind!r} event within {timeout}s; saw {self.events}")

    def ready(self, timeout: float = 120) -> None:
        """Wait until a `hold` member has loaded its client."""
        self.wait_event("ready", timeout)

    def go(self) -> None:
        """Let a `hold` member join."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def wait_for(self, predicate, timeout: float = 60) -> dict:
        """The first event satisfying `predicate`, waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = next((e for e in self.events if predicate(e)), None)
            if found is not None:
                return found
            time.sleep(0.05)
        raise AssertionError(f"{self.client} member: no matching event within {timeout}s; saw {self.events}")

    def last(self, kind: str) -> dict | None:
        """The latest event of `kind`, or None."""
        with self._lock:
            return next((e for e in reversed(self.events) if e["event"] == kind), None)

    def owned(self) -> list[int]:
        """The partitions this member holds now, as its latest assigned/revoked event says (the
        drivers without an "owned" field, kafka-python's and aiokafka's, are eager: an assignment
        replaces everything, a revocation leaves nothing)."""
        with self._lock:
            event = next((e for e in reversed(self.events) if e["event"] in ("assigned", "revoked")), None)
        if event is None:
            return []
        if "owned" in event:
            return event["owned"]
        return event["partitions"] if event["event"] == "assigned" else []

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM: the member leaves its group; SIGKILL if it has not ended after `timeout`."""
        jvm.stop(self.proc, timeout)

    def kill(self) -> None:
        jvm.kill(self.proc)


def assignments(app, group_id: str) -> dict[str, list[int]]:
    """Member id -> partitions, as the coordinator stores what the leader assigned."""
    group = app.coordinator.runtime.group(group_id)
    out = {}
    for member_id, member in group.members.items():
        data = member.assignment
        if not data:
            out[member_id] = []
            continue
        version = int.from_bytes(data[:2], "big", signed=True)
        layout = codec.compiled_message("ConsumerProtocolAssignment", min(max(version, 0), 3))
        value = layout.decode_from(io.BytesIO(data[2:]))  # clients may append bytes newer versions define
        out[member_id] = sorted(p for t in value.assigned_partitions for p in t.partitions)
    return out
