"""__consumer_offsets records in Kafka's form (kcoord.log.consumer_offsets): the codec against
bytes the reference Kafka 4.3.1 wrote, and the sink's all-or-nothing append."""
from __future__ import annotations

import uuid

import pytest

from kcoord.coordinator.config import offsets_partition_for
from kcoord.coordinator.offsets.committed import CommittedOffset
from kcoord.coordinator.records import GroupMetadataRecord, OffsetCommitRecord
from kcoord.log import consumer_offsets as co
from kcoord.log.topics import TopicStore
from wire import records as R

# An OffsetCommit record the reference Kafka 4.3.1 wrote for group probe-g1, topic
# sc-probe-g1, partition 1 (read back from its __consumer_offsets).
KAFKA_KEY = bytes.fromhex("0001000870726f62652d6731000b73632d70726f62652d673100000001")
KAFKA_VALUE = bytes.fromhex("000400000000000000020000000001000001a20c0028f701001004d659337689434c8cfb21ae27d50fbb")
KAFKA_TOPIC_ID = uuid.UUID("04d65933-7689-434c-8cfb-21ae27d50fbb")


def test_decodes_what_kafka_wrote():
    assert co.decode(KAFKA_KEY, KAFKA_VALUE) == {
        "key": {"type": 1, "data": {"group": "probe-g1", "topic": "sc-probe-g1", "partition": 1}},
        "value": {"version": 4, "data": {"offset": 2, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1795497666807,
                                         "topicId": "BNZZM3aJQ0yM-yGuJ9UPuw"}}}


def test_encodes_the_bytes_kafka_wrote():
    record = OffsetCommitRecord("probe-g1", "sc-probe-g1", 1, CommittedOffset(2, 0, "", 1795497666807))
    assert co.kafka_record(record, KAFKA_TOPIC_ID) == ("probe-g1", KAFKA_KEY, KAFKA_VALUE)


def test_metadata_is_a_compact_string_of_its_utf8_bytes():
    for text in ("", "m", "é" * 70):   # 140 bytes: a two-byte length
        _, key, value = co.kafka_record(OffsetCommitRecord("g", "t", 0, CommittedOffset(5, 3, text, 10)), KAFKA_TOPIC_ID)
        assert co.decode(key, value)["value"] == {"version": 4, "data": {
            "offset": 5, "leaderEpoch": 3, "metadata": text, "commitTimestamp": 10, "topicId": "BNZZM3aJQ0yM-yGuJ9UPuw"}}


def test_an_explicit_expiry_is_value_v1_and_a_tombstone_has_no_value():
    _, key, value = co.kafka_record(OffsetCommitRecord("g", "t", 0, CommittedOffset(5, -1, "m", 10, 99)))
    assert co.decode(key, value)["value"] == {"version": 1, "data": {"offset": 5, "metadata": "m",
                                                                     "commitTimestamp": 10, "expireTimestamp": 99}}
    _, key, value = co.kafka_record(OffsetCommitRecord("g", "t", 0, None))
    assert value is None and co.decode(key, value) == {"key": {"type": 1, "data": {"group": "g", "topic": "t",
                                                                                     "partition": 0}}, "value": None}


def test_group_metadata_round_trip():
    group = {"group_id": "g", "generation": 4, "protocol_type": "consumer", "protocol_name": "range",
             "leader_id": "m1", "state_ms": 123,
             "members": [{"member_id": "m1", "instance_id": "i1", "client_id": "c", "client_host": "/10.0.0.1",
                          "rebalance_timeout_ms": 300, "session_timeout_ms": 100,
                          "protocols": [("roundrobin", b"rr"), ("range", b"sub")], "assignment": b"\x01"}]}
    _, key, value = co.kafka_record(GroupMetadataRecord("g", group))
    assert co.decode(key, value) == {"key": {"type": 2, "data": {"group": "g"}}, "value": {"version": 3, "data": {
        "protocolType": "consumer", "generation": 4, "protocol": "range", "leader": "m1", "currentStateTimestamp": 123,
        "members": [{"memberId": "m1", "groupInstanceId": "i1", "clientId": "c", "clientHost": "/10.0.0.1",
                     "rebalanceTimeout": 300, "sessionTimeout": 100, "subscription": "c3Vi", "assignment": "AQ=="}]}}}


def test_truncated_or_unknown_records_are_refused():
    with pytest.raises(co.OffsetsRecordError):
        co.decode(KAFKA_KEY[:-1], KAFKA_VALUE)
    with pytest.raises(co.OffsetsRecordError):
        co.decode(KAFKA_KEY, KAFKA_VALUE[:-3])
    with pytest.raises(co.OffsetsRecordError, match="key type 3"):
        co.decode_key(b"\x00\x03\x00\x01g")


