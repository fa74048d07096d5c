"""Reassignments in kcoord.cluster, on the manual clock: the replicas Kafka's controller reports
at each stage, the copying at the copy rate and under the replication throttles, the leader
moving off a removed replica, cancelling, and Kafka's refusals."""
import pytest

from kcoord.cluster.cluster import Cluster, Node, ReassignmentError
from kcoord.cluster.reassignment import TICK_MS, ReplicaCopier
from kcoord.coordinator.clock import ManualTimer
from kcoord.log.topics import TopicStore
from wire.records import build_batch


def setup(n=4, rate=1000, broker_configs=None):
    c = Cluster([Node(i, "127.0.0.1", 0) for i in range(n)])
    store = TopicStore(1, c)
    timer = ManualTimer()
    configs = broker_configs if broker_configs is not None else {}
    copier = ReplicaCopier(c, timer, rate, lambda node, name: configs.get((node, name)))
    changes = []
    c.listeners.append(changes.append)
    return c, store, timer, copier, changes


def fill(partition, batches=10, value=b"x" * 80):
    for _ in range(batches):
        partition.append(build_batch([(b"k", value)]))
    return partition.size_bytes()


def moving(target, rate):
    """A filled partition on [0, 1] a second into its move to `target`."""
    c, store, timer, copier, _ = setup(rate=rate)
    p = store.create("t", 1, assignment={0: [0, 1]}).partitions[0]
    fill(p)
    c.reassign("t", 0, target)
    copier.start()
    timer.advance(1000)
    return c, p, timer, copier


def test_an_added_replica_copies_at_the_copy_rate_then_the_removed_one_goes():
    c, store, timer, copier, changes = setup(rate=1000)
    p = store.create("t", 1, assignment={0: [0, 1]}).partitions[0]
    size = fill(p)
    assert size > 1000
    c.reassign("t", 0, [2, 1])
    copier.start()
    # As Kafka's controller: the target first, then the replicas being removed.
    assert (p.replicas, p.adding, p.removing, p.isr, p.leader) == ([2, 1, 0], [2], [0], [0, 1], 0)
    timer.advance(1000)
    assert 2 not in p.isr and p.copied[2] == pytest.approx(1000)
    assert c.reassigning() == [("t", p)]
    timer.advance(size - 1000 + TICK_MS)   # 1000 B/s: a byte a millisecond
    assert (p.replicas, p.adding, p.removing) == ([2, 1], [], [])
    # The leader was removed: the first in-sync target replica leads, in a new epoch.
    assert p.isr == [2, 1] and p.leader == 2 and p.leader_epoch == 1
    assert changes[-1].old_leader == 0 and changes[-1].new_leader == 2
    assert not c.reassigning() and not timer.is_scheduled("reassignment-copy")


def test_the_leader_stays_when_kept_and_the_epoch_is_bumped_when_a_replica_leaves():
    c, store, timer, copier, changes = setup()
    p = store.create("t", 1, assignment={0: [0, 1]}).partitions[0]
    c.reassign("t", 0, [0, 2])
    copier.start()
    timer.advance(TICK_MS)   # an empty partition: copied at the first tick
    assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ([0, 2], [0, 2], 0, 1)
    assert changes == []


def test_reordering_or_shrinking_within_the_isr_completes_at_once():
    c, store, _, _, _ = setup()
    p = store.create("t", 1, assignment={0: [0, 1, 2]}).partitions[0]
    c.reassign("t", 0, [2, 1, 0])
    assert (p.replicas, p.adding, p.removing, p.leader, p.leader_epoch) == ([2, 1, 0], [], [], 0, 0)
    c.reassign("t", 0, [2, 1])
    assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ([2, 1], [1, 2], 2, 1)


def test_cancelling_goes_back_to_the_replicas_before():
    c, p, timer, copier = moving(target=[2, 3], rate=10)
    assert (p.replicas, p.adding, p.removing) == ([2, 3, 0, 1], [2, 3], [0, 1])
    c.cancel_reassignment("t", 0)
    assert (p.replicas, p.adding, p.removing, p.isr, p.leader) == ([0, 1], [], [], [0, 1], 0)
    with pytest.raises(ReassignmentError) as err:
        c.cancel_reassignment("t", 0)
    assert err.value.code_name == "NO_REASSIGNMENT_IN_PROGRESS"
    assert str(err.value) == "No partition reassignment is in progress."


@pytest.mark.parametrize("target, code, message", [
    ([], "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty replica list."),
    ([0, 7], "INVALID_REPLICA_ASSIGNMENT",
     "The manual partition assignment includes broker 7, but no such broker is registered."),
    ([1, 1], "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes the broker 1 more than once."),
])
def test_kafkas_refusals_of_a_target(target, code, message):
    c, store, _, _, _ = setup()
    p = store.create("t", 1, assignment={0: [0, 1]}).partitions[0]
    with pytest.raises(ReassignmentError) as err:
        c.reassign("t", 0, target)
    assert (err.value.code_name, str(err.value)) == (code, message)
    assert p.replicas == [0, 1] and not p.adding


