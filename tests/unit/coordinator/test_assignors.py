"""The server assignors' own properties (tests/conformance/test_assignors_vs_kafka.py
checks that they give exactly Kafka's assignment): every subscribed partition assigned
once and only to a subscriber, balance, stickiness, range's order and co-partitioning,
and the emulated Java hash orders they rely on."""
from __future__ import annotations

import random
import uuid

import pytest

from kcoord.coordinator.assignors.spec import AssignorError, MemberSpec, TopicSpec
from kcoord.coordinator.assignors import assignors
from kcoord.coordinator.javaorder import (hashmap_order, kafka_uuid_string, partitions_order, string_compare_key,
                                          string_hash, uuid_hash)


def test_java_string_hash():
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("polygenelubricants") == -2**31
    assert string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # UTF-16 code units


def test_java_string_compare_orders_by_utf16_code_units():
    # U+FF5E sorts after U+1F600's high surrogate (0xD83D) in Java, before it by code point
    assert sorted(["\U0001F600", "\uFF5E"], key=string_compare_key) == ["\U0001F600", "\uFF5E"]


def test_kafka_uuid_hash():
    topic_id = kafka_uuid_string(uuid.UUID(int=(1 << 64) | 2))
    assert len(topic_id) == 22
    assert uuid_hash(topic_id) == 3
    assert uuid_hash(kafka_uuid_string(uuid.UUID(int=0))) == 0


def test_hash_orders():
    # a HashSet<Integer> of 16 buckets: by p mod 16, equal buckets in insertion order
    assert partitions_order([5, 17]) == [17, 5]
    assert partitions_order([33, 1, 17]) == [33, 1, 17]
    assert partitions_order(frozenset({33, 1, 17})) == [1, 17, 33]
    assert partitions_order([3, 3, 2]) == [2, 3]
    # "Aa" and "BB" share a hash code: insertion order decides
    assert hashmap_order(["BB", "Aa"], string_hash) == ["BB", "Aa"]
    assert hashmap_order(["b", "a", "c"], string_hash) == ["a", "b", "c"]


T = [kafka_uuid_string(uuid.UUID(int=(i + 1) << 70 | i)) for i in range(8)]  # topic ids


def topics_of(*counts: int) -> dict[str, TopicSpec]:
    return {T[i]: TopicSpec(T[i], f"t{i}", n) for i, n in enumerate(counts)}


def member(member_id, topics, instance=None, assigned=None, rack=None) -> MemberSpec:
    return MemberSpec(member_id, instance, rack, frozenset(topics), assigned or {})


def test_range_co_partitions():
    topics = topics_of(3, 3)
    members = {m: member(m, topics) for m in ("M1", "M0")}
    assert assignors()["range"].assign(members, topics) == {
        "M0": {T[0]: frozenset({0, 1}), T[1]: frozenset({0, 1})},
        "M1": {T[0]: frozenset({2}), T[1]: frozenset({2})},
    }


def test_range_puts_static_members_first_by_instance_id():
    topics = topics_of(4)
    members = {"a": member("a", topics), "z": member("z", topics, instance="I1"),
               "y": member("y", topics, instance="I0")}
    result = assignors()["range"].assign(members, topics)
    assert result == {"y": {T[0]: frozenset({0, 1})}, "z": {T[0]: frozenset({2})}, "a": {T[0]: frozenset({3})}}


def test_range_heterogeneous_splits_each_topic_among_its_subscribers():
    topics = topics_of(2, 5)
    members = {"A": member("A", [T[0], T[1]]), "B": member("B", [T[1]]), "C": member("C", [T[0]])}
    assert assignors()["range"].assign(members, topics) == {
        "A": {T[0]: frozenset({0}), T[1]: frozenset({0, 1, 2})},
        "B": {T[1]: frozenset({3, 4})},
        "C": {T[0]: frozenset({1})},
    }


def test_range_is_not_sticky_to_the_current_assignment():
    topics = topics_of(4)
    members = {"a": member("a", topics, assigned={T[0]: frozenset({2, 3})}),
               "b": member("b", topics, assigned={T[0]: frozenset({0, 1})})}
    assert assignors()["range"].assign(members, topics)["a"] == {T[0]: frozenset({0, 1})}


def test_no_members_no_assignment():
    for assignor in assignors().values():
        assert assignor.assign({}, topics_of(3)) == {}


def test_a_subscription_to_a_missing_topic_fails():
    members = {"a": member("a", [kafka_uuid_string(uuid.UUID(int=99))])}
    for assignor in assignors().values():
        with pytest.raises(AssignorError):
            assignor.assign(members, topics_of(3))


def random_group(rng: random.Random, homogeneous: bool):
    topics = topics_of(*(rng.randint(1, 64) for _ in range(rng.randint(1, 5))))
    ids = list(topics)
    shared = rng.sample(ids, rng.randint(1, len(ids)))
    members = {}
    for i in range(rng.randint(1, 16)):
        subscribed = shared if homogeneous else rng.sample(ids, rng.randint(1, len(ids)))
        members[f"m{i}-{rng.randrange(10**6)}"] = member(f"m{i}", subscribed)
    return members, topics


def check_valid(members, topics, result):
    seen = set()
    for member_id, by_topic in result.items():
        for topic_id, partitions in by_topic.items():
            assert topic_id in members[member_id].subscribed_topic_ids
            for p in partitions:
                assert (topic_id, p) not in seen
                seen.add((topic_id, p))
    assert seen == {(t, p) for m in members.values() for t in m.subscribed_topic_ids
                    for p in range(topics[t].partitions)}
    assert set(result) == set(members)


