"""Streams groups (KIP-1071) in __consumer_offsets: a StreamsGroupRecord snapshot becomes Kafka's
record types 17 and 19-23 in Kafka's order, with tombstones for members gone and for a deleted
group, and a partition's records load back into the same snapshot (what a restart, kill -9
included, rebuilds the group from)."""
from __future__ import annotations

import copy
import struct

import pytest

from kcoord.analytics.offsets_topic import rows_from_records
from kcoord.coordinator.config import offsets_partition_for
from kcoord.coordinator.offsets.committed import CommittedOffset
from kcoord.coordinator.records import OffsetCommitRecord, StreamsGroupRecord
from kcoord.log import consumer_offsets as co
from kcoord.log.offsets_loader import OffsetsPartitions, load_partition, read_partition
from kcoord.log.topics import TopicStore
from wire import records as R

PARTITIONS = 3


def _member(process: str, active: dict, epoch: int = 5, **metadata) -> dict:
    return {"metadata": {"instance_id": None, "rack_id": None, "client_id": f"{process}-client",
                         "client_host": "/10.0.0.1", "rebalance_timeout_ms": 300000, "topology_epoch": 1,
                         "process_id": process, "user_endpoint": None, "client_tags": {}, **metadata},
            "assignment": {"member_epoch": epoch, "previous_member_epoch": epoch - 1, "state": 0, "active": active,
                           "standby": {}, "warmup": {}, "active_pending_revocation": {},
                           "standby_pending_revocation": {}, "warmup_pending_revocation": {}}}


def _topic_info(name: str, partitions: int, configs: dict) -> dict:
    return {"name": name, "partitions": partitions, "replication_factor": -1, "topic_configs": configs}


def snapshot() -> dict:
    """Two members of an application with two subtopologies, one member revoking."""
    m1 = _member("p-1", {"0": {0: 5, 2: 4}, "1": {1: 5}}, instance_id="i-1", rack_id="r1",
                 user_endpoint={"host": "app-1.local", "port": 65535},
                 client_tags={"zone": "b", "az": "a", "é": "x"})
    m1["assignment"].update(standby={"1": [0, 2]}, warmup={"0": [1]}, active_pending_revocation={"0": {3: 3}},
                            standby_pending_revocation={"1": [3]}, warmup_pending_revocation={"0": [4]}, state=1)
    m2 = _member("p-2", {"1": {0: 5, 2: 5}})
    return {
        "group_id": "app",
        "metadata": {"epoch": 5, "metadata_hash": -8_000_000_000, "validated_topology_epoch": 1,
                     "last_assignment_configs": {"num.standby.replicas": "1"}},
        "topology": {"epoch": 1, "subtopologies": [
            {"subtopology_id": "1", "source_topics": ["app-repartition"], "source_topic_regex": [],
             "state_changelog_topics": [_topic_info("app-store-changelog", 0, {"cleanup.policy": "compact",
                                                                               "a.config": "1"})],
             "repartition_sink_topics": [], "repartition_source_topics": [_topic_info("app-repartition", 4, {})],
             "copartition_groups": []},
            {"subtopology_id": "0", "source_topics": ["input", "other"], "source_topic_regex": ["in.*"],
             "state_changelog_topics": [], "repartition_sink_topics": ["app-repartition"],
             "repartition_source_topics": [],
             "copartition_groups": [{"source_topics": [0, 1], "source_topic_regex": [0],
                                     "repartition_source_topics": []}]}]},
        "members": {"m1": m1, "m2": m2},
        "target": {"assignment_epoch": 5, "assignment_timestamp_ms": 1_700_000_000_000,
                   "members": {"m1": {"active": {"0": [0, 2], "1": [1]}, "standby": {"1": [0, 2]}, "warmup": {}},
                               "m2": {"active": {"1": [0, 2]}, "standby": {}, "warmup": {"0": [1]}}}},
        "removed_members": [],
    }


def _types(records) -> list:
    return [(struct.unpack(">h", k[:2])[0], None if v is None else "v") for k, v in records]


def _offsets_topic(now_ms: int = 1000):
    store = TopicStore()
    return store, co.OffsetsTopic(store, partitions=PARTITIONS, now_ms=lambda: now_ms)


def _partition(store):
    return store.get(co.TOPIC).partitions[offsets_partition_for("app", PARTITIONS)]


