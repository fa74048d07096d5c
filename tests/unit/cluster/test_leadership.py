"""kcoord.cluster.Cluster: who leads each partition as brokers stop, come back and elections run;
every change bumps the leader epoch, and the epoch cache answers as Kafka's does."""
from kcoord.cluster.cluster import NO_LEADER, Cluster, Node
from kcoord.log.topics import TopicStore


def cluster(n=3, **kw):
    c = Cluster([Node(i, "127.0.0.1", 0) for i in range(n)])
    store = TopicStore(1, c, **kw)
    changes = []
    c.listeners.append(changes.append)
    return c, store, changes


def test_a_fenced_brokers_partitions_go_to_the_next_in_sync_replica_and_come_back_by_election():
    c, store, changes = cluster()
    topic = store.create("t", 6, replication_factor=3)
    led_by_0 = [p for p in topic.partitions if p.leader == 0]
    assert led_by_0 and all(p.leader_epoch == 0 for p in topic.partitions)
    c.fence(0, "stopped")
    for p in led_by_0:
        assert p.leader == p.replicas[1] and p.leader_epoch == 1 and 0 not in p.isr
    assert {ch.old_leader for ch in changes} == {0} and len(changes) == len(led_by_0)
    c.unfence(0, "started")
    assert all(0 in p.isr for p in topic.partitions)
    assert all(p.leader != 0 for p in led_by_0), "a returning broker leads nothing until an election"
    assert sorted(c.imbalanced()) == sorted(("t", p.index) for p in led_by_0)
    for p in led_by_0:
        assert c.elect("t", p.index, preferred=True, reason="preferred") is None
        assert p.leader == 0 and p.leader_epoch == 2
    assert c.elect("t", led_by_0[0].index, preferred=True, reason="again") == "ELECTION_NOT_NEEDED"


def test_a_partition_without_an_in_sync_replica_has_no_leader_until_one_returns():
    c, store, _ = cluster()
    p = store.create("single", 1, replication_factor=1).partitions[0]
    owner = p.leader
    c.fence(owner, "killed")
    assert p.leader == NO_LEADER and p.isr == [owner] and p.leader_epoch == 1
    assert c.elect("single", 0, preferred=False, reason="unclean") == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    c.unfence(owner, "started")
    assert p.leader == owner and p.leader_epoch == 2


def test_moving_a_leader_and_its_refusals():
    c, store, _ = cluster()
    p = store.create("m", 1, replication_factor=2).partitions[0]
    follower = p.replicas[1]
    outsider = ({0, 1, 2} - set(p.replicas)).pop()
    assert c.move_leader("m", 0, outsider) == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    assert c.move_leader("m", 0, follower) is None and p.leader == follower
    assert c.move_leader("m", 0, follower) == "ELECTION_NOT_NEEDED"
    assert c.move_leader("nope", 0, follower) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert c.controller_id == 0
    c.fence(0, "stopped")
    assert c.controller_id == 1


def test_the_epoch_cache_answers_offset_for_leader_epoch_as_kafka():
    c, store, _ = cluster()
    p = store.create("e", 1, replication_factor=3).partitions[0]
    p.high_watermark = 5            # records 0-4 written in epoch 0
    c.move_leader("e", 0, p.replicas[1])
    c.move_leader("e", 0, p.replicas[2])   # epoch 1 got no record: forgotten, as Kafka's cache does
    p.high_watermark = 9            # records 5-8 in epoch 2
    assert p.epochs == [(0, 0), (2, 5)]
    assert p.end_of_epoch(2) == (2, 9)          # the current epoch ends at the log end
    assert p.end_of_epoch(0) == (0, 5)          # an old one where the next starts
    assert p.end_of_epoch(1) == (0, 5)          # one never seen: the newest known below it
    assert p.end_of_epoch(3) == (-1, -1) and p.end_of_epoch(-1) == (-1, -1)
