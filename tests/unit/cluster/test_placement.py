"""kcoord.cluster.placement: Kafka's rack-aware replica placement, deterministic, and the
leadership balance it keeps when one broker stops."""
import itertools

import pytest

from kcoord.cluster.placement import (
    PlacementError, arrange, assign_replicas, check_assignment, leaders_after_failure,
)


def brokers(n, racks=None):
    return [(i, None if racks is None else racks[i % len(racks)]) for i in range(n)]


def test_brokers_are_arranged_alternating_racks():
    assert arrange([(0, "a"), (1, "a"), (2, "b"), (3, "b"), (4, "c")]) == [0, 2, 4, 1, 3]
    assert arrange([(2, None), (0, None), (1, None)]) == [0, 1, 2]


def test_every_partition_has_distinct_replicas_and_leaders_are_spread():
    for n, rf, partitions in itertools.product(range(1, 7), range(1, 4), (1, 7, 50)):
        if rf > n:
            continue
        placed = assign_replicas(brokers(n), partitions, rf, "t")
        assert len(placed) == partitions and all(len(set(r)) == rf == len(r) for r in placed)
        leaders = [r[0] for r in placed]
        counts = [leaders.count(b) for b in range(n)]
        assert max(counts) - min(counts) <= 1, (n, rf, partitions, counts)


def test_placement_is_deterministic_and_depends_on_the_topic_name():
    assert assign_replicas(brokers(3), 6, 2, "orders") == assign_replicas(brokers(3), 6, 2, "orders")
    firsts = {assign_replicas(brokers(3), 1, 1, f"topic-{i}")[0][0] for i in range(20)}
    assert firsts == {0, 1, 2}, "single-partition topics should not all land on one broker"


def test_replicas_spread_over_racks_first():
    racked = brokers(6, "abc")
    for replicas in assign_replicas(racked, 30, 3, "t"):
        assert {racked[b][1] for b in replicas} == {"a", "b", "c"}
    for replicas in assign_replicas(brokers(4, "ab"), 20, 2, "t"):
        assert len({b % 2 for b in replicas}) == 2


@pytest.mark.parametrize("n,rf", [(n, rf) for n in range(2, 8) for rf in (2, 3) if rf <= n])
def test_leadership_stays_balanced_when_any_one_broker_stops(n, rf):
    for partitions in range(1, 61):
        placed = assign_replicas(brokers(n), partitions, rf, f"t{partitions}")
        for down in range(n):
            counts = leaders_after_failure(placed, down)
            survivors = [counts.get(b, 0) for b in range(n) if b != down]
            assert max(survivors) - min(survivors) <= 1, (partitions, down, placed)


def test_partitions_added_later_are_placed_as_the_whole_topic_would_be():
    whole = assign_replicas(brokers(3), 10, 2, "grown")
    assert assign_replicas(brokers(3), 4, 2, "grown", first_partition=6) == whole[6:]


def test_refusals_say_what_kafka_says():
    with pytest.raises(PlacementError, match="only 2 broker") as err:
        assign_replicas(brokers(2), 1, 3, "t")
    assert err.value.code_name == "INVALID_REPLICATION_FACTOR"
    with pytest.raises(PlacementError, match="larger than 0"):
        assign_replicas(brokers(2), 1, 0, "t")


def test_manual_assignments_are_checked_as_kafkas_controller_checks_them():
    assert check_assignment({0: [1, 0], 1: [0, 1]}, {0, 1}) == [[1, 0], [0, 1]]
    cases = [({0: []}, "empty replica list"), ({0: [0, 0]}, "broker 0 more than once"),
             ({0: [7]}, "broker 7, but no such broker is registered"),
             ({0: [0], 2: [1]}, "consecutive 0-based"), ({0: [0], 1: [0, 1]}, "not consistent with previous")]
    for assignment, words in cases:
        with pytest.raises(PlacementError, match=words) as err:
            check_assignment(assignment, {0, 1})
        assert err.value.code_name == "INVALID_REPLICA_ASSIGNMENT"