def test_a_snapshot_is_kafkas_records_in_kafkas_order():
    records = co.streams_group_records(snapshot(), "app", None)
    # Members' metadata, the topology, the group's epoch, the target (members, then its metadata),
    # the current assignments: the order of Kafka's streamsGroupHeartbeat.
    assert [t for t, _ in _types(records)] == [19, 19, 23, 17, 21, 21, 20, 22, 22]
    key, value = records[3]
    assert key == b"\x00\x11\x00\x03app"
    # StreamsGroupMetadataValue v0: epoch, hash, then tag 0 (ValidatedTopologyEpoch) and tag 1
    # (LastAssignmentConfigs: one [Key, Value] with its empty tagged fields).
    assert value == (struct.pack(">hiq", 0, 5, -8_000_000_000) + b"\x02" + b"\x00\x04" + struct.pack(">i", 1)
                     + b"\x01\x19" + b"\x02\x15num.standby.replicas\x021\x00")
    # Kafka's defaults are not written: validated epoch -1, no configs, assignment timestamp 0.
    meta = dict(snapshot()["metadata"], validated_topology_epoch=-1, last_assignment_configs={})
    plain = dict(snapshot(), metadata=meta, target=dict(snapshot()["target"], assignment_timestamp_ms=0))
    records = co.streams_group_records(plain, "app", None)
    assert records[3][1] == struct.pack(">hiq", 0, 5, -8_000_000_000) + b"\x00"
    assert records[6][1] == struct.pack(">hi", 0, 5) + b"\x00"
    store, topic = _offsets_topic()
    topic.append([StreamsGroupRecord("app", plain)])
    assert read_partition(_partition(store), 2000).streams == [plain]


def test_task_lists_are_sorted_and_active_tasks_carry_their_epochs():
    records = dict(co.streams_group_records(snapshot(), "app", None))
    current = records[b"\x00\x16\x00\x03app\x00\x02m1"]
    assert current[:11] == struct.pack(">hiib", 0, 5, 4, 1)
    # ActiveTasks: two subtopologies; "0" has partitions 0 and 2 with epochs 5 and 4 in tag 0.
    assert current[11:12] == b"\x03"
    assert current[12:14] == b"\x020" and current[14:23] == b"\x03" + struct.pack(">ii", 0, 2)
    assert current[23:35] == b"\x01\x00\x09\x03" + struct.pack(">ii", 5, 4)
    member = records[b"\x00\x13\x00\x03app\x00\x02m1"]
    # ClientTags by key (Java's String order: "az", "zone", "é").
    assert member.index(b"\x03az") < member.index(b"\x05zone") < member.index("\x03é".encode())
    assert b"\x01\x0capp-1.local\xff\xff\x00" in member   # UserEndpoint: present, host, port, no tags


def test_round_trip_through_the_partition():
    store, topic = _offsets_topic()
    topic.append([StreamsGroupRecord("app", snapshot()),
                  OffsetCommitRecord("app", "input", 0, CommittedOffset(42, -1, "", 1000))])
    loaded = read_partition(_partition(store), 2000)
    assert loaded.streams == [snapshot()]
    assert loaded.offsets == [("app", "input", 0, CommittedOffset(42, -1, "", 1000))]
    # The runtime's four-part load is unchanged, and a streams group is not a consumer group.
    classic, consumer, offsets, _ = load_partition(_partition(store), 2000)
    assert (classic, consumer, offsets) == ([], [], loaded.offsets)


def test_a_member_gone_is_tombstoned_and_stays_gone_after_a_reload():
    store, topic = _offsets_topic()
    first = snapshot()
    topic.append([StreamsGroupRecord("app", first)])
    second = copy.deepcopy(first)
    del second["members"]["m2"], second["target"]["members"]["m2"]
    second["metadata"]["epoch"] = 6
    written_before = _partition(store).high_watermark
    topic.append([StreamsGroupRecord("app", second)])
    batch = list(R.decode_records(R.parse_batch(_partition(store).batches[-1].data)))
    assert _types([(r.key, r.value) for r in batch])[:3] == [(22, None), (21, None), (19, None)]
    assert all(r.key.endswith(b"\x00\x02m2") for r in batch[:3]) and batch[0].offset == written_before
    # Reloaded (a restart replays the partition): m2 is gone; the next snapshot's tombstones are
    # worked out against what the log holds.
    [reloaded] = read_partition(_partition(store), 3000).streams
    assert reloaded == second
    fresh = co.OffsetsTopic(store, partitions=PARTITIONS, now_ms=lambda: 4000)
    assert OffsetsPartitions(fresh).read(offsets_partition_for("app", PARTITIONS)).streams == [second]
    third = copy.deepcopy(second)
    del third["members"]["m1"], third["target"]["members"]["m1"]
    fresh.append([StreamsGroupRecord("app", third)])
    batch = list(R.decode_records(R.parse_batch(_partition(store).batches[-1].data)))
    assert _types([(r.key, r.value) for r in batch])[:3] == [(22, None), (21, None), (19, None)]


