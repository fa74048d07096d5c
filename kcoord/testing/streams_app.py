"""A cluster of Kafka Streams instances, each its own JVM with its own state directory, against any
bootstrap: the harness of the streams group scenarios (KIP-1071, and the classic protocol).

    app = StreamsApp(source, bootstrap, "app-1", "in", "out", tasks=task_ids(6),
                     config={"group.protocol": "streams"})
    a, b, c = app.add(3)                       # started together
    app.wait_stable("start 3")                 # all RUNNING, every task active exactly once
    app.add(1); app.wait_stable("scale out to 4")
    app.stop(a)                                # SIGTERM: a clean close, which leaves the group
    app.kill(b); app.restart(b)                # kill -9; the same state dir and instance id
    app.active()                               # instance name -> the active task ids it holds
    app.steps                                  # Step(label, seconds, moved) per wait_stable

`source` is the Streams program (tests/integration/java/KcoordStreamsGroupsApp.java), compiled
once against Kafka Streams' jars (kcoord.testing.streams). It prints JSON lines: its
KafkaStreams.State changes and the active and standby tasks it holds whenever they change; the
harness reads them from each run's log (stdout and stderr together) in the app's directory.
Timings are recorded, never asserted: under load a JVM takes many seconds to start.
"""
from __future__ import annotations

import math
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kcoord.conformance.javaclient import program_command
from kcoord.testing import jvm, streams

START_TIMEOUT = 180.0
STOP_TIMEOUT = 60.0
# How long a stable view must last before it counts: one poll of every instance's tasks
# (200 ms) cannot tell a settled group from one whose next assignment is on its way.
SETTLE_SECONDS = 1.5


def task_ids(partitions: int, subtopologies: int = 2) -> set[str]:
    """The task ids of a topology whose `subtopologies` each read `partitions` partitions."""
    return {f"{s}_{p}" for s in range(subtopologies) for p in range(partitions)}


@dataclass
class StreamsInstance:
    name: str
    state_dir: Path
    instance_id: str | None
    runs: int = 0
    proc: jvm.JvmProcess | None = None
    log: Path | None = None
    stopped: bool = False         # by the harness (stop, kill): its end is no failure

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def events(self) -> list[dict]:
        """This run's events, in order."""
        return jvm.json_events(self.log)

    def state(self) -> str | None:
        return next((e["state"] for e in reversed(self.events()) if e["event"] == "state"), None)

    def tasks(self) -> tuple[set[str], set[str]]:
        """(active, standby) task ids as this run last reported them."""
        last = next((e for e in reversed(self.events()) if e["event"] == "tasks"), None)
        return (set(last["active"]), set(last["standby"])) if last else (set(), set())

    def errors(self) -> list[dict]:
        return [e for e in self.events() if e["event"] == "error"]

    def log_tail(self, lines: int = 25) -> str:
        return jvm.tail(self.log, lines)


@dataclass
class Step:
    """One change and how long the group took to run again after it (wait_stable)."""
    label: str
    seconds: float
    moved: int                    # active tasks whose instance differs from before the change
    active: dict[str, list[str]] = field(default_factory=dict)


