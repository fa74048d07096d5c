"""The `sticky` task assignor of streams groups (KIP-1071), as Kafka 4.3.1's
StickyTaskAssignor computes it: the broker's only streams assignor.

A task is (subtopology, partition); every subtopology has `max_num_input_partitions`
tasks, each assigned once as an active task; a stateful subtopology's tasks also get up
to `num.standby.replicas` standby tasks, never on a process (a Kafka Streams instance,
`process_id`) that already has that task. Warm-up tasks are never assigned.

Active tasks, balanced per member (a quota of ceil(tasks / members), recomputed as
members fill up), sticky in this order:
1. a task stays with the member that has it active now, if that member is below quota;
2. else it goes to a member that has it as a standby now (the least loaded of them);
3. the rest go, subtopology by subtopology, to the least loaded process (tasks per
   member of the process) and there to its least loaded member.
Standby tasks then follow the same pattern: to the member that had the task active, then
to one that had it as a standby, then to the least loaded processes without it. Too few
processes leave standby replicas unassigned (Kafka logs a warning; so does kcoord).

Kafka breaks ties by the iteration order of Java hash maps (members, processes, a
process's members) and by the shape of java.util.PriorityQueue heaps; kcoord emulates
both (kcoord.coordinator.javaorder), so the result is Kafka's task for task.

Member order: Kafka's TargetAssignmentBuilder puts the group's members, walked in their
TimelineHashMap order, into a `new HashMap<>()`, then the member whose heartbeat triggered
the assignment (streams groups never remove one there). Pass `members` in that put order
(kcoord.coordinator.javaorder.TimelineHashTable, the heartbeating member last): the assignor
walks them in the HashMap's order itself. Only members whose ids fall into the same hash
bucket keep the caller's relative order, so most orders give the same answer.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Mapping, Protocol

from kcoord.coordinator.javaorder import (JavaHashTable, JavaPriorityQueue, hashmap_order, java_int, java_int_div,
                                          java_int_rem, string_compare_key, string_hash)

log = logging.getLogger(__name__)

TaskSet = dict[str, set[int]]        # subtopology id -> partitions (task = (subtopology, partition))
Task = tuple[str, int]

NUM_STANDBY_REPLICAS = "num.standby.replicas"


@dataclass(frozen=True)
class AssignmentMemberSpec:
    instance_id: str | None
    rack_id: str | None
    active: TaskSet           # what the member owns now (its current assignment)
    standby: TaskSet
    warmup: TaskSet
    process_id: str
    client_tags: Mapping[str, str] = field(default_factory=dict)
    task_offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    task_end_offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class MemberAssignment:
    active: TaskSet
    standby: TaskSet
    warmup: TaskSet


class TopologyDescriber(Protocol):
    def subtopologies(self) -> list[str]: ...
    def max_num_input_partitions(self, subtopology_id: str) -> int: ...
    def is_stateful(self, subtopology_id: str) -> bool: ...


@dataclass(frozen=True)
class SimpleTopology:
    """A TopologyDescriber from {subtopology id: (partitions, stateful)}; subtopologies in
    Java string order, as Kafka's TopologyMetadata (a TreeMap) lists them."""
    subtopology_tasks: Mapping[str, tuple[int, bool]]

    def subtopologies(self) -> list[str]:
        return sorted(self.subtopology_tasks, key=string_compare_key)

    def max_num_input_partitions(self, subtopology_id: str) -> int:
        return self._get(subtopology_id)[0]

    def is_stateful(self, subtopology_id: str) -> bool:
        return self._get(subtopology_id)[1]

    def _get(self, subtopology_id: str) -> tuple[int, bool]:
        try:
            return self.subtopology_tasks[subtopology_id]
        except KeyError:
            raise KeyError(f"Topology does not contain subtopology {subtopology_id}") from None


class TaskAssignorError(Exception):
    pass


def task_name(task: Task) -> str:
    return f"{task[0]}_{task[1]}"