def test_removed_members_named_by_the_snapshot_get_tombstones():
    value = dict(snapshot(), removed_members=["m0", "m1"])
    del value["members"]["m1"]
    records = co.streams_group_records(value, "app", None)
    tombstoned = [(key[-2:], struct.unpack(">h", key[:2])[0]) for key, v in records if v is None]
    assert tombstoned == [(b"m0", 22), (b"m0", 21), (b"m0", 19), (b"m1", 22), (b"m1", 21), (b"m1", 19)]


def test_a_deleted_group_tombstones_every_record_in_kafkas_order():
    store, topic = _offsets_topic()
    topic.append([StreamsGroupRecord("app", snapshot())])
    topic.append([StreamsGroupRecord("app", None)])
    batch = list(R.decode_records(R.parse_batch(_partition(store).batches[-1].data)))
    # StreamsGroup.createGroupTombstoneRecords: by record type, members in order.
    assert [(struct.unpack(">h", r.key[:2])[0], r.key[7:]) for r in batch] == [
        (22, b"\x00\x02m1"), (22, b"\x00\x02m2"), (21, b"\x00\x02m1"), (21, b"\x00\x02m2"), (20, b""),
        (19, b"\x00\x02m1"), (19, b"\x00\x02m2"), (17, b""), (23, b"")]
    assert all(r.value is None for r in batch)
    assert read_partition(_partition(store), 2000).streams == []
    # Compacted, the partition keeps only tombstones: still no group.
    topic.compact_partition(_partition(store))
    assert read_partition(_partition(store), 2000).streams == []


def test_a_pending_revocation_given_as_a_list_takes_the_member_epoch():
    """What Kafka's loader assumes for an active task without its epoch."""
    value = snapshot()
    value["members"]["m2"]["assignment"]["active_pending_revocation"] = {"0": [3, 1]}
    store, topic = _offsets_topic()
    topic.append([StreamsGroupRecord("app", value)])
    [loaded] = read_partition(_partition(store), 2000).streams
    assert loaded["members"]["m2"]["assignment"]["active_pending_revocation"] == {"0": {1: 5, 3: 5}}


def test_a_malformed_value_names_its_field_and_unknown_types_are_left_alone():
    store, topic = _offsets_topic()
    records = co.streams_group_records(snapshot(), "app", None)
    partition = topic.ensure().partitions[offsets_partition_for("app", PARTITIONS)]
    # Type 18 (a streams record type Kafka no longer writes) and 24 (unknown): skipped.
    partition.put_built(R.build_plain_batch([(b"\x00\x12\x00\x03app", b"\x00\x00"), (b"\x00\x18\x00\x03app", b"?")]
                                            + records, 0, 1000, 0), len(records) + 2, 1000)
    assert read_partition(partition, 2000).streams == [snapshot()]
    key, value = records[0]
    partition.put_built(R.build_plain_batch([(key, value[:-3])], partition.high_watermark, 1000, 0), 1, 1000)
    with pytest.raises(co.OffsetsRecordError, match="ClientTags|bytes left over|runs past the end"):
        read_partition(partition, 2000)


def test_the_report_reads_streams_records_into_the_groups_story():
    """`kcoord report --offsets-topic`: a group's epochs, each member's tasks, the members removed
    and the group deleted; the target assignment and topology records tell no event."""
    skips: dict = {}
    rows = list(rows_from_records([(k, v, 0, co.TOPIC, 1000) for k, v in co.streams_group_records(
        snapshot(), "app", None) + co.streams_group_records(None, "app", snapshot())], skips))
    assert skips == {}
    assert [(r["kind"], r["member_id"]) for r in rows] == [
        ("streams_group_epoch", None), ("streams_assignment_epoch", None),
        ("streams_member_assignment", "m1"), ("streams_member_assignment", "m2"),
        ("streams_member_removed", "m1"), ("streams_member_removed", "m2"), ("group_deleted", None)]
    assert rows[2]["tasks"] == ("active 0_0,0_2,1_1; standby 1_0,1_2; warmup 0_1; "
                                "revoking active 0_3; standby 1_3; warmup 0_4")


def test_a_restart_from_the_data_dir_without_a_clean_shutdown_loads_the_group(tmp_path):
    """Durable state is __consumer_offsets itself: nothing closed, a new process reads the log
    and the partition holds the group as last acknowledged."""
    from kcoord.storage.durable_state import DurableState

    store = TopicStore()
    durable = DurableState(tmp_path, store, fsync="always")
    durable.load()
    topic = co.OffsetsTopic(store, partitions=PARTITIONS, now_ms=lambda: 1000)
    topic.durable = durable
    first = snapshot()
    second = copy.deepcopy(first)
    del second["members"]["m1"], second["target"]["members"]["m1"]
    topic.append([StreamsGroupRecord("app", first)])
    topic.append([StreamsGroupRecord("app", second)])

    restarted = TopicStore()
    DurableState(tmp_path, restarted).load()
    assert read_partition(_partition(restarted), 5000).streams == [second]
