"""The three-node reference Kafka (kcoord.testing.reference_kafka.ReferenceKafkaCluster) that
coordinator failover is compared on: records replicated three times outlive their leader,
leadership moves to a survivor, and the killed node comes back into the ISR."""
from __future__ import annotations

import time
import uuid

from kcoord.log import consumer_offsets as co
from kcoord.testing.brokers import produce_batch, read_partition
from wire import records as R


def _values(bootstrap: str, topic: str) -> list[bytes]:
    return [r.value for r in read_partition(bootstrap, topic, 0)]


def _wait_metadata(cluster, topic: str, via: int, until, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        state = cluster.metadata(topic, via=via).get(0)
        if state is not None and until(state):
            return state
        assert time.monotonic() < deadline, f"{what} within {timeout:g}s: {state}\n{cluster.log_tails()}"
        time.sleep(0.2)


def test_a_killed_leaders_partition_moves_to_a_survivor_with_its_records(reference_kafka_cluster):
    cluster = reference_kafka_cluster
    offsets = cluster.metadata(co.TOPIC)  # the readiness check's FindCoordinator created it
    assert len(offsets) == 50 and all(sorted(s.replicas) == [0, 1, 2] for s in offsets.values())

    topic = f"cluster-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1, replication_factor=3)
    before = cluster.metadata(topic)[0]
    assert sorted(before.replicas) == [0, 1, 2] and sorted(before.isr) == [0, 1, 2], before
    leader = before.leader
    values = [b"v%d" % i for i in range(20)]
    now = int(time.time() * 1000)  # Kafka's time retention deletes records stamped long ago
    produce_batch(cluster.node(leader).bootstrap, topic, 0,  # acks=-1: on every replica of the ISR
                  R.build_batch([(b"k%d" % i, v, now) for i, v in enumerate(values)]))
    assert _values(cluster.node(leader).bootstrap, topic) == values

    cluster.kill(leader)
    survivor = (leader + 1) % 3
    after = _wait_metadata(cluster, topic, survivor, lambda s: s.leader not in (leader, -1),
                           f"no new leader after node {leader} was killed")
    assert after.leader_epoch > before.leader_epoch
    cluster.wait_led(topic, 1)
    assert _values(cluster.node(after.leader).bootstrap, topic) == values

    cluster.start(leader)  # same ports, same log dir
    assert cluster.running(leader)
    back = _wait_metadata(cluster, topic, leader, lambda s: leader in s.isr,
                          f"node {leader} not back in the ISR")
    assert sorted(back.replicas) == [0, 1, 2]
    assert _values(cluster.node(back.leader).bootstrap, topic) == values

    # A SIGTERM is Kafka's controlled shutdown: the node hands its leadership over before it goes.
    stopping = back.leader
    cluster.stop(stopping)
    assert not cluster.running(stopping)
    moved = cluster.metadata(topic, via=(stopping + 1) % 3)[0]
    assert moved.leader not in (stopping, -1) and stopping not in moved.isr, moved
