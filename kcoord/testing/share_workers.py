"""Share-group workers, each a JVM running Kafka's KafkaShareConsumer (4.3.1), against any bootstrap:
the harness of the share group scenarios (KIP-932).

    with ShareWorkers(bootstrap, "queue", "jobs", {"share.acknowledgement.mode": "explicit"}) as w:
        a, b = w.add(2)
        w.wait_for(lambda: w.accepted() >= {0, 1, 2}, "all accepted")
        w.freeze(a)      # SIGSTOP: connected, silent; the broker keeps its records until the lock ends
        w.kill(b)        # kill -9: the connection closes; the broker releases b's records at once
        w.deliveries()   # (worker, offset, delivery count, value) in the order each worker saw them

A record's value says what the worker does with it (tests/integration/java/KcoordShareWorker.java):
"release..." is released, "reject..." rejected, "hold..." kept past the lock (renewed or not),
anything else accepted. The program prints JSON lines, read back from each worker's log.
Timings are recorded, never asserted as upper bounds: a JVM takes seconds to start under load.
"""
from __future__ import annotations

import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kcoord.conformance.javaclient import classpath, program_command
from kcoord.testing import jvm

SOURCE = Path(__file__).resolve().parents[2] / "tests" / "integration" / "java" / "KcoordShareWorker.java"
CLIENT_VERSION = "4.3.1"
STOP_TIMEOUT = 30.0


@dataclass
class ShareWorker:
    name: str
    log: Path
    proc: jvm.JvmProcess
    frozen: bool = False

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def events(self) -> list[dict]:
        return jvm.json_events(self.log)

    def log_tail(self, lines: int = 30) -> str:
        return jvm.tail(self.log, lines)


class ShareWorkers:
    def __init__(self, bootstrap: str, group_id: str, topic: str, config: dict[str, str] | None = None,
                 home: Path | None = None):
        self.command = program_command(SOURCE, "share-worker", classpath(CLIENT_VERSION))
        self.bootstrap, self.group_id, self.topic = bootstrap, group_id, topic
        self.config = dict(config or {})
        self.home = home or Path(tempfile.mkdtemp(prefix="kcoord-share-workers-"))
        self._owns_home = home is None
        self.workers: list[ShareWorker] = []

    def add(self, n: int = 1, **options: str) -> list[ShareWorker]:
        """Start `n` workers; `options` (hold_ms=..., renew_every_ms=..., process_ms=..., or consumer
        properties with dots spelled as underscores) for these only."""
        added = []
        for _ in range(n):
            name = f"w{len(self.workers)}"
            props = {"bootstrap.servers": self.bootstrap, "group.id": self.group_id, "client.id": name,
                     **self.config, **{k.replace("_", "."): str(v) for k, v in options.items()}}
            log = self.home / f"{name}.log"
            proc = jvm.spawn([*self.command, f"topic={self.topic}", *(f"{k}={v}" for k, v in props.items())], log=log)
            worker = ShareWorker(name, log, proc)
            self.workers.append(worker)
            added.append(worker)
        return added

    def stop(self, worker: ShareWorker) -> int:
        """SIGTERM: a clean close, which acknowledges what is pending and leaves the group."""
        if worker.frozen:
            self.thaw(worker)
        return jvm.stop(worker.proc, STOP_TIMEOUT, signal.SIGTERM)

    def kill(self, worker: ShareWorker) -> int:
        """kill -9: no close; the broker sees the connection end."""
        return jvm.kill(worker.proc)

    def freeze(self, worker: ShareWorker) -> None:
        """SIGSTOP: the process stops but its connections stay open (a stuck worker)."""
        jvm.send(worker.proc, signal.SIGSTOP)
        worker.frozen = True

    def thaw(self, worker: ShareWorker) -> None:
        jvm.send(worker.proc, signal.SIGCONT)
        worker.frozen = False

    def close(self) -> None:
        for w in self.workers:
            if w.frozen:
                self.thaw(w)
        jvm.stop_all([w.proc for w in self.workers], STOP_TIMEOUT, signal.SIGTERM)
        if self._owns_home:
            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> "ShareWorkers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- views -----------------------------------------------------------------------------

    def wait_polling(self, workers: list[ShareWorker] | None = None, timeout: float = 120.0) -> float:
        """Until every one of `workers` (all by default) has returned from its first poll: a JVM
        that starts late under load would otherwise find the records already taken."""
        ws = self.workers if workers is None else workers
        return self.wait_for(lambda: all(any(e["event"] == "polling" for e in w.events()) for w in ws),
                             "every worker polling", timeout)

    def deliveries(self) -> list[tuple[str, int, int, str]]:
        """(worker, offset, delivery count, value) for every record a worker received."""
        return [(w.name, e["offset"], e["delivery"], e["value"]) for w in self.workers for e in w.events()
                if e["event"] == "record"]

    def acks(self, kind: str | None = None) -> list[tuple[str, int, str]]:
        """(worker, offset, type) for every acknowledgement a worker gave (of `kind` only)."""
        return [(w.name, e["offset"], e["type"]) for w in self.workers for e in w.events()
                if e["event"] == "ack" and (kind is None or e["type"] == kind)]

    def accepted(self) -> set[int]:
        return {o for _, o, _ in self.acks("accept")}

    def committed(self) -> set[int]:
        """Offsets whose acceptance the broker confirmed: a commitSync that came back without a
        failure followed it (an acceptance a worker printed is only the client's intent)."""
        out: set[int] = set()
        for w in self.workers:
            pending: set[int] = set()
            for e in w.events():
                if e["event"] == "ack" and e["type"] == "accept":
                    pending.add(e["offset"])
                elif e["event"] == "commit":
                    if not e["failed"]:
                        out |= pending
                    pending = set()
        return out

    def commit_failures(self) -> list[str]:
        return [f"{w.name}: {f}" for w in self.workers for e in w.events() if e["event"] == "commit"
                for f in e["failed"]]

    def lock_ms(self) -> set[int]:
        return {e["ms"] for w in self.workers for e in w.events() if e["event"] == "lock"}

    def wait_for(self, check: Callable[[], object], label: str, timeout: float = 90.0) -> float:
        """Seconds until `check()` is true; fails with every worker's log tail after `timeout`."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if check():
                return time.monotonic() - start
            dead = [w for w in self.workers if not w.alive and not w.frozen and w.proc.returncode not in (0, -9, 143)]
            if dead:
                break
            time.sleep(0.2)
        logs = "\n".join(f"--- {w.name} (exit {w.proc.poll()})\n{w.log_tail()}" for w in self.workers)
        raise AssertionError(f"{label}: not reached after {time.monotonic() - start:.0f}s\n{logs}")
