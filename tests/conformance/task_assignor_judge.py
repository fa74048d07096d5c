"""Kafka's own streams-group task assignor as a judge: KcoordTaskAssignorJudge (java/) runs
StickyTaskAssignor of kafka-group-coordinator 4.3.1 on problems written as JSON lines, in
one JVM for many problems. Also the problem generator and the conversion both ways."""
from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from kcoord.conformance.javaclient import program_command
from kcoord.coordinator.streams.assignor import AssignmentMemberSpec, SimpleTopology, StickyTaskAssignor
from kcoord.testing import reference_kafka
from tests.conformance.assignor_judge import SOURCE as ASSIGNOR_JUDGE_SOURCE
from tests.conformance.assignor_judge import Judge, make_member_id

SOURCE = ASSIGNOR_JUDGE_SOURCE.with_name("KcoordTaskAssignorJudge.java")

Tasks = list[tuple[str, list[int]]]
# {member id: {"active" | "standby" | "warmup": {subtopology: sorted partitions}}}
Answer = dict[str, dict[str, dict[str, list[int]]]]
KINDS = ("active", "standby", "warmup")


def task_judge() -> Judge:
    return Judge(program_command(SOURCE, "task-assignor-judge", reference_kafka.classpath()))


@dataclass
class TaskMember:
    member_id: str
    process_id: str
    active: Tasks = field(default_factory=list)
    standby: Tasks = field(default_factory=list)
    warmup: Tasks = field(default_factory=list)
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass
class TaskProblem:
    subtopologies: dict[str, tuple[int, bool]]   # id -> (partitions, stateful)
    members: list[TaskMember]                    # in the order Kafka puts them into its HashMap
    configs: dict[str, str]

    def to_json(self) -> dict:
        return {
            "configs": self.configs,
            "subtopologies": [{"id": s, "partitions": n, "stateful": st} for s, (n, st) in self.subtopologies.items()],
            "members": [{"id": m.member_id, "process": m.process_id, "instance": m.instance_id, "rack": m.rack_id,
                         "active": m.active, "standby": m.standby, "warmup": m.warmup} for m in self.members],
        }

    def solve_in_python(self) -> Answer:
        specs = {m.member_id: AssignmentMemberSpec(
            m.instance_id, m.rack_id, {s: set(ps) for s, ps in m.active}, {s: set(ps) for s, ps in m.standby},
            {s: set(ps) for s, ps in m.warmup}, m.process_id, {}, {}, {}) for m in self.members}
        result = StickyTaskAssignor().assign(specs, self.configs, SimpleTopology(self.subtopologies))
        return {member_id: {kind: {s: sorted(ps) for s, ps in getattr(a, kind).items() if ps} for kind in KINDS}
                for member_id, a in result.items()}


def with_assignment(members: list[TaskMember], answer: Answer) -> None:
    """Members' current tasks = Kafka's previous answer (members new since then: none)."""
    for m in members:
        tasks = answer.get(m.member_id, {})
        for kind in KINDS:
            setattr(m, kind, [(s, ps) for s, ps in tasks.get(kind, {}).items()])


# --- generation ---------------------------------------------------------------------

def make_subtopologies(rng: random.Random) -> dict[str, tuple[int, bool]]:
    count = rng.randint(1, 5)
    # Kafka Streams numbers its subtopologies; other ids exercise the string order
    names = [str(i) for i in range(count)] if rng.random() < 0.7 else rng.sample(
        ["0", "1", "10", "2", "a", "sub-1", "B"], count)
    return {name: (rng.randint(1, 12), rng.random() < 0.6) for name in names}


def make_process_id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def make_members(rng: random.Random, count: int, processes: int) -> list[TaskMember]:
    process_ids = [make_process_id(rng) for _ in range(processes)]
    return [TaskMember(make_member_id(rng), rng.choice(process_ids)) for _ in range(count)]


def random_configs(rng: random.Random) -> dict[str, str]:
    return {} if rng.random() < 0.1 else {"num.standby.replicas": str(rng.randint(0, 2))}


def random_current_tasks(rng: random.Random, problem: TaskProblem, stale: bool = False) -> None:
    """Each task active on a random member or none, standbys on random members; with
    `stale`, also tasks of subtopologies and partitions the topology no longer has and the
    same active task on two members."""
    held = {m.member_id: {kind: {} for kind in KINDS} for m in problem.members}
    tasks = [(s, p) for s, (n, _) in problem.subtopologies.items() for p in range(n + (2 if stale else 0))]
    if stale:
        tasks += [("gone", p) for p in range(3)]
    for s, p in tasks:
        owners = []
        if rng.random() < 0.7:
            owners.append(("active", rng.choice(problem.members)))
            if stale and rng.random() < 0.1:
                owners.append(("active", rng.choice(problem.members)))
        for _ in range(rng.choice([0, 0, 1, 2])):
            owners.append(("standby", rng.choice(problem.members)))
        if rng.random() < 0.1:
            owners.append(("warmup", rng.choice(problem.members)))
        for kind, member in owners:
            held[member.member_id][kind].setdefault(s, []).append(p)
    for m in problem.members:
        for kind in KINDS:
            items = [(s, sorted(set(ps))) for s, ps in held[m.member_id][kind].items()]
            rng.shuffle(items)
            setattr(m, kind, items)


def random_problem(rng: random.Random, max_members: int = 12) -> TaskProblem:
    members = make_members(rng, rng.randint(1, max_members), rng.randint(1, 5))
    return TaskProblem(make_subtopologies(rng), members, random_configs(rng))
