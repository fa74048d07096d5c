"""The streams task assignor's own properties (tests/conformance/test_task_assignor_vs_kafka.py
checks that it gives exactly Kafka's assignment): every task active once, balance over
members and processes, stickiness, standbys (how many, never beside their active or each
other), warm-ups, members sharing a process, what moves when a member joins or leaves,
errors, and the Java orders it relies on."""
from __future__ import annotations

import logging
import random

import pytest

from kcoord.coordinator.javaorder import JavaPriorityQueue, java_int_div, java_int_rem
from kcoord.coordinator.streams.assignor import (AssignmentMemberSpec, MemberAssignment, SimpleTopology,
                                                 StickyTaskAssignor, TaskAssignorError, TaskSet)

ASSIGNOR = StickyTaskAssignor()


def spec(process: str, active: TaskSet | None = None, standby: TaskSet | None = None,
         warmup: TaskSet | None = None) -> AssignmentMemberSpec:
    return AssignmentMemberSpec(None, None, active or {}, standby or {}, warmup or {}, process)


def assign(members: dict[str, AssignmentMemberSpec], topology: SimpleTopology,
           standbys: int | None = None) -> dict[str, MemberAssignment]:
    configs = {} if standbys is None else {"num.standby.replicas": str(standbys)}
    return ASSIGNOR.assign(members, configs, topology)


def tasks_of(tasks: TaskSet) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


def actives(result: dict[str, MemberAssignment]) -> dict[str, set[tuple[str, int]]]:
    return {m: tasks_of(a.active) for m, a in result.items()}


def all_tasks(topology: SimpleTopology, stateful_only: bool = False) -> set[tuple[str, int]]:
    return {(s, p) for s, (n, stateful) in topology.subtopology_tasks.items()
            if stateful or not stateful_only for p in range(n)}


def again(members: dict[str, AssignmentMemberSpec], result: dict[str, MemberAssignment]
          ) -> dict[str, AssignmentMemberSpec]:
    """The members, now holding what `result` gave them."""
    return {m: spec(s.process_id, result[m].active, result[m].standby) for m, s in members.items() if m in result}


def random_case(rng: random.Random, members: int, processes: int) -> tuple[dict, SimpleTopology]:
    topology = SimpleTopology({str(i): (rng.randint(1, 12), rng.random() < 0.5) for i in range(rng.randint(1, 4))})
    return {f"member-{i}": spec(f"process-{i % processes}") for i in range(members)}, topology


def test_every_task_is_active_exactly_once_and_members_are_balanced():
    rng = random.Random(1)
    for _ in range(200):
        members, topology = random_case(rng, rng.randint(1, 10), processes=10)
        result = assign(members, topology)
        owned = [t for tasks in actives(result).values() for t in tasks]
        assert sorted(owned) == sorted(all_tasks(topology))
        counts = [len(tasks) for tasks in actives(result).values()]
        assert max(counts) - min(counts) <= 1
        assert set(result) == set(members)


def test_processes_are_balanced_by_their_members():
    """A process with two members gets twice the tasks of one with one member."""
    members = {"a1": spec("A"), "a2": spec("A"), "b1": spec("B"), "c1": spec("C")}
    topology = SimpleTopology({"0": (8, False), "1": (4, False)})
    per_member = {m: len(tasks) for m, tasks in actives(assign(members, topology)).items()}
    assert per_member == {"a1": 3, "a2": 3, "b1": 3, "c1": 3}


def test_a_fresh_assignment_is_range_like():
    """Tasks go out subtopology by subtopology, so consecutive partitions spread evenly."""
    members = {"m1": spec("p1"), "m2": spec("p2")}
    topology = SimpleTopology({"0": (4, False), "1": (4, False)})
    result = actives(assign(members, topology))
    for subtopology in "01":
        assert [len({p for s, p in tasks if s == subtopology}) for tasks in result.values()] == [2, 2]


