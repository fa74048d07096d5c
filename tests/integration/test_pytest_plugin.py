"""The shipped `kcoord_server` fixture, used as a user's test suite would use it."""
import pytest
from kafka import KafkaConsumer, KafkaProducer

from kcoord.conformance.member import subscribe_kafka_python


def test_fixture_yields_a_working_server_with_wait_for(kcoord_server):
    producer = KafkaProducer(bootstrap_servers=kcoord_server.bootstrap)
    producer.send("orders", b"o-1").get(30)
    producer.close()
    consumer = KafkaConsumer("orders", bootstrap_servers=kcoord_server.bootstrap, group_id="billing",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        records = []
        while not records:
            records = [r for rs in consumer.poll(1000).values() for r in rs]
        consumer.commit()
        description = kcoord_server.wait_for("billing", state="Stable", members=1)
        assert description.state == "Stable" and len(description.members) == 1
        assert kcoord_server.committed("billing") == {("orders", 0): 1}
        assert kcoord_server.config.data_dir is None and kcoord_server.http_url is None
    finally:
        consumer.close()


@pytest.mark.kcoord(default_partitions=2, http_host="127.0.0.1")
def test_marker_passes_server_config(kcoord_server, tmp_path):
    assert kcoord_server.config.default_partitions == 2
    assert kcoord_server.http_url.startswith("http://127.0.0.1:")
    assert kcoord_server.app.storage is None   # memory only unless data_dir is given


def test_data_dir_keeps_commits_and_topics_across_servers(tmp_path):
    """Two servers in a row on one data dir, as two tests using @pytest.mark.kcoord(data_dir=...) see it."""
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    from kcoord.testing.plugin import KcoordHandle, start_server
    path = str(tmp_path / "d")
    first = KcoordHandle(start_server(data_dir=path))
    try:
        producer = KafkaProducer(bootstrap_servers=first.bootstrap)
        producer.send("kept", b"x").get(30)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=first.bootstrap, group_id="g", enable_auto_commit=False)
        consumer.commit({TopicPartition("kept", 0): OffsetAndMetadata(5, "", -1)})
        consumer.close(autocommit=False)
    finally:
        first._thread.stop()
    second = KcoordHandle(start_server(data_dir=path))
    try:
        assert second.committed("g") == {("kept", 0): 5}
        assert second.app.broker.topics.get("kept").partitions[0].high_watermark == 1
    finally:
        second._thread.stop()


def _poll_until(consumer, done, what, timeout=60.0):
    import time

    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, what
        consumer.poll(timeout_ms=200)


@pytest.mark.kcoord(brokers=3, default_replication_factor=3)
def test_several_brokers_a_handle_each_and_the_coordinator_moving_when_one_stops(kcoord_server):
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    from kcoord.cluster.controls import ClusterControlError

    brokers = kcoord_server.brokers
    assert [b.node_id for b in brokers] == [0, 1, 2] and all(b.running and not b.fenced for b in brokers)
    assert kcoord_server.bootstrap == ",".join(b.bootstrap for b in brokers)
    producer = KafkaProducer(bootstrap_servers=brokers[2].bootstrap)   # any one broker bootstraps a client
    producer.send("orders", b"o-1").get(30)
    producer.close()
    leader = kcoord_server.leader("orders", 0)
    assert [b.leads("orders", 0) for b in brokers] == [i == leader for i in range(3)]

    consumer = KafkaConsumer(bootstrap_servers=kcoord_server.bootstrap, group_id="billing",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    # Not subscribed in the constructor: kafka-python would join before its metadata came (the
    # stall in docs/testing.md).
    subscribe_kafka_python(consumer, ["orders"])
    try:
        _poll_until(consumer, lambda: kcoord_server.coordinator_of("billing") >= 0 and consumer.assignment(),
                    "the consumer did not join")
        first = kcoord_server.coordinator_of("billing")
        brokers[first].stop()
        assert not brokers[first].running and brokers[first].fenced
        with pytest.raises(ClusterControlError, match=f"broker {first} is not running"):
            brokers[first].stop()
        # The group's partition has a new leader, whose coordinator loads the group; the consumer
        # finds it and commits there.
        assert kcoord_server.coordinator_of("billing") not in (first, -1)
        consumer.commit({TopicPartition("orders", 0): OffsetAndMetadata(1, "", -1)})
        assert kcoord_server.committed("billing") == {("orders", 0): 1}
        brokers[first].start()
        assert brokers[first].running and not brokers[first].leads("orders", 0), "back as a follower"
    finally:
        consumer.close()

    kcoord_server.elect_preferred()   # every partition back on its preferred leader
    assert kcoord_server.elect_preferred() == {}
    preferred = kcoord_server.leader("orders", 0)
    other = (preferred + 1) % 3
    kcoord_server.move_leader("orders", 0, other)
    assert kcoord_server.leader("orders", 0) == other and brokers[other].leads("orders", 0)
    with pytest.raises(ClusterControlError, match="ELECTION_NOT_NEEDED"):
        kcoord_server.move_leader("orders", 0, other)
    assert kcoord_server.elect_preferred([("orders", 0)]) == {("orders", 0): None}
    assert kcoord_server.leader("orders", 0) == preferred
