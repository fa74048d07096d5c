"""Kafka's own server assignors as a judge: KcoordAssignorJudge (java/) runs
UniformAssignor / RangeAssignor of kafka-group-coordinator 4.3.1 on problems written as
JSON lines, in one JVM for many problems. Also the problem generator the differential
test and its hypothesis strategy share, and the conversion both ways."""
from __future__ import annotations

import json
import random
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kcoord.conformance.javaclient import program_command
from kcoord.coordinator.assignors.spec import MemberSpec, TopicSpec, group_subscription_type
from kcoord.coordinator.javaorder import kafka_uuid_string
from kcoord.testing import reference_kafka

SOURCE = Path(__file__).with_name("java") / "KcoordAssignorJudge.java"


@pytest.fixture(scope="module")
def module_judge():
    """One judge JVM for a module's problems (a module names it: `judge = module_judge`)."""
    j = Judge()
    yield j
    j.close()


def judge_command() -> list[str]:
    return program_command(SOURCE, "assignor-judge", reference_kafka.classpath())


class Judge:
    """One JVM answering problems one at a time (`command`: another judge program of java/)."""

    def __init__(self, command: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(command or judge_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, encoding="utf-8")

    def solve(self, problem: "Problem") -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(problem.to_json()) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the assignor judge died:\n{self.proc.stderr.read()[-4000:]}")
        return json.loads(line)

    def timeline_order(self, ops: list[tuple[str, str]]) -> list[str]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"timeline": ops}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["order"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Member:
    member_id: str
    topics: list[str]                      # subscribed topic ids
    instance_id: str | None = None
    rack_id: str | None = None
    assigned: list[tuple[str, list[int]]] = field(default_factory=list)  # record order
    ghosts: list[str] = field(default_factory=list)  # subscribed names of no topic


@dataclass
class Topic:
    topic_id: str
    name: str
    partitions: int
    racks: list[list[str]] | None = None


@dataclass
class Problem:
    assignor: str
    topics: list[Topic]
    members: list[Member]
    subscription_type: str  # "homogeneous" | "heterogeneous"
    assignable: dict[str, list[int]] | None = None   # simple: topic id -> partitions (None: all)

    def to_json(self) -> dict:
        names = {t.topic_id: t.name for t in self.topics}
        order = [t.topic_id for t in self.topics]
        return {
            "assignor": self.assignor,
            "subscription_type": self.subscription_type,
            "topics": [{"id": t.topic_id, "name": t.name, "partitions": t.partitions, "racks": t.racks}
                       for t in self.topics],
            "members": [{"id": m.member_id, "instance": m.instance_id, "rack": m.rack_id,
                         "topics": [names[t] for t in order if t in m.topics] + m.ghosts,
                         "assigned": [[t, ps] for t, ps in m.assigned]} for m in self.members],
            **({} if self.assignable is None else {"assignable": self.assignable}),
        }

    def specs(self) -> tuple[dict[str, MemberSpec], dict[str, TopicSpec]]:
        topics = {t.topic_id: TopicSpec(t.topic_id, t.name, t.partitions,
                                        {p: frozenset(r) for p, r in enumerate(t.racks or [])})
                  for t in self.topics}
        names = {t.topic_id: t.name for t in self.topics}
        members = {m.member_id: MemberSpec(m.member_id, m.instance_id, m.rack_id, frozenset(m.topics),
                                           {t: tuple(ps) for t, ps in m.assigned},
                                           tuple([names[t.topic_id] for t in self.topics if t.topic_id in m.topics]
                                                 + m.ghosts) if m.ghosts else None)
                   for m in self.members}
        return members, topics

    def solve_in_python_raw(self) -> dict:
        from kcoord.coordinator.assignors import assignors
        from kcoord.coordinator.assignors.simple import SimpleAssignor
        members, topics = self.specs()
        if self.assignor == "simple":
            return SimpleAssignor().assign(members, topics, self.subscription_type, self.assignable)
        return assignors()[self.assignor].assign(members, topics, self.subscription_type)

    def solve_in_python(self) -> dict[str, dict[str, frozenset[int]]]:
        return normalize(self.solve_in_python_raw(), self.specs()[0])


def check(judge: Judge, problem: Problem) -> dict:
    """Python's answer equals Kafka's, in the order Kafka's target assignment record would list
    topics and partitions; where Kafka's assignor fails, Python's raises. Returns Kafka's raw
    answer (for the next round)."""
    import pytest

    answer = judge.solve(problem)
    members, _ = problem.specs()
    where = json.dumps(problem.to_json())
    expected = kafka_answer(answer, members)
    if "error" in expected:
        with pytest.raises(Exception):
            problem.solve_in_python()
        return answer
    raw = problem.solve_in_python_raw()
    assert normalize(raw, members) == expected, f"differs from Kafka on {where}"
    for member_id, topics in answer["assignment"].items():
        kafka_order = [(t, ps) for t, ps in topics.items() if ps]
        ours = [(t, list(ps.record_order)) for t, ps in raw[member_id].items() if len(ps)]
        assert ours == kafka_order, f"record order of {member_id} differs on {where}"
    return answer


def normalize(assignment: dict, members) -> dict[str, dict[str, frozenset[int]]]:
    """Every member, without empty topics; partitions as frozensets."""
    out = {m: {} for m in members}
    for m, topics in assignment.items():
        out[m] = {t: frozenset(ps) for t, ps in topics.items() if len(ps)}
    return out


def kafka_answer(answer: dict, members) -> dict[str, dict[str, frozenset[int]]]:
    if "error" in answer:
        return {"error": answer["error"]}  # type: ignore[dict-item]
    return normalize(answer["assignment"], members)


# --- generation ---------------------------------------------------------------------

def _uuid(rng: random.Random) -> str:
    while True:
        s = kafka_uuid_string(uuid.UUID(int=rng.getrandbits(128)))
        if not s.startswith("-"):
            return s


def make_topics(rng: random.Random, count: int, max_partitions: int = 64, racks: bool = False) -> list[Topic]:
    topics = []
    for i in range(count):
        n = rng.randint(1, max_partitions)
        r = [rng.sample(["a", "b", "c"], rng.randint(1, 3)) for _ in range(n)] if racks else None
        topics.append(Topic(_uuid(rng), f"topic-{i}-{rng.randrange(1000)}", n, r))
    return topics


def make_member_id(rng: random.Random) -> str:
    return _uuid(rng)  # Kafka's client-generated member ids look like topic ids


def make_members(rng: random.Random, topics: list[Topic], count: int, homogeneous: bool,
                 static: float = 0.0, racks: bool = False) -> list[Member]:
    ids = [t.topic_id for t in topics]
    shared = rng.sample(ids, rng.randint(1, len(ids)))
    members = []
    for _ in range(count):
        subscribed = shared if homogeneous else rng.sample(ids, rng.randint(1, len(ids)))
        members.append(Member(make_member_id(rng), list(subscribed),
                              instance_id=f"instance-{rng.randrange(10_000)}" if rng.random() < static else None,
                              rack_id=rng.choice(["a", "b", "c"]) if racks else None))
    return members


def subscription_type(members: list[Member]) -> str:
    """Kafka's, from the subscribed names (ghosts included)."""
    return group_subscription_type([(set(m.topics) | set(m.ghosts), None) for m in members], {})


def random_current_assignment(rng: random.Random, members: list[Member], topics: list[Topic]) -> None:
    """Every partition with a random owner or none, the owner not necessarily subscribed;
    record order: topics and partitions shuffled."""
    held: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in members}
    for t in topics:
        for p in range(t.partitions):
            if rng.random() < 0.7:
                owner = rng.choice(members)
                if t.topic_id in owner.topics or rng.random() < 0.2:
                    held[owner.member_id].setdefault(t.topic_id, []).append(p)
    for m in members:
        items = list(held[m.member_id].items())
        rng.shuffle(items)
        for _, ps in items:
            if rng.random() < 0.5:
                rng.shuffle(ps)
        m.assigned = items


def with_assignment(members: list[Member], answer: dict) -> None:
    """Members' current assignment = Kafka's previous answer, in its record order."""
    for m in members:
        m.assigned = [(t, list(ps)) for t, ps in answer["assignment"].get(m.member_id, {}).items() if ps]