class _FailingDisk:
    def __init__(self):
        self.calls = []

    def append_batches(self, batches):
        self.calls.append(batches)
        raise OSError("disk full")


def test_records_go_to_the_groups_partition_and_a_failed_write_leaves_nothing():
    store = TopicStore()
    topic = co.OffsetsTopic(store, partitions=5, now_ms=lambda: 1000)
    records = [OffsetCommitRecord("alpha", "t", 0, CommittedOffset(1, -1, "", 1000)),
               OffsetCommitRecord("beta", "t", 0, CommittedOffset(2, -1, "", 1000)),
               OffsetCommitRecord("alpha", "t", 1, CommittedOffset(3, -1, "", 1000))]
    topic.append(records)
    offsets = store.get(co.TOPIC)
    assert offsets.internal and len(offsets.partitions) == 5 and offsets.configs["cleanup.policy"] == "compact"
    seen = {}
    for p in offsets.partitions:
        for offset, record in co.decode_records(p.read(0, 1 << 20)):
            seen.setdefault(p.index, []).append((offset, record["key"]["data"]["group"],
                                                 record["value"]["data"]["offset"]))
    a, b = offsets_partition_for("alpha", 5), offsets_partition_for("beta", 5)
    assert a != b
    assert seen == {a: [(0, "alpha", 1), (1, "alpha", 3)], b: [(0, "beta", 2)]}
    # One batch per partition per operation, stamped with the operation's time.
    batch = next(R.iter_batches(offsets.partitions[a].read(0, 1 << 20)))
    assert (batch.base_offset, batch.last_offset_delta, batch.max_timestamp) == (0, 1, 1000)

    topic.durable = _FailingDisk()
    with pytest.raises(OSError):
        topic.append([OffsetCommitRecord("alpha", "t", 0, CommittedOffset(9, -1, "", 2000))])
    assert topic.durable.calls and offsets.partitions[a].high_watermark == 2


def test_compaction_keeps_each_keys_latest_record_at_its_offset():
    store = TopicStore()
    topic = co.OffsetsTopic(store, partitions=1, now_ms=lambda: 1000)
    for i in range(5):
        topic.append([OffsetCommitRecord("g", "t", 0, CommittedOffset(i, -1, "", 1000)),
                      OffsetCommitRecord("g", "t", 1, CommittedOffset(10 + i, -1, "", 1000))])
    topic.append([OffsetCommitRecord("g", "t", 1, None)])
    partition = store.get(co.TOPIC).partitions[0]
    topic.compact()
    kept = [(offset, r["key"]["data"]["partition"], r["value"] and r["value"]["data"]["offset"])
            for offset, r in co.decode_records(partition.read(0, 1 << 20))]
    assert kept == [(8, 0, 4), (10, 1, None)]
    assert partition.high_watermark == 11
    assert list(co.decode_records(partition.read(9, 1 << 20)))[0][0] == 10  # a fetch inside a gap moves on


def test_compaction_from_what_was_appended_equals_reading_the_log_back():
    """Compaction uses the latest records it kept track of while appending; whatever else
    changed the partition (a foreign append, deleted records) sends it back to reading the log,
    and both give the same partition."""
    def kept(partition):
        return [(offset, r["key"]["data"]["partition"], r["value"] and r["value"]["data"]["offset"])
                for offset, r in co.decode_records(partition.read(0, 1 << 20))]

    def run(foreign: bool):
        store = TopicStore()
        topic = co.OffsetsTopic(store, partitions=1, now_ms=lambda: 1000)
        partition = None
        for round_ in range(3):
            for i in range(4):
                topic.append([OffsetCommitRecord("g", "t", p, CommittedOffset(100 * round_ + 10 * p + i, -1, "", 1000))
                              for p in range(3)])
            partition = store.get(co.TOPIC).partitions[0]
            if round_ == 1:
                topic.append([OffsetCommitRecord("g", "t", 2, None)])
                if foreign:   # a batch the topic did not write, then records deleted from the start
                    key = co.kafka_record(OffsetCommitRecord("g", "t", 7, CommittedOffset(7, -1, "", 1000)))[1]
                    partition.restore(R.build_batch([(key, None, 1000)], partition.high_watermark))
                    partition.delete_records(3)
            topic.compact()
            if round_ == 0:
                assert topic._live[0][0] == partition.high_watermark   # tracked from the first compaction on
        return kept(partition), partition.high_watermark

    tracked, foreign = run(False), run(True)
    assert tracked[0][-3:] == [(34, 0, 203), (35, 1, 213), (36, 2, 223)]
    assert (25, 2, None) not in tracked[0]   # the tombstone's key was written again after it
    # With the foreign tombstone for partition 7 and the deleted start, the log was read back:
    assert (25, 7, None) in foreign[0] and foreign[0][-3:] == [(35, 0, 203), (36, 1, 213), (37, 2, 223)]
    assert foreign[1] == tracked[1] + 1


