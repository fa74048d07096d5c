"""kcoord's streams task assignor (kcoord.coordinator.streams.assignor) gives exactly the
assignment of Kafka 4.3.1's own StickyTaskAssignor: both run on the same problems, Kafka's in
one JVM (KcoordTaskAssignorJudge), and must agree member by member, task by task (active,
standby and warm-up).

Problems: 1-5 subtopologies of 1-12 partitions, stateless and stateful, 1-40 members on
1-5 processes (and up to a process per member), num.standby.replicas 0-2 or no configs at
all, members with no tasks, arbitrary current tasks (standbys, warm-ups, stale tasks, one
task active on two members), rounds that start from Kafka's previous answer while members
join, leave and restart, partitions and standby replicas change; and the errors."""
from __future__ import annotations

import json
import logging
import random

import pytest

from tests.conformance.task_assignor_judge import (TaskMember, TaskProblem, make_member_id, make_members,
                                                   make_process_id, make_subtopologies, random_current_tasks,
                                                   random_problem, task_judge, with_assignment)

pytestmark = [pytest.mark.xdist_group("assignors-kafka")]


@pytest.fixture(scope="module")
def judge():
    j = task_judge()
    yield j
    j.close()


@pytest.fixture(autouse=True)
def quiet_standby_warnings():
    """Kafka warns once per task it cannot give all standbys, thousands of times here."""
    logger = logging.getLogger("kcoord.coordinator.streams.assignor")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def check(judge, problem: TaskProblem) -> dict:
    """Python's answer equals Kafka's; returns Kafka's answer (for the next round)."""
    answer = judge.solve(problem)
    where = json.dumps(problem.to_json())
    if "error" in answer:
        with pytest.raises(Exception) as raised:
            problem.solve_in_python()
        if answer["error"].startswith("TaskAssignorException: "):
            assert str(raised.value) == answer["error"].removeprefix("TaskAssignorException: "), where
        return answer
    assert problem.solve_in_python() == answer["assignment"], f"differs from Kafka on {where}"
    return answer


def test_first_assignments_match_kafka(judge):
    rng = random.Random("first")
    for _ in range(300):
        check(judge, random_problem(rng))


def test_arbitrary_current_tasks_match_kafka(judge):
    """Actives, standbys and warm-ups anywhere, also on the same member or process, tasks
    the topology no longer has, a task active on two members."""
    rng = random.Random("arbitrary")
    for i in range(400):
        problem = random_problem(rng)
        random_current_tasks(rng, problem, stale=i % 2 == 1)
        check(judge, problem)


def test_many_members_match_kafka(judge):
    """Enough members for hash buckets to collide and the member map to grow, on few
    processes, on many processes, or one process per member."""
    rng = random.Random("many")
    for i in range(120):
        count = rng.randint(13, 40)
        members = make_members(rng, count, [1, 2, rng.randint(3, 8), count][i % 4])
        problem = TaskProblem(make_subtopologies(rng), members, {"num.standby.replicas": str(i % 3)})
        if i % 2:
            random_current_tasks(rng, problem)
        check(judge, problem)


def _event(rng: random.Random, problem: TaskProblem) -> None:
    members = problem.members
    kind = rng.choice(["join", "join", "leave", "leave", "restart", "grow", "shrink", "standbys", "stateful"])
    processes = sorted({m.process_id for m in members})
    if kind == "join" and len(members) < 20:
        # Kafka puts the heartbeating member into its map last
        process = rng.choice(processes + [make_process_id(rng)])
        members.append(TaskMember(make_member_id(rng), process))
    elif kind == "leave" and len(members) > 1:
        members.pop(rng.randrange(len(members)))
    elif kind == "restart":
        # a Streams instance comes back with new member ids and nothing assigned
        process = rng.choice(processes)
        for m in members:
            if m.process_id == process:
                m.member_id, m.active, m.standby, m.warmup = make_member_id(rng), [], [], []
    elif kind in ("grow", "shrink"):
        subtopology = rng.choice(list(problem.subtopologies))
        partitions, stateful = problem.subtopologies[subtopology]
        step = rng.randint(1, 4)
        partitions = min(12, partitions + step) if kind == "grow" else max(1, partitions - step)
        problem.subtopologies[subtopology] = (partitions, stateful)
    elif kind == "standbys":
        problem.configs = {"num.standby.replicas": str(rng.randint(0, 2))}
    elif kind == "stateful":
        subtopology = rng.choice(list(problem.subtopologies))
        partitions, stateful = problem.subtopologies[subtopology]
        problem.subtopologies[subtopology] = (partitions, not stateful)


def test_sticky_rounds_match_kafka(judge):
    rng = random.Random("rounds")
    for _ in range(60):
        problem = random_problem(rng)
        answer = check(judge, problem)
        for _ in range(8):
            with_assignment(problem.members, answer["assignment"])
            _event(rng, problem)
            answer = check(judge, problem)


@pytest.mark.parametrize("configs", [{}, {"num.standby.replicas": "0"}, {"num.standby.replicas": "+2"},
                                     {"num.standby.replicas": "5"}, {"num.standby.replicas": "-1"}],
                         ids=["no-configs", "zero", "plus-two", "five", "minus-one"])
def test_standby_configs_match_kafka(judge, configs):
    rng = random.Random(f"configs-{configs}")
    for i in range(40):
        problem = random_problem(rng)
        problem.configs = configs
        if i % 2:
            random_current_tasks(rng, problem)
        check(judge, problem)


@pytest.mark.parametrize("configs", [{"num.standby.replicas": "two"}, {"num.standby.replicas": ""},
                                     {"num.standby.replicas": "99999999999"}, {"other": "1"}],
                         ids=["word", "empty", "too-big", "missing"])
def test_unreadable_standby_configs_fail_as_in_kafka(judge, configs):
    rng = random.Random("bad-configs")
    problem = random_problem(rng)
    problem.configs = configs
    assert "error" in check(judge, problem)


def test_no_members_match_kafka(judge):
    """No member: no process for the first task (an error), unless there is no task."""
    answer = check(judge, TaskProblem({"0": (3, True)}, [], {"num.standby.replicas": "1"}))
    assert answer["error"] == "TaskAssignorException: No process available to assign active task 0_0."
    assert check(judge, TaskProblem({"0": (0, True)}, [], {}))["assignment"] == {}
