"""kcoord's server assignors (kcoord.coordinator.assignors.spec) give exactly the assignment of
Kafka 4.3.1's own UniformAssignor and RangeAssignor: both run on the same problems, Kafka's
in one JVM (KcoordAssignorJudge), and must agree member by member, partition by partition.

Problems: homogeneous and heterogeneous subscriptions, 1-16 members, 1-5 topics of 1-64
partitions, static members, racks, sticky re-assignment rounds (members join and leave,
subscriptions change, partitions are added; each round starts from Kafka's previous
answer in Kafka's record order), arbitrary current assignments, members subscribed to nothing, and hypothesis examples
(fixed seed, bounded count)."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kcoord.coordinator.javaorder import TimelineHashTable, kafka_uuid_string, string_hash
from tests.conformance.assignor_judge import (module_judge, Member, Problem, Topic, check, make_member_id,
                                              make_members, make_topics, random_current_assignment,
                                              subscription_type, with_assignment)

pytestmark = [pytest.mark.xdist_group("assignors-kafka")]


judge = module_judge




def random_problem(rng: random.Random, assignor: str, homogeneous: bool) -> Problem:
    topics = make_topics(rng, rng.randint(1, 5), racks=rng.random() < 0.3)
    members = make_members(rng, topics, rng.randint(1, 16), homogeneous, static=rng.choice([0, 0.5, 1]),
                           racks=rng.random() < 0.3)
    return Problem(assignor, topics, members, subscription_type(members))


@pytest.mark.parametrize("assignor", ["range", "uniform"])
@pytest.mark.parametrize("homogeneous", [True, False], ids=["homogeneous", "heterogeneous"])
def test_first_assignment_matches_kafka(judge, assignor, homogeneous):
    rng = random.Random(f"first-{assignor}-{homogeneous}")
    for _ in range(150):
        check(judge, random_problem(rng, assignor, homogeneous))


def _event(rng: random.Random, problem: Problem, homogeneous: bool) -> str:
    members, topics = problem.members, problem.topics
    kind = rng.choice(["join", "join", "leave", "leave", "subscribe", "grow", "static-replace"])
    if kind == "join" and len(members) < 16:
        template = rng.choice(members)
        subscribed = template.topics if homogeneous else rng.sample([t.topic_id for t in topics],
                                                                    rng.randint(1, len(topics)))
        members.insert(rng.randrange(len(members) + 1), Member(make_member_id(rng), list(subscribed)))
    elif kind == "leave" and len(members) > 1:
        members.pop(rng.randrange(len(members)))
    elif kind == "subscribe":
        ids = [t.topic_id for t in topics]
        if homogeneous:
            new = rng.sample(ids, rng.randint(1, len(ids)))
            for m in members:
                m.topics = list(new)
        else:
            rng.choice(members).topics = rng.sample(ids, rng.randint(1, len(ids)))
    elif kind == "grow":
        t = rng.choice(topics)
        t.partitions = min(64, t.partitions + rng.randint(1, 8))
        if t.racks is not None:
            t.racks = t.racks + [["a"]] * (t.partitions - len(t.racks))
    elif kind == "static-replace":
        # a static member restarts with a new member id and keeps its target assignment
        m = rng.choice(members)
        m.member_id, m.instance_id = make_member_id(rng), m.instance_id or f"instance-{rng.randrange(10_000)}"
    return kind


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@pytest.mark.parametrize("homogeneous", [True, False], ids=["homogeneous", "heterogeneous"])
def test_sticky_rounds_match_kafka(judge, assignor, homogeneous):
    rng = random.Random(f"rounds-{assignor}-{homogeneous}")
    for _ in range(40):
        problem = random_problem(rng, assignor, homogeneous)
        answer = check(judge, problem)
        for _ in range(6):
            with_assignment(problem.members, answer)
            _event(rng, problem, homogeneous)
            problem.subscription_type = subscription_type(problem.members)
            answer = check(judge, problem)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_arbitrary_current_assignments_match_kafka(judge, assignor):
    """Owners not subscribed any more, more than a fair share, partitions in any record order."""
    rng = random.Random(f"arbitrary-{assignor}")
    for i in range(200):
        problem = random_problem(rng, assignor, homogeneous=i % 2 == 0)
        random_current_assignment(rng, problem.members, problem.topics)
        check(judge, problem)


def test_declared_heterogeneous_with_equal_subscriptions(judge):
    """Kafka decides homogeneous by subscribed *names*: a name that does not resolve makes
    equal id sets heterogeneous, and the heterogeneous algorithm runs."""
    rng = random.Random("declared")
    for i in range(60):
        problem = random_problem(rng, "uniform", homogeneous=True)
        if i % 2:
            random_current_assignment(rng, problem.members, problem.topics)
        problem.subscription_type = "heterogeneous"
        check(judge, problem)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_members_without_topics_match_kafka(judge, assignor):
    """Members subscribed to nothing (a regex that matches nothing yet), some or all of them."""
    rng = random.Random(f"empty-{assignor}")
    for i in range(80):
        problem = random_problem(rng, assignor, homogeneous=i % 2 == 0)
        for m in problem.members:
            if i % 4 == 0 or rng.random() < 0.3:
                m.topics = []
        if i % 3 == 0:
            random_current_assignment(rng, problem.members, problem.topics)
        problem.subscription_type = subscription_type(problem.members)
        check(judge, problem)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_subscribed_names_that_do_not_exist_match_kafka(judge, assignor):
    """A name of no topic counts in Kafka's subscription type and in its hash set's size."""
    rng = random.Random(f"ghosts-{assignor}")
    for i in range(100):
        problem = random_problem(rng, assignor, homogeneous=i % 2 == 0)
        ghosts = [f"ghost-{k}" for k in range(rng.randint(1, 16))]
        for m in problem.members:
            if i % 4 < 2 or rng.random() < 0.5:
                m.ghosts = list(ghosts)
        if i % 3 == 0:
            random_current_assignment(rng, problem.members, problem.topics)
        problem.subscription_type = subscription_type(problem.members)
        answer = check(judge, problem)
        with_assignment(problem.members, answer)
        problem.members.append(Member(make_member_id(rng), list(problem.members[0].topics),
                                      ghosts=list(problem.members[0].ghosts)))
        problem.subscription_type = subscription_type(problem.members)
        check(judge, problem)


def test_group_member_map_order_matches_kafka(judge):
    """kcoord's TimelineHashTable walks a group's members as Kafka's TimelineHashMap does,
    through joins and leaves."""
    rng = random.Random("timeline")
    for _ in range(200):
        table, present, ops = TimelineHashTable(string_hash), [], []
        for _ in range(rng.randint(1, 60)):
            if present and rng.random() < 0.3:
                key = present.pop(rng.randrange(len(present)))
                ops.append(("remove", key))
                table.remove(key)
            else:
                key = make_member_id(rng) if rng.random() < 0.8 else f"m{rng.randrange(30)}"
                if key not in present:
                    present.append(key)
                ops.append(("add", key))
                table.add(key)
        assert list(table) == judge.timeline_order(ops)


@st.composite
def problems(draw):
    n_topics = draw(st.integers(1, 5))
    topics = [Topic(kafka_uuid_string(draw(st.uuids())), f"t{i}", draw(st.integers(1, 64))) for i in range(n_topics)]
    n_members = draw(st.integers(1, 16))
    ids = [t.topic_id for t in topics]
    homogeneous = draw(st.booleans())
    shared = draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
    member_ids = draw(st.lists(st.text("abcdefghij-0123456789", min_size=1, max_size=12), min_size=n_members,
                               max_size=n_members, unique=True))
    members = []
    for mid in member_ids:
        subscribed = shared if homogeneous else draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
        instance = draw(st.none() | st.sampled_from(["i0", "i1", "i2", "i3", "i4", "i5"]))
        members.append(Member(mid, list(subscribed), instance_id=instance))
    for t in topics:
        for p in range(t.partitions):
            owner = draw(st.none() | st.sampled_from(range(n_members)))
            if owner is not None:
                m = members[owner]
                for entry in m.assigned:
                    if entry[0] == t.topic_id:
                        entry[1].append(p)
                        break
                else:
                    m.assigned.append((t.topic_id, [p]))
    assignor = draw(st.sampled_from(["uniform", "range"]))
    return Problem(assignor, topics, members, subscription_type(members))


@seed(848)
@settings(max_examples=300, derandomize=False, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=problems())
def test_hypothesis_problems_match_kafka(judge, problem):
    check(judge, problem)
