"""The reassignment planner on generated clusters: deterministic, idempotent, leaves a
balanced cluster alone, fills added brokers within the racks, empties removed ones, orders
leaders optimally on cases small enough to check every order, and refuses bad input."""
from __future__ import annotations

import itertools
import json

import pytest

from kcoord.reassign.model import Cluster, Partition, PlanError, changed, parse_reassignment_json, \
    reassignment_json
from kcoord.reassign.plan import Options, plan, target_brokers
from kcoord.reassign.score import bytes_per_broker, score
from kcoord.reassign.synthetic import generated


def _targets(cluster: Cluster, options: Options) -> set[int]:
    return target_brokers(cluster, options)


def test_the_same_cluster_gives_the_same_plan():
    cluster = generated(6, 120, extra_brokers=2, seed=7)
    options = Options(add=(7, 8))
    first, second = plan(cluster, options), plan(cluster, options)
    assert first.assignment() == second.assignment()
    assert changed(cluster, first)   # and it is not the empty plan


def test_a_planned_cluster_plans_to_nothing():
    cluster = generated(6, 120, extra_brokers=3, seed=3)
    planned = plan(cluster, Options(add=(7, 8, 9)))
    assert changed(cluster, planned)
    assert changed(planned, plan(planned)) == {}


def test_a_balanced_cluster_moves_nothing():
    # Kafka's own placement of equal-sized partitions: counts and bytes already even.
    cluster = generated(6, 60, seed=1)
    even = Cluster(cluster.racks, tuple(Partition(p.topic, p.partition, p.replicas, 1000)
                                        for p in cluster.partitions))
    s = score(even, plan(even), set(even.racks))
    assert (s.partitions_moved, s.bytes_moved) == (0, 0)


def test_added_brokers_take_their_share_within_the_racks():
    cluster = generated(6, 90, extra_brokers=3, seed=5)   # 2 brokers per rack, then 3
    options = Options(add=(7, 8, 9))
    planned = plan(cluster, options)
    targets = _targets(cluster, options)
    s = score(cluster, planned, targets)
    assert s.rack_violations == 0
    # Bytes within the tolerance of the mean; replica counts within the band around their share
    # (a few large partitions may carry a new broker's share of bytes).
    load = bytes_per_broker(planned, targets)
    mean = sum(load.values()) / len(load)
    assert max(load.values()) - min(load.values()) <= options.tolerance * mean * 1.01, load
    counts = {b: sum(b in p.replicas for p in planned.partitions) for b in targets}
    # (at least twice a broker's share of the 90 leaders: its share and as many first followers)
    assert 2 * 90 // 9 <= min(counts.values()) <= max(counts.values()) <= 30 * (1 + options.count_band), counts
    # Only what the new brokers need moves: each moved replica lands on a new broker.
    for p in planned.partitions:
        assert set(p.replicas) - set(cluster.partition(p.key).replicas) <= {7, 8, 9}
    assert s.partitions_moved <= 90


def test_balancing_counts_keeps_every_broker_within_one_replica_of_its_share():
    cluster = generated(6, 90, extra_brokers=3, seed=5)
    options = Options(add=(7, 8, 9), objective="count")
    planned = plan(cluster, options)
    counts = {b: sum(b in p.replicas for p in planned.partitions) for b in _targets(cluster, options)}
    assert set(counts.values()) == {30}, counts
    assert score(cluster, planned, _targets(cluster, options)).rack_violations == 0


def test_a_removed_broker_is_emptied():
    cluster = generated(6, 60, racks=0, seed=2)
    planned = plan(cluster, Options(remove=(4,)))
    assert all(4 not in p.replicas for p in planned.partitions)
    assert all(len(p.replicas) == 3 for p in planned.partitions)


def test_topics_outside_the_filter_are_untouched():
    cluster = generated(6, 60, extra_brokers=2, seed=4)
    planned = plan(cluster, Options(add=(7, 8), topics=frozenset({"topic-1"})))
    moved = changed(cluster, planned)
    assert moved and {t for t, _ in moved} == {"topic-1"}


def _order_sum(cluster: Cluster, brokers: set[int]) -> int:
    s = score(cluster, cluster, brokers)
    return s.leader_spread + s.broker_down_spread