class StreamsApp:
    def __init__(self, source: Path, bootstrap: str, application_id: str, input_topic: str, output_topic: str,
                 *, tasks: set[str], config: dict[str, str] | None = None, static: bool = False,
                 standby_tasks: set[str] | None = None, home: Path | None = None):
        """`tasks`: every task id the topology has (task_ids()); `standby_tasks`: those that must
        also have a standby on another instance for the group to count as stable. `config`:
        StreamsConfig properties for every instance; `static`: each instance gets a
        group.instance.id of its own (the classic protocol's static membership)."""
        self.command = program_command(source, "streams-groups", streams.classpath())
        self.bootstrap, self.application_id = bootstrap, application_id
        self.input_topic, self.output_topic = input_topic, output_topic
        self.tasks, self.standby_tasks = set(tasks), set(standby_tasks or ())
        self.config, self.static = dict(config or {}), static
        self.home = home or Path(tempfile.mkdtemp(prefix="kcoord-streams-app-"))
        self._owns_home = home is None
        self.instances: list[StreamsInstance] = []
        self.steps: list[Step] = []
        self._changed_at = time.monotonic()
        self._stable_at = 0.0
        self._before: dict[str, set[str]] = {}

    # ---- changes ---------------------------------------------------------------------------

    def _change(self) -> None:
        """Remember when the group was last changed and who held what then (for Step.moved)."""
        if self._changed_at <= self._stable_at:
            self._before = self.active()
            self._changed_at = time.monotonic()

    def _spawn(self, instance: StreamsInstance) -> None:
        instance.runs += 1
        instance.stopped = False
        instance.log = self.home / f"{instance.name}-run{instance.runs}.log"
        props = {"bootstrap.servers": self.bootstrap, "application.id": self.application_id,
                 "state.dir": str(instance.state_dir), **self.config}
        if instance.instance_id:
            props["group.instance.id"] = instance.instance_id
        args = [f"input={self.input_topic}", f"output={self.output_topic}", *(f"{k}={v}" for k, v in props.items())]
        instance.proc = jvm.spawn([*self.command, *args], log=instance.log)

    def add(self, n: int = 1) -> list[StreamsInstance]:
        """Start `n` new instances at once."""
        self._change()
        added = []
        for _ in range(n):
            name = f"i{len(self.instances)}"
            instance = StreamsInstance(name, self.home / f"state-{name}", f"{self.application_id}-{name}"
                                       if self.static else None)
            instance.state_dir.mkdir(parents=True)
            self.instances.append(instance)
            self._spawn(instance)
            added.append(instance)
        return added

    def stop(self, instance: StreamsInstance, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM: the program's shutdown hook closes Streams cleanly, which leaves the group."""
        self._change()
        instance.stopped = True
        return jvm.stop(instance.proc, timeout, signal.SIGTERM)

    def kill(self, instance: StreamsInstance) -> int:
        """kill -9: the group learns of it only when the member's session times out."""
        self._change()
        instance.stopped = True
        return jvm.kill(instance.proc)

    def restart(self, instance: StreamsInstance) -> None:
        """Start a stopped or killed instance again: its state dir, its instance id."""
        if instance.alive:
            raise ValueError(f"{instance.name} is still running")
        self._change()
        self._spawn(instance)

    def close(self, clean: bool = True) -> None:
        """Stop every instance: SIGTERM (a clean close), or with `clean=False` SIGKILL, since an
        instance whose stream thread failed can take most of a minute to close."""
        procs = [i.proc for i in self.instances if i.proc is not None]
        jvm.stop_all(procs, STOP_TIMEOUT, signal.SIGTERM if clean else signal.SIGKILL)
        if self._owns_home:
            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> "StreamsApp":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(clean=exc_type is None)

    # ---- views -----------------------------------------------------------------------------

    def live(self) -> list[StreamsInstance]:
        return [i for i in self.instances if i.alive]

    def active(self) -> dict[str, set[str]]:
        """Live instance name -> the active task ids it reports."""
        return {i.name: i.tasks()[0] for i in self.live()}

    def standby(self) -> dict[str, set[str]]:
        return {i.name: i.tasks()[1] for i in self.live()}

    def owner(self, task: str, standby: bool = False) -> str | None:
        held = self.standby() if standby else self.active()
        return next((name for name, tasks in held.items() if task in tasks), None)

    def _problem(self, balanced: bool) -> str | None:
        """Why the group is not stable now, or None: every live instance RUNNING, every task
        active on exactly one of them (and each of `standby_tasks` standby on another), and
        with `balanced` each holding its even share of active tasks (floor or ceil)."""
        live = self.live()
        if not live:
            return "no instance is running"
        for instance in live:
            if instance.errors():
                raise AssertionError(f"{instance.name} failed: {instance.errors()}\n{instance.log_tail()}")
            if instance.state() != "RUNNING":
                return f"{instance.name} is {instance.state()}"
        active = self.active()
        held = [t for tasks in active.values() for t in tasks]
        if sorted(held) != sorted(self.tasks):
            return f"active tasks {sorted(held)} are not each of {sorted(self.tasks)} once"
        if balanced:
            low, high = len(self.tasks) // len(live), math.ceil(len(self.tasks) / len(live))
            uneven = {n: len(t) for n, t in active.items() if not low <= len(t) <= high}
            if uneven:
                return f"uneven active tasks {uneven}"
        standby = self.standby()
        for task in self.standby_tasks:
            holders = [n for n, tasks in standby.items() if task in tasks]
            if not holders or self.owner(task) in holders:
                return f"task {task} has standbys on {holders}, active on {self.owner(task)}"
        return None

    def wait_stable(self, label: str, timeout: float = START_TIMEOUT, balanced: bool = True) -> Step:
        """Wait until the group is stable (see _problem) for SETTLE_SECONDS; the Step it took
        since the last change (recorded in `steps`). AssertionError with every instance's
        log tail if it is not within `timeout` or an instance dies or fails."""
        deadline, stable_since, problem = time.monotonic() + timeout, None, None
        while time.monotonic() < deadline:
            ended = [i for i in self.instances if not i.stopped and i.proc is not None and not i.alive]
            if ended:  # on its own: a fatal error (ERROR state) or a crash
                raise AssertionError(f"{ended[0].name} exited ({ended[0].proc.returncode}): {ended[0].errors()}\n"
                                     f"{ended[0].log_tail()}")
            problem = self._problem(balanced)
            now = time.monotonic()
            if problem is not None:
                stable_since = None
            elif stable_since is None:
                stable_since = now
            elif now - stable_since >= SETTLE_SECONDS:
                active = self.active()
                before = {t: n for n, tasks in self._before.items() for t in tasks}
                moved = sum(1 for n, tasks in active.items() for t in tasks if before.get(t) != n)
                step = Step(label, round(stable_since - self._changed_at, 1), moved,
                            {n: sorted(t) for n, t in active.items()})
                self.steps.append(step)
                self._stable_at = now
                return step
            time.sleep(0.2)
        tails = "\n".join(f"--- {i.name} ({'alive' if i.alive else 'down'}):\n{i.log_tail(12)}" for i in self.instances)
        raise AssertionError(f"{label}: not stable within {timeout}s: {problem}\n{tails}")
