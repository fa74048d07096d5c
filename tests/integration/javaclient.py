"""Test-only Java programs beside the consumer driver of `kcoord check`
(`kcoord.conformance.javaclient`, whose jar lookup and build they share):
KcoordJavaLogin joins a group with given security settings; KcoordTxnClient drives
transactional producers and read_committed consumers on either client version."""
from __future__ import annotations

import collections
import json
import subprocess
import threading
import time
from pathlib import Path

from kcoord.conformance.javaclient import CLIENT_VERSIONS, classpath, program_command
from kcoord.testing import jvm

SOURCE = Path(__file__).with_name("java") / "KcoordJavaLogin.java"
TXN_SOURCE = Path(__file__).with_name("java") / "KcoordTxnClient.java"


def login_command(bootstrap: str, topic: str, group: str, max_seconds: int, properties: dict) -> list[str]:
    """KcoordJavaLogin: a consumer with the given client properties (security settings) joins a group."""
    return program_command(SOURCE, "login", classpath(), bootstrap, topic, group, str(max_seconds),
                           *(f"{k}={v}" for k, v in properties.items()))


def login(bootstrap: str, topic: str, group: str, properties: dict, max_seconds: int = 60) -> list[dict]:
    proc = subprocess.run(login_command(bootstrap, topic, group, max_seconds, properties), capture_output=True,
                          text=True, timeout=max_seconds + 60)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not events:
        raise RuntimeError(f"java login printed nothing ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return events


def txn_command(client: str, action: str, **options) -> list[str]:
    """KcoordTxnClient `action` on kafka-clients of `client` ("java": 3.9.1, "java4": 4.3.1);
    options by their Python names (transactional_id= is --transactional-id)."""
    version = CLIENT_VERSIONS[client]
    args = [part for name, value in options.items() for part in (f"--{name.replace('_', '-')}", str(value))]
    return program_command(TXN_SOURCE, f"txn-{version}", classpath(version), action, *args)


def txn_run(client: str, action: str, timeout: float = 120, **options) -> list[dict]:
    """Run one KcoordTxnClient action to its end; its JSON events."""
    proc = subprocess.run(txn_command(client, action, **options), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"KcoordTxnClient {client} {action} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


class RunningProgram:
    """A Java test program in the background whose stdout JSON lines are collected as they come."""

    def __init__(self, cmd: list[str], name: str):
        self.name = name
        self.proc = jvm.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self._stderr: collections.deque[str] = collections.deque(maxlen=60)
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        # Drained as it comes: a program logging more than a pipe holds would otherwise stall.
        threading.Thread(target=self._stderr.extend, args=(self.proc.stderr,), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("{"):
                with self._lock:
                    self.events.append(json.loads(line))

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self.events)

    def wait_for(self, predicate, timeout: float = 60) -> dict:
        """The first event satisfying `predicate`; AssertionError if the program ends or `timeout`
        passes without one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((e for e in self.snapshot() if predicate(e)), None)
            if found is not None:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{self.name}: no matching event within {timeout}s (exit {self.proc.poll()}); "
                             f"saw {self.snapshot()[-20:]}\n{self.stderr_tail()}")

    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-3000:]

    def kill(self) -> None:
        """kill -9."""
        self.proc.kill()
        self.proc.wait(30)

    def finish(self, timeout: float) -> list[dict]:
        """Wait for the program's own end (killed if it overstays: AssertionError); its events."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not finish within {timeout}s; saw {self.snapshot()[-20:]}") from None
        if self.proc.returncode != 0:
            raise AssertionError(f"{self.name} failed ({self.proc.returncode}): {self.snapshot()[-20:]}\n"
                                 f"{self.stderr_tail()}")
        return self.snapshot()


def program_start(source: Path, label: str, cp: str, *args: str) -> RunningProgram:
    """Start a Java test program (compiled once against `cp`) in the background."""
    return RunningProgram(program_command(source, label, cp, *args), source.stem)


def txn_start(client: str, action: str, **options) -> RunningProgram:
    """Start a KcoordTxnClient action in the background."""
    return RunningProgram(txn_command(client, action, **options), f"KcoordTxnClient {client} {action}")