def test_active_tasks_given_back_are_kept():
    """Standbys may move: Kafka gives them by a quota of all tasks per member, and
    a standby it keeps early can push a later one to another member."""
    rng = random.Random(2)
    for _ in range(100):
        members, topology = random_case(rng, rng.randint(1, 8), processes=rng.randint(1, 8))
        first = assign(members, topology, standbys=1)
        second = assign(again(members, first), topology, standbys=1)
        assert actives(second) == actives(first)


def test_a_member_keeps_its_tasks_up_to_its_quota():
    members = {"m1": spec("p1", active={"0": {0, 1, 2, 3}}), "m2": spec("p2", active={"0": {4, 5}})}
    result = actives(assign(members, SimpleTopology({"0": (6, False)})))
    assert result == {"m1": {("0", 0), ("0", 1), ("0", 2)}, "m2": {("0", 3), ("0", 4), ("0", 5)}}


def test_a_standby_becomes_the_active_when_its_active_is_gone():
    members = {"m1": spec("p1", active={"0": {0}}), "m2": spec("p2", standby={"0": {1}})}
    result = actives(assign(members, SimpleTopology({"0": (2, True)}), standbys=1))
    assert result == {"m1": {("0", 0)}, "m2": {("0", 1)}}


def test_standbys_are_never_on_the_process_of_their_active_nor_twice_on_one_process():
    rng = random.Random(3)
    for _ in range(200):
        processes = rng.randint(1, 5)
        members, topology = random_case(rng, rng.randint(1, 10), processes)
        result = assign(members, topology, standbys=rng.randint(1, 2))
        for process in {s.process_id for s in members.values()}:
            held = [t for m, a in result.items() if members[m].process_id == process
                    for t in tasks_of(a.active) | tasks_of(a.standby)]
            held += [t for m, a in result.items() if members[m].process_id == process
                     for t in tasks_of(a.active) & tasks_of(a.standby)]
            assert len(held) == len(set(held)), f"a task twice on {process}"


@pytest.mark.parametrize("standbys", [0, 1, 2])
def test_num_standby_replicas_are_assigned_to_stateful_tasks_only(standbys):
    members = {f"m{i}": spec(f"p{i}") for i in range(4)}
    topology = SimpleTopology({"0": (6, True), "1": (5, False)})
    result = assign(members, topology, standbys=standbys)
    copies: dict[tuple[str, int], int] = {}
    for a in result.values():
        for task in tasks_of(a.standby):
            copies[task] = copies.get(task, 0) + 1
    expected = {task: standbys for task in all_tasks(topology, stateful_only=True)} if standbys else {}
    assert copies == expected


def test_no_configs_means_no_standbys():
    members = {"m1": spec("p1"), "m2": spec("p2")}
    result = ASSIGNOR.assign(members, {}, SimpleTopology({"0": (4, True)}))
    assert all(not a.standby for a in result.values())


def test_too_few_processes_leave_standbys_unassigned_with_a_warning(caplog):
    """Two members of one process: no standby can go beside its active."""
    members = {"m1": spec("p"), "m2": spec("p")}
    with caplog.at_level(logging.WARNING, logger="kcoord.coordinator.streams.assignor"):
        result = assign(members, SimpleTopology({"0": (2, True)}), standbys=1)
    assert all(not a.standby for a in result.values())
    assert sum(len(a.active["0"]) for a in result.values()) == 2
    assert "Unable to assign 1 of 1 standby tasks for task [0_1]" in caplog.text


def test_members_of_one_process_share_its_tasks_and_standbys_go_to_the_other():
    members = {"a1": spec("A"), "a2": spec("A"), "b1": spec("B"), "b2": spec("B")}
    topology = SimpleTopology({"0": (4, True)})
    result = assign(members, topology, standbys=1)
    for process in "AB":
        other = "B" if process == "A" else "A"
        active_here = {t for m, a in result.items() if m.startswith(process.lower()) for t in tasks_of(a.active)}
        standby_there = {t for m, a in result.items() if m.startswith(other.lower()) for t in tasks_of(a.standby)}
        assert active_here == standby_there
    assert all(len(tasks_of(a.active)) == 1 and len(tasks_of(a.standby)) == 1 for a in result.values())


