"""The shipped `kcoord_server` fixture, used as a user's test suite would use it."""
import pytest
from kafka import KafkaConsumer, KafkaProducer


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