def test_unknown_partitions_and_a_replication_factor_change_not_allowed():
    c, store, _, _, _ = setup()
    store.create("t", 1, assignment={0: [0, 1]})
    for topic, index, message in (("nope", 0, "Unable to find a topic named nope."),
                                  ("t", 3, "Unable to find partition t:3.")):
        with pytest.raises(ReassignmentError) as err:
            c.reassign(topic, index, [0])
        assert (err.value.code_name, str(err.value)) == ("UNKNOWN_TOPIC_OR_PARTITION", message)
    with pytest.raises(ReassignmentError) as err:
        c.reassign("t", 0, [0, 1, 2], allow_rf_change=False)
    assert (err.value.code_name, str(err.value)) == ("INVALID_REPLICATION_FACTOR",
                                                      "The replication factor is changed from 2 to 3")


def test_throttles_share_a_brokers_budget_between_the_replicas_they_list():
    configs = {(2, "follower.replication.throttled.rate"): "100", (0, "leader.replication.throttled.rate"): "60"}
    c, store, timer, copier, _ = setup(rate=1000, broker_configs=configs)
    topic = store.create("t", 2, assignment={0: [0], 1: [1]})
    for p in topic.partitions:
        fill(p)
    c.reassign("t", 0, [2])
    c.reassign("t", 1, [2])
    assert copier.rates() == {("t", 0, 2): 1000, ("t", 1, 2): 1000}, "no replica listed: no throttle"
    store.set_configs("t", {"follower.replication.throttled.replicas": "0:2,1:2",
                            "leader.replication.throttled.replicas": "0:0"})
    assert copier.rates() == {("t", 0, 2): 50, ("t", 1, 2): 50}
    configs[(2, "follower.replication.throttled.rate")] = "1000"
    assert copier.rates() == {("t", 0, 2): 60, ("t", 1, 2): 500}
    store.set_configs("t", {"follower.replication.throttled.replicas": "*"})
    assert copier.rates() == {("t", 0, 2): 500, ("t", 1, 2): 500}


def test_a_stopped_broker_copies_nothing_and_rejoins_only_once_copied():
    c, p, timer, copier = moving(target=[0, 2], rate=100)
    c.fence(2, "stopped")
    timer.advance(1000)
    assert p.copied[2] == pytest.approx(100)
    c.unfence(2, "started")
    assert 2 not in p.isr and p.adding == [2]


@pytest.mark.parametrize("compacted", [False, True])
def test_a_data_dir_keeps_a_reassignment_in_progress_and_a_finished_one(tmp_path, compacted):
    from kcoord.storage import DurableState

    def open_state():
        c = Cluster([Node(i, "127.0.0.1", 0) for i in range(4)])
        store = TopicStore(1, c)
        state = DurableState(tmp_path, store, fsync="never")
        state.load()
        c.listeners.append(lambda ch: state.leadership_changed(ch.topic, store.partition(ch.topic, ch.partition)))
        c.partition_listeners.append(state.leadership_changed)
        return c, store, state

    c, store, state = open_state()
    topic = store.create("t", 2, assignment={0: [0, 1], 1: [1, 0]})
    fill(topic.partitions[0])
    c.reassign("t", 0, [2, 1])       # in progress: 2 has not copied the partition
    c.reassign("t", 1, [1, 3])
    c.replica_caught_up("t", topic.partitions[1], 3)
    if compacted:
        state.compact()
    state.log.close()

    c, store, state = open_state()
    first, second = store.get("t").partitions
    assert (first.replicas, first.adding, first.removing, first.isr, first.leader) == ([2, 1, 0], [2], [0], [0, 1], 0)
    assert (second.replicas, second.adding, second.removing, second.isr) == ([1, 3], [], [], [1, 3])
    assert second.leader_epoch == 1, "the epoch bumped when 0 left is kept"
    assert c.reassigning() == [("t", first)]
    state.log.close()


def test_a_topics_throttled_replica_lists_are_checked_as_kafka_checks_them():
    from kcoord.log.configs import TopicConfigError, check_topic_config, throttles

    for good in ("", "*", "0:1,1:2", " 0:1 , 3:0"):
        check_topic_config("leader.replication.throttled.replicas", good)
    with pytest.raises(TopicConfigError) as err:
        check_topic_config("follower.replication.throttled.replicas", "0:1, 0-1")
    assert str(err.value) == (
        "Invalid value [0:1, 0-1] for configuration follower.replication.throttled.replicas: "
        "follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
        "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
    name = "leader.replication.throttled.replicas"
    assert throttles({name: "0:1, 2:0"}, name, 2, 0) and not throttles({name: "0:1"}, name, 1, 0)
    assert throttles({name: "*"}, name, 5, 5) and not throttles({}, name, 0, 0)


def test_a_target_resubmitted_mid_move_still_copies_and_then_completes():
    c, p, timer, copier = moving(target=[2, 1], rate=100)
    c.reassign("t", 0, [2, 1])   # kafka-reassign-partitions --additional, to change the throttle
    # As Kafka's controller: 2 is in the replicas already, so no longer "adding"; it still copies.
    assert (p.replicas, p.adding, p.removing, p.isr) == ([2, 1, 0], [], [0], [0, 1])
    assert p.copied[2] == pytest.approx(100)
    timer.advance(p.size_bytes() * 10)
    assert (p.replicas, p.adding, p.removing, p.isr, p.leader, p.copied) == ([2, 1], [], [], [2, 1], 2, {})
