"""kcoord's share group assignor (kcoord.coordinator.assignors.simple) gives exactly the assignment
of Kafka 4.3.1's own SimpleAssignor: both run on the same problems, Kafka's in one JVM
(KcoordAssignorJudge), and must agree member by member, partition by partition, and in the order
Kafka's target assignment record lists them.

Problems: homogeneous and heterogeneous subscriptions, 1-40 members (more members than
partitions: partitions shared), 1-4 topics of 1-24 partitions, every partition or only some
assignable (a share group assigns the partitions whose share state is initialized), arbitrary
current assignments (partitions held by members not subscribed, or no longer assignable), and
rounds that start from Kafka's previous answer while members join and leave."""
from __future__ import annotations

import random

import pytest

from tests.conformance.assignor_judge import (module_judge, Member, Problem, check, make_member_id, make_members,
                                              make_topics, random_current_assignment, subscription_type,
                                              with_assignment)

pytestmark = [pytest.mark.xdist_group("assignors-kafka")]


judge = module_judge


def random_problem(rng: random.Random, homogeneous: bool) -> Problem:
    topics = make_topics(rng, rng.randint(1, 4), max_partitions=24)
    members = make_members(rng, topics, rng.randint(1, 40), homogeneous)
    if rng.random() < 0.6:
        random_current_assignment(rng, members, topics)
    assignable = None
    if rng.random() < 0.7:
        assignable = {t.topic_id: sorted(rng.sample(range(t.partitions), rng.randint(0, t.partitions)))
                      if rng.random() < 0.4 else list(range(t.partitions))
                      for t in topics if rng.random() < 0.9}
    return Problem("simple", topics, members, subscription_type(members), assignable)


@pytest.mark.parametrize("homogeneous", [True, False], ids=["homogeneous", "heterogeneous"])
def test_assignments_match_kafka(judge, homogeneous):
    rng = random.Random(f"simple-{homogeneous}")
    for _ in range(300):
        check(judge, random_problem(rng, homogeneous))


@pytest.mark.parametrize("homogeneous", [True, False], ids=["homogeneous", "heterogeneous"])
def test_rounds_from_kafkas_previous_answer_match_kafka(judge, homogeneous):
    rng = random.Random(f"simple-rounds-{homogeneous}")
    for _ in range(20):
        problem = random_problem(rng, homogeneous)
        for _ in range(8):
            answer = check(judge, problem)
            if "error" in answer:
                break
            with_assignment(problem.members, answer)
            if rng.random() < 0.5 and len(problem.members) < 40:
                template = rng.choice(problem.members)
                problem.members.insert(rng.randrange(len(problem.members) + 1),
                                       Member(make_member_id(rng), list(template.topics)))
            elif len(problem.members) > 1:
                problem.members.pop(rng.randrange(len(problem.members)))
            problem.subscription_type = subscription_type(problem.members)