@pytest.mark.parametrize("name", ["uniform", "range"])
@pytest.mark.parametrize("homogeneous", [True, False])
def test_every_subscribed_partition_once(name, homogeneous):
    rng = random.Random(f"{name}{homogeneous}")
    for _ in range(200):
        members, topics = random_group(rng, homogeneous)
        check_valid(members, topics, assignors()[name].assign(members, topics))


def with_assigned(members, result):
    return {m: MemberSpec(s.member_id, s.instance_id, s.rack_id, s.subscribed_topic_ids, result.get(m, {}))
            for m, s in members.items()}


def test_uniform_homogeneous_is_balanced_and_sticky_when_a_member_joins_or_leaves():
    rng = random.Random("sticky")
    uniform = assignors()["uniform"]
    for _ in range(200):
        members, topics = random_group(rng, homogeneous=True)
        first = uniform.assign(members, topics)
        sizes = [sum(map(len, a.values())) for a in first.values()]
        assert max(sizes) - min(sizes) <= 1
        members = with_assigned(members, first)
        subscribed = next(iter(members.values())).subscribed_topic_ids
        if rng.random() < 0.5 or len(members) == 1:
            members["newcomer"] = member("newcomer", subscribed)
        else:
            members.pop(rng.choice(list(members)))
        second = uniform.assign(members, topics)
        check_valid(members, topics, second)
        sizes = [sum(map(len, a.values())) for a in second.values()]
        assert max(sizes) - min(sizes) <= 1
        total = sum(topics[t].partitions for t in subscribed)
        floor_quota = total // len(members)
        for member_id, spec in members.items():
            kept = sum(len(set(spec.assigned.get(t, ())) & second[member_id].get(t, frozenset()))
                       for t in spec.assigned)
            assert kept >= min(sum(map(len, spec.assigned.values())), floor_quota)


def test_uniform_heterogeneous_keeps_what_members_still_subscribe_to():
    topics = topics_of(6, 6)
    members = {"a": member("a", [T[0]], assigned={T[0]: frozenset({0, 1, 2})}),
               "b": member("b", [T[0], T[1]], assigned={T[0]: frozenset({3, 4, 5})}),
               "c": member("c", [T[1]])}
    result = assignors()["uniform"].assign(members, topics)
    check_valid(members, topics, result)
    assert result["a"][T[0]] == frozenset({0, 1, 2})
    assert result["b"][T[0]] == frozenset({3, 4, 5})
    sizes = {m: sum(map(len, r.values())) for m, r in result.items()}
    assert sizes == {"a": 3, "b": 4, "c": 5}


def test_racks_do_not_change_the_assignment():
    """Kafka 4.3.1's consumer assignors do not read racks."""
    rng = random.Random("racks")
    for name in ("uniform", "range"):
        for _ in range(50):
            members, topics = random_group(rng, homogeneous=rng.random() < 0.5)
            racked_topics = {t: TopicSpec(s.topic_id, s.name, s.partitions,
                                          {p: frozenset({"r1"}) for p in range(s.partitions)})
                             for t, s in topics.items()}
            racked = {m: MemberSpec(s.member_id, s.instance_id, "r1", s.subscribed_topic_ids)
                      for m, s in members.items()}
            assert assignors()[name].assign(racked, racked_topics) == assignors()[name].assign(members, topics)


def test_group_subscription_type_follows_kafka():
    from kcoord.coordinator.assignors.spec import HETEROGENEOUS, HOMOGENEOUS, group_subscription_type
    assert group_subscription_type([], {}) == HOMOGENEOUS
    assert group_subscription_type([({"a", "b"}, None), ({"b", "a"}, None)], {}) == HOMOGENEOUS
    # a name that does not exist still counts: equal topic ids, yet heterogeneous
    assert group_subscription_type([({"a", "gone"}, None), ({"a"}, None)], {}) == HETEROGENEOUS
    assert group_subscription_type([(set(), "t.*"), (set(), "t.*")], {"t.*": {"t1", "t2"}}) == HOMOGENEOUS
    assert group_subscription_type([(set(), "t.*"), (set(), "t.*")], {}) == HOMOGENEOUS  # not resolved yet
    assert group_subscription_type([(set(), "t.*"), (set(), "u.*")], {"t.*": {"t1"}, "u.*": {"t1"}}) == HETEROGENEOUS
    assert group_subscription_type([({"t1"}, "t.*"), (set(), "t.*")], {"t.*": {"t1"}}) == HETEROGENEOUS
    assert group_subscription_type([(set(), "t.*"), ({"x"}, None)], {"t.*": {"t1"}}) == HETEROGENEOUS


def test_record_partitions_carry_their_record_order_back():
    from kcoord.coordinator.javaorder import RecordPartitions, record_list
    rp = RecordPartitions([17, 1, 33])
    assert rp == frozenset({1, 17, 33}) and rp.record_order == (17, 1, 33)
    assert record_list(rp) == [17, 1, 33]
    assert record_list(frozenset({17, 1})) == [1, 17]
    assert record_list((17, 1)) == [17, 1]
    assert partitions_order(rp) == [17, 1, 33]  # all in bucket 1, as listed


def test_results_are_record_partitions_in_record_order():
    topics = topics_of(40, 40)
    members = {f"m{i}": member(f"m{i}", topics) for i in range(3)}
    for name in ("uniform", "range"):
        result = assignors()[name].assign(members, topics)
        for by_topic in result.values():
            for partitions in by_topic.values():
                assert sorted(partitions.record_order) == sorted(partitions)