def test_warmups_are_never_assigned():
    members = {"m1": spec("p1", warmup={"0": {0, 1}}), "m2": spec("p2", warmup={"0": {2}})}
    result = assign(members, SimpleTopology({"0": (3, True)}), standbys=1)
    assert all(a.warmup == {} for a in result.values())


def test_a_joining_member_takes_tasks_only_from_the_others():
    rng = random.Random(4)
    for _ in range(100):
        members, topology = random_case(rng, rng.randint(1, 8), processes=8)
        before = actives(assign(members, topology))
        members = again(members, assign(members, topology)) | {"joiner": spec("new-process")}
        after = actives(assign(members, topology))
        for member, tasks in after.items():
            if member != "joiner":
                assert tasks <= before[member], f"{member} was given another member's task"


def test_a_leaving_members_tasks_go_and_nothing_else_moves():
    rng = random.Random(5)
    for _ in range(100):
        members, topology = random_case(rng, rng.randint(2, 8), processes=8)
        before = actives(assign(members, topology))
        leaver = rng.choice(sorted(members))
        members = {m: s for m, s in again(members, assign(members, topology)).items() if m != leaver}
        after = actives(assign(members, topology))
        for member, tasks in after.items():
            assert before[member] <= tasks, f"{member} lost a task"
        assert set().union(*after.values()) == all_tasks(topology)


def test_the_member_order_is_javas_not_the_callers():
    """Two standbys of a task, equally loaded: the member Kafka's HashMap of member ids
    walks first takes the active ("m1" hashes to bucket 4, "m2" to 5), whatever order the
    caller put them in."""
    topology = SimpleTopology({"0": (2, True)})
    for order in (["m1", "m2"], ["m2", "m1"]):
        members = {m: spec(f"process-{m}", standby={"0": {0}}) for m in order}
        assert actives(assign(members, topology)) == {"m1": {("0", 0)}, "m2": {("0", 1)}}


def test_no_member_for_a_task_is_an_error():
    with pytest.raises(TaskAssignorError, match="No process available to assign active task 0_0"):
        assign({}, SimpleTopology({"0": (1, False)}))
    assert assign({}, SimpleTopology({"0": (0, False)})) == {}


@pytest.mark.parametrize("value", ["two", "", " 1", "99999999999"])
def test_an_unreadable_standby_config_is_an_error(value):
    with pytest.raises(TaskAssignorError, match="num.standby.replicas"):
        ASSIGNOR.assign({"m": spec("p")}, {"num.standby.replicas": value}, SimpleTopology({"0": (1, True)}))


def test_simple_topology_lists_subtopologies_in_java_string_order():
    topology = SimpleTopology({"2": (1, False), "10": (2, True), "1": (3, False)})
    assert topology.subtopologies() == ["1", "10", "2"]
    assert topology.max_num_input_partitions("10") == 2 and topology.is_stateful("10")
    with pytest.raises(KeyError, match="Topology does not contain subtopology 3"):
        topology.is_stateful("3")


def test_java_priority_queue_breaks_ties_by_its_heap():
    """Equal keys do not come out first in first out: Java's poll moves the last element
    to the root, which then stays there against an equal child."""
    queue = JavaPriorityQueue(lambda item: item[1], [("a", 0), ("b", 0), ("c", 0)])
    assert [queue.poll()[0] for _ in range(3)] == ["a", "c", "b"]
    assert queue.poll() is None
    queue = JavaPriorityQueue(lambda item: item, [5, 3, 4, 1, 2])
    assert [queue.poll() for _ in range(5)] == [1, 2, 3, 4, 5]


def test_java_int_division():
    assert (java_int_div(7, 2), java_int_rem(7, 2)) == (3, 1)
    assert (java_int_div(-7, 2), java_int_rem(-7, 2)) == (-3, -1)
    assert (java_int_div(7, -2), java_int_rem(7, -2)) == (-3, 1)