def test_consumer_group_records_in_kafkas_schemas():
    """A consumer group snapshot becomes Kafka's records 5, 3, 7, 6, 8; a member gone since the
    previous snapshot gets tombstones, a deleted group those of its metadata records."""
    import struct
    import uuid as _uuid

    from kcoord.log.consumer_offsets import consumer_group_records

    tid = str(_uuid.uuid4())
    member = {"member_id": "m1", "instance_id": None, "rack_id": None, "client_id": "c", "client_host": "/h",
              "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
              "server_assignor": None, "member_epoch": 2, "previous_member_epoch": 1, "state": "stable",
              "assigned": {tid: {"0": 2, "1": 2}}, "pending_revocation": {}}
    value = {"group_epoch": 2, "assignment_epoch": 2, "target": {"m1": {tid: [0, 1]}}, "members": [member]}
    records = consumer_group_records(value, "g", {"members": [dict(member, member_id="old")]})
    types = [struct.unpack(">h", k[:2])[0] for k, _ in records]
    assert types == [8, 7, 5, 5, 3, 7, 6, 8]
    assert [v for _, v in records[:3]] == [None, None, None]
    assert records[4][1] == b"\x00\x00" + struct.pack(">i", 2) + b"\x00"       # ConsumerGroupMetadataValue v0
    current = records[-1][1]
    assert current[:11] == b"\x00\x00" + struct.pack(">iib", 2, 1, 0)
    assert current[11:12] == b"\x02" and current[12:28] == _uuid.UUID(tid).bytes   # one topic, then its id
    deleted = consumer_group_records(None, "g", value)
    assert [(struct.unpack(">h", k[:2])[0], v) for k, v in deleted] == [(8, None), (7, None), (5, None),
                                                                         (6, None), (3, None)]
    # A resolved regex (type 16): its topics, version 0 and when it was resolved, before the
    # group's epoch record; tombstoned once nobody subscribes to it.
    with_regex = dict(value, resolved_regexes={"t.*": ["t"]}, regex_refresh_ms=1234)
    records = consumer_group_records(with_regex, "g", value)
    assert [struct.unpack(">h", k[:2])[0] for k, _ in records] == [5, 16, 3, 7, 6, 8]
    key, regex_value = records[1]
    assert key == b"\x00\x10\x00\x01g\x00\x03t.*"
    assert regex_value == b"\x00\x00" + b"\x02\x02t" + struct.pack(">qq", 0, 1234) + b"\x00"
    gone = consumer_group_records(value, "g", with_regex)
    assert (gone[0][0], gone[0][1]) == (key, None)


def test_conversions_end_one_kinds_records_and_start_the_others():
    """Online migration in __consumer_offsets, in Kafka's order: the upgrade writes the classic
    group's tombstone (type 2) before the consumer group's records; the downgrade the consumer
    group's tombstones before its GroupMetadata record. Offsets stay."""
    import struct

    from kcoord.coordinator.requests import OffsetCommitPartition, OffsetCommitRequest
    from tests.unit.coordinator.test_migration import classic_group, harness

    h = harness()
    store = TopicStore()
    topic = co.OffsetsTopic(store, partitions=1, now_ms=lambda: 1000)
    h.c.record_sink = topic
    first, _ = classic_group(h)
    assert h.c.commit_offsets(OffsetCommitRequest("g", first, 1, None, [OffsetCommitPartition("t", 0, 5)])).error == 0

    def kinds(start: int) -> list[tuple[int, bool]]:
        out = []
        for _, (k, v) in _raw(store.get(co.TOPIC).partitions[0], start):
            out.append((struct.unpack(">h", k[:2])[0], v is None))
        return out

    mark = store.get(co.TOPIC).partitions[0].high_watermark
    h.hb("m3", 0)
    upgrade = kinds(mark)
    assert upgrade[0] == (2, True) and (3, False) in upgrade and 2 not in [t for t, _ in upgrade[1:]]
    mark = store.get(co.TOPIC).partitions[0].high_watermark
    h.hb("m3", -1, owned=None, partial=True)
    downgrade = kinds(mark)
    assert downgrade[-1] == (2, False)
    assert all(dead for t, dead in downgrade[:-1]) and {t for t, _ in downgrade[:-1]} == {3, 5, 6, 7, 8}
    assert h.c.fetch_offsets("g", [("t", 0)])[1][0].offset == 5


def _raw(partition, start):
    for batch in R.iter_batches(partition.read(start, 1 << 20)):
        for record in R.decode_records(batch):
            yield record.offset, (record.key, record.value)