@pytest.mark.parametrize("replication,partitions", [(2, 7), (3, 5)])
def test_leader_order_is_optimal_when_every_order_can_be_checked(replication, partitions):
    racks = {b: None for b in range(1, 5)}
    sets = list(itertools.combinations(sorted(racks), replication))
    start = Cluster(racks, tuple(Partition("t", i, sets[i % len(sets)], 10) for i in range(partitions)))
    best = min(_order_sum(Cluster(racks, tuple(Partition("t", i, order, 10) for i, order in enumerate(orders))),
                          set(racks))
               for orders in itertools.product(*(list(itertools.permutations(p.replicas))
                                                 for p in start.partitions)))
    planned = plan(start)
    assert {p.key: set(p.replicas) for p in planned.partitions} == {p.key: set(p.replicas)
                                                                    for p in start.partitions}
    assert _order_sum(planned, set(racks)) == best


def test_score_counts_rack_violations_and_the_failover_spread():
    racks = {1: "a", 2: "a", 3: "b", 4: "c"}
    cluster = Cluster(racks, (Partition("t", 0, (1, 2, 3), 5), Partition("t", 1, (3, 4, 1), 7),
                              Partition("t", 2, (4, 1, 3), 1)))
    s = score(cluster, cluster, set(racks))
    assert s.rack_violations == 1                  # t-0 has two replicas in rack a
    assert (s.bytes_max, s.bytes_min) == (13, 5)   # broker 1: 5+7+1, broker 2: 5
    assert s.leader_spread == 1                    # leaders 1, 3, 4; broker 2 leads none
    # Broker 3 down: t-1 goes to 4 -> {1:1, 2:0, 4:2}: spread 2, the worst failure.
    assert s.broker_down_spread == 2


def test_an_unknown_broker_is_refused():
    cluster = generated(3, 6, seed=1)
    with pytest.raises(PlanError, match="--add-broker 9: no such broker"):
        plan(cluster, Options(add=(9,)))
    with pytest.raises(PlanError, match="--remove-broker 9: no such broker"):
        plan(cluster, Options(remove=(9,)))


def test_too_few_brokers_or_racks_is_refused():
    cluster = generated(3, 6, racks=0, seed=1)
    with pytest.raises(PlanError, match="has 3 replicas but only 2 of the brokers would hold replicas: 2, 3"):
        plan(cluster, Options(remove=(1,)))
    racks = {1: "a", 2: "b", 3: "b", 4: "b"}
    lopsided = Cluster(racks, (Partition("t", 0, (1, 2, 3, 4), 1),))
    with pytest.raises(PlanError, match="t-0 has 4 replicas but racks a:1, b:3 .* hold at most 3"):
        plan(lopsided)


def test_a_stale_plan_is_refused():
    cluster = generated(3, 6, seed=1)
    with pytest.raises(PlanError, match="partition gone-0, which the cluster does not have"):
        cluster.with_assignment(parse_reassignment_json(json.dumps(reassignment_json({("gone", 0): (1, 2)}))))
    with pytest.raises(PlanError, match="on broker 42, which the cluster does not have"):
        cluster.with_assignment({("topic-0", 0): (1, 42, 2)})
    with pytest.raises(PlanError, match="not Kafka's reassignment JSON"):
        parse_reassignment_json('{"version": 1}')


def test_a_large_cluster_is_planned_rack_by_rack_and_replans_to_nothing():
    # From SEPARATE_RACKS_FROM partitions, racks that fix their shares get a program each: no
    # replica leaves its rack, each rack's bytes are within the tolerance, and a re-plan (which
    # checks the racks one by one too) moves nothing.
    from kcoord.reassign import plan as planner

    cluster = generated(9, planner.SEPARATE_RACKS_FROM, extra_brokers=3, seed=11)
    options = Options(add=(10, 11, 12))
    planned = plan(cluster, options)
    targets = _targets(cluster, options)
    before = {p.key: p for p in cluster.partitions}
    for p in planned.partitions:
        assert sorted(cluster.racks[b] for b in p.replicas) == sorted(cluster.racks[b] for b in before[p.key].replicas)
    load = bytes_per_broker(planned, targets)
    mean = sum(load.values()) / len(load)
    for rack in {cluster.racks[b] for b in targets}:
        mine = [load[b] for b in targets if cluster.racks[b] == rack]
        assert max(mine) - min(mine) <= options.tolerance * mean * 1.01, (rack, mine)
    s = score(cluster, planned, targets)
    assert s.rack_violations == 0 and 0 < s.partitions_moved < len(cluster.partitions) // 2
    assert changed(planned, plan(planned)) == {}
