"""Carrying out a reassignment plan on any Kafka-compatible cluster, over the admin protocol
alone, in batches, resumably (`kcoord reassign apply`).

1. Read the cluster (Metadata, ListPartitionReassignments, DescribeLogDirs for sizes) and check
   the plan against it (kcoord.reassign.remaining): a stale plan changes nothing.
2. With a throttle, set Kafka's replication throttles as `kafka-reassign-partitions --execute
   --throttle` does (IncrementalAlterConfigs on each broker involved, and on the topics).
3. Each batch: recorded in the state file as begun, submitted (AlterPartitionReassignments,
   only its partitions not already under way), polled (ListPartitionReassignments, Metadata;
   DescribeLogDirs on the receiving brokers for the bytes copied) until every partition is on
   its target, then recorded as done. Before each batch its partitions are checked again, so a
   cluster changed meanwhile stops the apply.
4. Clear the throttles as `--verify` does once the plan is complete: on every broker, and on
   the plan's topics.

An interrupted apply leaves its reassignments going on in the cluster, and the state file as it
was after its last complete step (each write replaces the whole file); the next apply with the
same plan waits for those still under way and goes on with the rest.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from kcoord.dynamic_broker_config import write_durably
from kcoord.protocol_client import Admin
from kcoord.reassign.fetch import replica_sizes
from kcoord.reassign.model import Plan, PlanError, by_topic
from kcoord.reassign.remaining import DONE, TO_MOVE, UNDER_WAY, Key, Observed, Ongoing, batches, status
from kcoord.reassign.throttles import BROKER_CLEARED, BROKER_RATES, FOLLOWER_REPLICAS, LEADER_REPLICAS, \
    bytes_to_copy, moves, reassigning_brokers, topic_throttles
from wire.errors import ErrorCode

TOPIC, BROKER = 2, 4      # ConfigResource types
SET, DELETE = 0, 1        # IncrementalAlterConfigs operations
REQUEST_TIMEOUT_MS = 60_000
# Polls in which a partition is neither reassigning nor on its target before its reassignment
# counts as ended some other way (cancelled): Metadata may lag the controller for a moment.
ENDED_ELSEWHERE_POLLS = 10


class ApplyError(Exception):
    """The cluster refused a step, or a batch did not finish in time; the text is one line."""


@dataclass(frozen=True)
class Settings:
    batch: int = 10                 # partitions submitted together
    throttle: int | None = None     # bytes/s, Kafka's --throttle; None: no throttle set
    timeout: float | None = None    # seconds a batch may take; None: as long as it takes
    check_base: bool = True         # refuse a plan without kcoord's record of what it was made against
    poll_s: float = 0.5


@dataclass(frozen=True)
class Start:
    partitions: int                 # in the plan
    done: int                       # already on their targets
    under_way: int                  # reassigning to their targets already (waited for)
    batches_before: int             # batches an earlier apply finished
    batches: int                    # every batch, the earlier ones included
    bytes_total: int                # bytes this apply has to copy
    throttled_brokers: tuple[int, ...]
    throttle: int | None
    resumed: bool


@dataclass
class Progress:
    batch: int                      # the number of the batch under way, counting earlier applies'
    batches: int
    batch_partitions: list[Key]
    partitions_done: int
    partitions: int
    bytes_done: int
    bytes_total: int
    started: float = 0.0            # the batch's start, on the applier's clock


@dataclass(frozen=True)
class Summary:
    partitions: int                 # in the plan, all now on their targets
    moved: int                      # by this apply (its batches)
    batches: int                    # this apply's
    bytes_copied: int
    cleared_brokers: tuple[int, ...]
    cleared_topics: tuple[str, ...]


class Reporter(Protocol):
    live: bool   # wants progress() while a batch copies (DescribeLogDirs on every poll)

    def started(self, start: Start) -> None: ...

    def progress(self, progress: Progress) -> None: ...

    def batch_done(self, progress: Progress) -> None: ...


def fingerprint(plan: Plan) -> str:
    """What identifies a plan to its state file: the targets (not the file's spacing)."""
    canonical = json.dumps(sorted([t, p, list(r)] for (t, p), r in plan.targets.items()))
    return hashlib.sha256(canonical.encode()).hexdigest()


def default_state_path(plan_path: str) -> Path:
    path = Path(plan_path)
    stem = path.name[:-len(".json")] if path.name.endswith(".json") else path.name
    return path.with_name(stem + ".state.json")


@dataclass
class StateFile:
    """The batches an apply of one plan has begun and finished, kept beside the plan."""
    path: Path
    plan: str
    batches: list[dict] = field(default_factory=list)   # {"partitions": [[topic, partition]], "done": bool}
    existed: bool = False

    @classmethod
    def load(cls, path: Path, plan: str) -> "StateFile":
        """The state of `plan`'s apply, empty if none began; PlanError if the file is not a
        state file or records another plan."""
        try:
            text = path.read_text()
        except FileNotFoundError:
            return cls(path, plan)
        except OSError as err:
            raise PlanError(f"--state {path}: {err.strerror}") from None
        try:
            doc = json.loads(text)
            recorded, found = doc["plan"], [{"partitions": [(str(t), int(p)) for t, p in b["partitions"]],
                                             "done": bool(b["done"])} for b in doc["batches"]]
        except (ValueError, KeyError, TypeError) as err:
            raise PlanError(f"--state {path} is not the state of a kcoord reassign apply ({err})") from None
        if recorded != plan:
            raise PlanError(f"--state {path} records the apply of another plan: remove it, or name another --state")
        return cls(path, plan, found, existed=True)

    def save(self) -> None:
        try:
            write_durably(self.path, {"version": 1, "plan": self.plan, "batches": [
                {"partitions": [list(k) for k in b["partitions"]], "done": b["done"]} for b in self.batches]})
        except OSError as err:
            raise ApplyError(f"--state {self.path}: {err.strerror or err}") from None

    @property
    def done(self) -> int:
        return sum(1 for b in self.batches if b["done"])

    @property
    def interrupted(self) -> list[Key]:
        """The partitions of a batch begun and not recorded as done."""
        return list(self.batches[-1]["partitions"]) if self.batches and not self.batches[-1]["done"] else []

    def begin(self, keys: list[Key]) -> None:
        if self.interrupted:
            self.batches[-1] = {"partitions": list(keys), "done": False}
        else:
            self.batches.append({"partitions": list(keys), "done": False})
        self.save()

    def finish(self) -> None:
        self.batches[-1]["done"] = True
        self.save()


def _name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def _error(code: int, message: str | None) -> str:
    return ErrorCode(code).name + (f": {message}" if message else "")


def _topics(keys) -> list[str]:
    return list(by_topic(keys))


# ------------------------------------------------------------------ reading the cluster
def observe(admin: Admin, keys: list[Key] | None = None) -> Observed:
    """Metadata and ListPartitionReassignments for the topics of `keys` (None: every topic)."""
    meta = admin.metadata(None if keys is None else _topics(keys))
    replicas = {(t.name, p.partition_index): tuple(p.replica_nodes)
                for t in meta.topics if t.error_code == 0 for p in t.partitions}
    return Observed(frozenset(b.node_id for b in meta.brokers), replicas, list_reassignments(admin, keys),
                    meta.get("cluster_id"))


def list_reassignments(admin: Admin, keys: list[Key] | None = None) -> dict[Key, Ongoing]:
    conn = admin.bootstrap
    topics = None if keys is None else [{"name": t, "partition_indexes": ps} for t, ps in by_topic(keys).items()]
    answer = conn.call(46, conn.version(46, 0), {"timeout_ms": REQUEST_TIMEOUT_MS, "topics": topics})
    if answer.error_code:
        raise ApplyError(f"ListPartitionReassignments: {_error(answer.error_code, answer.error_message)}")
    return {(t.name, p.partition_index): Ongoing(tuple(p.replicas), tuple(p.adding_replicas),
                                                 tuple(p.removing_replicas))
            for t in answer.topics for p in t.partitions}


# ------------------------------------------------------------------ changing it
def alter_reassignments(admin: Admin, targets: dict[Key, tuple[int, ...]]) -> None:
    """AlterPartitionReassignments; ApplyError naming the first partition refused."""
    conn = admin.bootstrap
    answer = conn.call(45, conn.version(45, 0), {"timeout_ms": REQUEST_TIMEOUT_MS, "topics": [
        {"name": t, "partitions": [{"partition_index": p, "replicas": list(targets[(t, p)])} for p in ps]}
        for t, ps in by_topic(targets).items()]})
    if answer.error_code:
        raise ApplyError(f"AlterPartitionReassignments: {_error(answer.error_code, answer.error_message)}")
    for t in answer.responses:
        for p in t.partitions:
            if p.error_code:
                raise ApplyError(f"AlterPartitionReassignments refused {t.name}-{p.partition_index}: "
                                 f"{_error(p.error_code, p.error_message)}")


def alter_configs(admin: Admin, resource_type: int, name: str, ops: list[tuple[str, int, str | None]],
                  address: tuple[str, int] | None = None) -> None:
    """IncrementalAlterConfigs of one resource, sent to `address` (a broker's own configs go to
    that broker, as Kafka's admin client sends them) or the bootstrap broker."""
    conn = admin.connect(*address) if address else admin.bootstrap
    answer = conn.call(44, conn.version(44, 1), {"validate_only": False, "resources": [{
        "resource_type": resource_type, "resource_name": name,
        "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}]})
    for r in answer.responses:
        if r.error_code:
            kind = "broker" if resource_type == BROKER else "topic"
            raise ApplyError(f"IncrementalAlterConfigs on {kind} {name}: {_error(r.error_code, r.error_message)}")


# ------------------------------------------------------------------ the apply
class Applier:
    def __init__(self, admin: Admin, plan: Plan, state: StateFile, settings: Settings, reporter: Reporter,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.admin, self.plan, self.state, self.settings, self.reporter = admin, plan, state, settings, reporter
        self.clock, self.sleep = clock, sleep
        self.current: Progress | None = None   # the batch under way, for whoever interrupts it

    def run(self) -> Summary:
        seen = observe(self.admin)
        statuses = status(self.plan, seen, self.settings.check_base)
        if self.state.interrupted and all(statuses.get(k, DONE) == DONE for k in self.state.interrupted):
            self.state.finish()   # it finished after the apply that began it stopped
        left = batches(statuses, self.settings.batch, self.state.interrupted)
        pending = {k: t for k, t in self.plan.targets.items() if statuses[k] != DONE}
        # The plan's moves, and any other under way in its topics (their throttles are kept).
        topics = set(_topics(self.plan.targets))
        self.moves = moves(pending, seen.replicas, {k: o for k, o in seen.ongoing.items() if k[0] in topics})
        planned = {k: self.moves[k] for k in pending}
        self.brokers = self._addresses()
        self.sizes = self._sizes(list(pending))
        throttled = self._set_throttles() if self.settings.throttle is not None and pending else set()
        resumed = self.state.existed and bool(self.state.batches)
        before = self.state.done
        total_bytes = sum(bytes_to_copy(planned[k], self.sizes.get(k, 0)) for k in pending)
        self.reporter.started(Start(len(self.plan.targets), sum(1 for s in statuses.values() if s == DONE),
                                    sum(1 for s in statuses.values() if s == UNDER_WAY), before,
                                    before + len(left), total_bytes, tuple(sorted(throttled)),
                                    self.settings.throttle, resumed))
        done = sum(1 for s in statuses.values() if s == DONE)
        copied = 0
        for i, keys in enumerate(left):
            progress = Progress(before + i + 1, before + len(left), keys, done, len(self.plan.targets),
                                copied, total_bytes, self.clock())
            self.current = progress
            self._batch(keys, progress)
            done += len(keys)
            copied += sum(bytes_to_copy(self.moves[k], self.sizes.get(k, 0)) for k in keys)
            progress.partitions_done, progress.bytes_done = done, copied
            self.reporter.batch_done(progress)
        self.current = None
        brokers, topics = self._clear_throttles()
        moved = sum(len(keys) for keys in left)
        return Summary(len(self.plan.targets), moved, len(left), copied, brokers, topics)

    def _sizes(self, keys: list[Key]) -> dict[Key, int]:
        """Partition -> bytes, the largest its replicas report (0 where no broker can say)."""
        if not keys:
            return {}
        found, _ = replica_sizes(self.admin, self.brokers, keys)
        sizes: dict[Key, int] = {}
        for (t, p, _), size in found.items():
            sizes[(t, p)] = max(sizes.get((t, p), 0), size)
        return sizes

    def _addresses(self) -> dict[int, tuple[str, int]]:
        return {b.node_id: (b.host, b.port) for b in self.admin.metadata([]).brokers}

    # --- one batch
    def _part(self, keys: list[Key]) -> Plan:
        """The plan reduced to `keys`."""
        made = self.plan.made_against
        return Plan({k: self.plan.targets[k] for k in keys},
                    None if made is None else {k: made[k] for k in keys if k in made}, self.plan.cluster_id)

    def _status(self, keys: list[Key], check_base: bool) -> tuple[dict[Key, str], Observed]:
        """The batch's partitions now; PlanError if the cluster moved away from the plan meanwhile."""
        seen = observe(self.admin, keys)
        try:
            return status(self._part(keys), seen, check_base), seen
        except PlanError as err:
            raise PlanError(f"{err} (found during the apply, in batch {self.current.batch})") from None

    def _batch(self, keys: list[Key], progress: Progress) -> None:
        statuses, _ = self._status(keys, self.settings.check_base)
        self.state.begin(keys)
        submit = {k: self.plan.targets[k] for k in keys if statuses[k] == TO_MOVE}
        if submit:
            alter_reassignments(self.admin, submit)
        self._wait(keys, progress)
        self.state.finish()

    def _wait(self, keys: list[Key], progress: Progress) -> None:
        base_bytes = progress.bytes_done
        base_done = progress.partitions_done
        strays: dict[Key, int] = {}
        while True:
            # Submitted, a partition is under way or done; neither (for a few polls, Metadata may
            # lag), its reassignment ended some other way.
            statuses, seen = self._status(keys, check_base=False)
            left = [k for k in keys if statuses[k] != DONE]
            for k in left:
                strays[k] = strays.get(k, 0) + 1 if statuses[k] == TO_MOVE else 0
                if strays[k] >= ENDED_ELSEWHERE_POLLS:
                    raise ApplyError(f"the reassignment of {_name(k)} ended with replicas "
                                     f"{list(seen.replicas.get(k, ()))}, not the plan's {list(self.plan.targets[k])} "
                                     "(cancelled?)")
            if not left:
                return
            if self.reporter.live:
                progress.partitions_done = base_done + len(keys) - len(left)
                progress.bytes_done = base_bytes + self._copied(keys, left)
                self.reporter.progress(progress)
            if self.settings.timeout is not None and self.clock() - progress.started > self.settings.timeout:
                raise ApplyError(f"batch {progress.batch}/{progress.batches} did not finish within --timeout "
                                 f"{self.settings.timeout:g} s ({', '.join(map(_name, left))} still moving); "
                                 "its reassignments go on: run the same command again to wait for them")
            self.sleep(self.settings.poll_s)

    def _copied(self, keys: list[Key], left: list[Key]) -> int:
        """Bytes of the batch copied so far: all of each finished partition's, and what each
        replica being added reports (DescribeLogDirs on its broker)."""
        total = sum(bytes_to_copy(self.moves[k], self.sizes.get(k, 0)) for k in keys if k not in left)
        receiving = {b for k in left for b in self.moves[k].destinations}
        found, _ = replica_sizes(self.admin, {b: a for b, a in self.brokers.items() if b in receiving}, left)
        for k in left:
            size = self.sizes.get(k, 0)
            total += sum(min(found.get((k[0], k[1], b), 0), size) for b in self.moves[k].destinations)
        return total

    # --- throttles
    def _set_throttles(self) -> set[int]:
        """Kafka's --throttle: the topics' throttled replicas, then the rate on every broker a
        move reads from or writes to."""
        for topic, configs in topic_throttles(self.moves).items():
            alter_configs(self.admin, TOPIC, topic, [(n, SET, v) for n, v in configs.items()])
        brokers = reassigning_brokers(self.moves)
        rate = str(self.settings.throttle)
        for b in sorted(brokers):
            alter_configs(self.admin, BROKER, str(b), [(n, SET, rate) for n in BROKER_RATES], self.brokers[b])
        return brokers

    def _clear_throttles(self) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """As --verify once a plan is complete: every broker's throttle rates, the plan's topics'
        throttled replicas."""
        brokers = self._addresses()
        for b in sorted(brokers):
            alter_configs(self.admin, BROKER, str(b), [(n, DELETE, None) for n in BROKER_CLEARED], brokers[b])
        topics = _topics(self.plan.targets)
        for topic in topics:
            alter_configs(self.admin, TOPIC, topic, [(n, DELETE, None) for n in (LEADER_REPLICAS, FOLLOWER_REPLICAS)])
        return tuple(sorted(brokers)), tuple(topics)