def _tasks_per_member(tasks: int, members: int) -> int:
    """ceil(tasks / members) in Java int arithmetic (the counts it is fed can go negative)."""
    if members == 0:
        return 0
    per_member = java_int_div(tasks, members)
    return per_member + 1 if java_int_rem(tasks, members) > 0 else per_member


def _parse_num_standby_replicas(configs: Mapping[str, str]) -> int:
    """Integer.parseInt of the config, as Kafka reads it: no configs at all means 0."""
    if not configs:
        return 0
    value = configs.get(NUM_STANDBY_REPLICAS)
    if value is None or not re.fullmatch(r"[+-]?[0-9]+", value) or java_int(int(value)) != int(value):
        raise TaskAssignorError(f"{NUM_STANDBY_REPLICAS} is not an int: {value!r}")
    return int(value)


class _Process:
    """One Kafka Streams instance: its members (threads) and the tasks they are given."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.capacity = 0
        self.load = 0.0
        self.task_count = 0
        self.member_order = JavaHashTable(string_hash)   # memberToTaskCounts' keys, a HashMap
        self.task_counts: dict[str, int] = {}
        self.active: dict[str, set[Task]] = {}
        self.standby: dict[str, set[Task]] = {}
        self.tasks: set[Task] = set()
        # [member, count] entries: Java copies the counts into the heap and only updates the
        # polled entry, so the heap lives until a task goes to a chosen member (add_task)
        self.members_by_load: JavaPriorityQueue[list] | None = None

    def add_member(self, member_id: str) -> None:
        self.member_order.add(member_id)
        self.task_counts[member_id] = 0
        self.capacity += 1
        self._compute_load()

    def _compute_load(self) -> None:
        self.load = -1.0 if self.capacity <= 0 else self.task_count / self.capacity

    def add_task(self, member_id: str, task: Task, active: bool) -> int:
        self.members_by_load = None
        return self._add(member_id, task, active)

    def _add(self, member_id: str, task: Task, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        self.task_counts[member_id] += 1
        self._compute_load()
        return self.task_counts[member_id]

    def add_task_to_least_loaded_member(self, task: Task, active: bool) -> int:
        if not self.task_counts:
            return -1
        if len(self.task_counts) == 1:
            return self._add(next(iter(self.member_order)), task, active)
        if self.members_by_load is None:
            self.members_by_load = JavaPriorityQueue(
                lambda entry: entry[1], ([m, self.task_counts[m]] for m in self.member_order))
        entry = self.members_by_load.poll()
        assert entry is not None
        entry[1] = self._add(entry[0], task, active)
        self.members_by_load.add(entry)
        return entry[1]


@dataclass(frozen=True)
class _Member:
    process_id: str
    member_id: str


class StickyTaskAssignor:
    name = "sticky"

    def assign(self, members: Mapping[str, AssignmentMemberSpec], assignment_configs: Mapping[str, str],
               topology: TopologyDescriber) -> dict[str, MemberAssignment]:
        return _StickyRun(members, assignment_configs, topology).run()


class _StickyRun:
    """One assignment: Kafka's LocalState and the steps over it."""

    def __init__(self, members: Mapping[str, AssignmentMemberSpec], configs: Mapping[str, str],
                 topology: TopologyDescriber) -> None:
        self.topology = topology
        self.member_ids = hashmap_order(list(members), string_hash)
        self.num_standby = _parse_num_standby_replicas(configs)
        total_active = total = 0
        for subtopology in topology.subtopologies():
            partitions = topology.max_num_input_partitions(subtopology)
            total = java_int(total + partitions)
            total_active = java_int(total_active + partitions)
            if topology.is_stateful(subtopology):
                total = java_int(total + java_int(partitions * self.num_standby))
        self.total_active_tasks, self.total_tasks = total_active, total
        self.members_with_active_capacity = self.members_with_capacity = len(members)
        self.active_per_member = _tasks_per_member(total_active, len(members))
        self.total_per_member = _tasks_per_member(total, len(members))
        # Kafka sizes its maps by these counts, which only a Java int overflow makes negative
        standby_capacity = java_int_div(java_int(total - total_active), self.num_standby) if self.num_standby > 0 else 0
        for capacity in (total_active, standby_capacity):
            if capacity < 0:
                raise TaskAssignorError(f"Illegal initial capacity: {capacity}")

        self.process_order = JavaHashTable(string_hash, len(members))   # new HashMap<>(members)
        self.processes: dict[str, _Process] = {}
        self.prev_active: dict[Task, _Member] = {}
        self.prev_standby: dict[Task, list[_Member]] = {}
        for member_id in self.member_ids:
            spec = members[member_id]
            member = _Member(spec.process_id, member_id)
            if spec.process_id not in self.processes:
                self.processes[spec.process_id] = _Process(spec.process_id)
                self.process_order.add(spec.process_id)
            self.processes[spec.process_id].add_member(member_id)
            for subtopology, partitions in spec.active.items():
                for partition in partitions:
                    self.prev_active[(subtopology, partition)] = member
            for subtopology, partitions in spec.standby.items():
                if partitions and self.num_standby < 0:   # new ArrayList<>(negative)
                    raise TaskAssignorError(f"Illegal Capacity: {self.num_standby}")
                for partition in partitions:
                    self.prev_standby.setdefault((subtopology, partition), []).append(member)

    def run(self) -> dict[str, MemberAssignment]:
        self._assign_active(self._task_ids(stateful_only=False))
        if self.num_standby > 0:
            self._assign_standby(self._task_ids(stateful_only=True))
        active: dict[str, set[Task]] = {}
        standby: dict[str, set[Task]] = {}
        for process in self.processes.values():
            active.update(process.active)
            standby.update(process.standby)
        return {member_id: MemberAssignment(_compacted(active.get(member_id, ())),
                                            _compacted(standby.get(member_id, ())), {})
                for member_id in self.member_ids}

    def _task_ids(self, stateful_only: bool) -> list[Task]:
        return [(subtopology, partition)
                for subtopology in self.topology.subtopologies()
                if not stateful_only or self.topology.is_stateful(subtopology)
                for partition in range(self.topology.max_num_input_partitions(subtopology))]

    def _by_load(self) -> JavaPriorityQueue[_Process]:
        return JavaPriorityQueue(lambda process: process.load,
                                 (self.processes[p] for p in self.process_order))

    # --- active tasks -----------------------------------------------------------------

    def _assign_active(self, tasks: list[Task]) -> None:
        # partition first: a range-like current assignment keeps its co-partitioned tasks
        tasks.sort(key=lambda t: (t[1], string_compare_key(t[0])))
        left = []
        for task in tasks:
            prev = self.prev_active.get(task)
            if prev is None or not self._give_active(prev, task):
                left.append(task)
        tasks, left = left, []
        for task in tasks:
            prev = self._least_loaded_prev(self.prev_standby.get(task), None)
            if prev is None or not self._give_active(prev, task):
                left.append(task)
        # subtopology first: a fresh assignment comes out range-like
        left.sort(key=lambda t: (string_compare_key(t[0]), t[1]))
        by_load = self._by_load()
        for task in left:
            process = by_load.poll()
            if process is None:
                raise TaskAssignorError(f"No process available to assign active task {task_name(task)}.")
            count = process.add_task_to_least_loaded_member(task, True)
            if count == -1:
                raise TaskAssignorError(f"No member available to assign active task {task_name(task)}.")
            self._count_active(count)
            by_load.add(process)

    def _give_active(self, member: _Member, task: Task) -> bool:
        process = self.processes[member.process_id]
        if process.task_counts[member.member_id] >= self.active_per_member:
            return False
        self._count_active(process.add_task(member.member_id, task, True))
        return True

    def _count_active(self, count: int) -> None:
        """A member that reaches its quota leaves the quota to the others (both quotas)."""
        if count == self.active_per_member:
            self.members_with_active_capacity -= 1
            self.total_active_tasks = java_int(self.total_active_tasks - count)
            self.active_per_member = _tasks_per_member(self.total_active_tasks, self.members_with_active_capacity)
        self._count_total(count)

    def _count_total(self, count: int) -> None:
        if count == self.total_per_member:
            self.members_with_capacity -= 1
            self.total_tasks = java_int(self.total_tasks - count)
            self.total_per_member = _tasks_per_member(self.total_tasks, self.members_with_capacity)

    def _least_loaded_prev(self, members: list[_Member] | None, task: Task | None) -> _Member | None:
        """Kafka's findPrevMemberWithLeastLoad, including its quirk: the last check is made
        against the *first* member's process even when another member was chosen."""
        if not members:
            return None
        candidate = members[0]
        first_process = self.processes[candidate.process_id]
        candidate_process_load = first_process.load
        candidate_member_load = first_process.task_counts[candidate.member_id]
        for member in members[1:]:
            process = self.processes[member.process_id]
            if process.load < candidate_process_load and (task is None or task not in process.tasks):
                member_load = process.task_counts[member.member_id]
                if member_load < candidate_member_load:
                    candidate_process_load, candidate_member_load, candidate = process.load, member_load, member
        if task is None or task not in first_process.tasks:
            return candidate
        return None

    # --- standby tasks ----------------------------------------------------------------

    def _assign_standby(self, tasks: list[Task]) -> None:
        tasks.sort(key=lambda t: (t[1], string_compare_key(t[0])), reverse=True)
        to_least_loaded: list[tuple[Task, int]] = []
        for task in tasks:
            for i in range(self.num_standby):
                prev = self.prev_active.get(task)
                if prev is not None:
                    process = self.processes[prev.process_id]
                    if task not in process.tasks and self._below_total_quota(process, prev):
                        self._count_total(process.add_task(prev.member_id, task, False))
                        continue
                prev = self._least_loaded_prev(self.prev_standby.get(task), task)
                if prev is not None:
                    process = self.processes[prev.process_id]
                    if self._below_total_quota(process, prev):
                        self._count_total(process.add_task(prev.member_id, task, False))
                        continue
                to_least_loaded.append((task, self.num_standby - i))
                break
        to_least_loaded.sort(key=lambda item: (string_compare_key(item[0][0]), item[0][1]), reverse=True)
        by_load = self._by_load()
        for task, remaining in to_least_loaded:
            for i in range(remaining):
                if not self._standby_to_least_loaded(by_load, task):
                    log.warning("Unable to assign %d of %d standby tasks for task [%s]. There is not enough "
                                "available capacity. You should increase the number of threads and/or "
                                "application instances to maintain the requested number of standby replicas.",
                                self.num_standby - i, self.num_standby, task_name(task))
                    break

    def _below_total_quota(self, process: _Process, member: _Member) -> bool:
        return process.task_counts[member.member_id] < self.total_per_member

    def _standby_to_least_loaded(self, by_load: JavaPriorityQueue[_Process], task: Task) -> bool:
        """The least loaded process without the task takes it; the processes polled on the
        way go back into the queue (Kafka recurses; the polls and adds are the same)."""
        polled: list[_Process] = []
        found = False
        while True:
            process = by_load.poll()
            if process is None:
                break
            polled.append(process)
            if task not in process.tasks:
                count = process.add_task_to_least_loaded_member(task, False)
                if count != -1:
                    found = True
                    self._count_total(count)
                break
            if not len(by_load):
                break
        for process in reversed(polled):
            by_load.add(process)
        return found


def _compacted(tasks) -> TaskSet:
    out: TaskSet = {}
    for subtopology, partition in tasks:
        out.setdefault(subtopology, set()).add(partition)
    return out
