"""Share groups (KIP-932) in __consumer_offsets: a ShareGroupRecord snapshot becomes Kafka's record
types 10-15 in the order Kafka's heartbeat writes them, with tombstones for members gone and for
a deleted group, and a partition's records load back into the same snapshot (what a restart,
kill -9 included, rebuilds the group from). The bytes below were also decoded by Kafka 4.3.1's
own generated ShareGroup*Value classes when these tests were written."""
from __future__ import annotations

import copy
import struct
import uuid

from kcoord.coordinator.config import offsets_partition_for
from kcoord.coordinator.records import ShareGroupRecord
from kcoord.log import consumer_offsets as co
from kcoord.log.offsets_loader import read_partition
from kcoord.log.share_group_records import share_group_records
from kcoord.log.topics import TopicStore
from wire import records as R

PARTITIONS = 3
ORDERS = "00000000-0000-0000-0000-000000000001"


def snapshot() -> dict:
    def member(epoch: int, parts: list[int], rack=None) -> dict:
        return {"metadata": {"rack_id": rack, "client_id": "worker", "client_host": "/10.0.0.1",
                             "subscribed_topic_names": ["orders"]},
                "assignment": {"member_epoch": epoch, "previous_member_epoch": epoch - 1, "state": 0,
                               "assigned": {ORDERS: parts}}}
    return {"group_id": "queue", "metadata": {"epoch": 3, "metadata_hash": -42},
            "members": {"m1": member(3, [1, 2], rack="r1"), "m2": member(3, [0])},
            "target": {"assignment_epoch": 3, "assignment_timestamp_ms": 1_700_000_000_000,
                       "members": {"m1": {ORDERS: [2, 1]}, "m2": {ORDERS: [0]}}},
            "state_partitions": {"initializing": {}, "initialized": {ORDERS: {"name": "orders", "partitions": [0, 1, 2]}},
                                 "deleting": {}},
            "removed_members": []}


def _types(records) -> list:
    return [(struct.unpack(">h", k[:2])[0], None if v is None else "v") for k, v in records]


def _offsets_topic():
    store = TopicStore()
    return store, co.OffsetsTopic(store, partitions=PARTITIONS, now_ms=lambda: 1000)


def _partition(store):
    return store.get(co.TOPIC).partitions[offsets_partition_for("queue", PARTITIONS)]


def test_a_snapshot_is_kafkas_records_in_kafkas_order_and_bytes():
    records = share_group_records(snapshot(), "queue", None)
    assert [t for t, _ in _types(records)] == [10, 10, 11, 13, 13, 12, 14, 14, 15]
    by_key = dict(records)
    member = by_key[b"\x00\x0a\x00\x05queue\x00\x02m1"]
    # v0, RackId "r1", ClientId, ClientHost, SubscribedTopicNames ["orders"], no tags.
    assert member == b"\x00\x00" + b"\x03r1" + b"\x07worker" + b"\x0a/10.0.0.1" + b"\x02\x07orders" + b"\x00"
    assert by_key[b"\x00\x0a\x00\x05queue\x00\x02m2"][2:3] == b"\x00"   # RackId null
    assert by_key[b"\x00\x0b\x00\x05queue"] == struct.pack(">hiq", 0, 3, -42) + b"\x00"
    topic_id = uuid.UUID(ORDERS).bytes
    # The target lists partitions as the assignor gave them; the current assignment as the member holds them.
    assert by_key[b"\x00\x0d\x00\x05queue\x00\x02m1"] == (b"\x00\x00\x02" + topic_id + b"\x03" + struct.pack(">ii", 2, 1)
                                                          + b"\x00\x00")
    assert by_key[b"\x00\x0c\x00\x05queue"] == (struct.pack(">hi", 0, 3) + b"\x01\x00\x08"
                                                 + struct.pack(">q", 1_700_000_000_000))
    assert by_key[b"\x00\x0e\x00\x05queue\x00\x02m2"] == (struct.pack(">hiib", 0, 3, 2, 0) + b"\x02" + topic_id
                                                          + b"\x02" + struct.pack(">i", 0) + b"\x00\x00")
    # InitializingTopics empty, InitializedTopics [orders: 0, 1, 2], DeletingTopics empty.
    assert by_key[b"\x00\x0f\x00\x05queue"] == (b"\x00\x00" + b"\x01" + b"\x02" + topic_id + b"\x07orders" + b"\x04"
                                                 + struct.pack(">iii", 0, 1, 2) + b"\x00" + b"\x01" + b"\x00")


def test_round_trip_through_the_partition():
    store, topic = _offsets_topic()
    topic.append([ShareGroupRecord("queue", snapshot())])
    assert read_partition(_partition(store), 2000).share == [snapshot()]


def test_a_member_gone_is_tombstoned_and_a_deleted_group_leaves_nothing_to_load():
    store, topic = _offsets_topic()
    topic.append([ShareGroupRecord("queue", snapshot())])
    second = copy.deepcopy(snapshot())
    del second["members"]["m2"], second["target"]["members"]["m2"]
    second["metadata"]["epoch"] = 4
    topic.append([ShareGroupRecord("queue", second)])
    batch = list(R.decode_records(R.parse_batch(_partition(store).batches[-1].data)))
    # Kafka's shareGroupFenceMember order: current assignment, target, metadata.
    assert _types([(r.key, r.value) for r in batch])[:3] == [(14, None), (13, None), (10, None)]
    assert read_partition(_partition(store), 2000).share == [dict(second)]
    topic.append([ShareGroupRecord("queue", None)])
    batch = list(R.decode_records(R.parse_batch(_partition(store).batches[-1].data)))
    # ShareGroup.createGroupTombstoneRecords: 14s, 13s, 12, 10s, 15, 11.
    assert _types([(r.key, r.value) for r in batch]) == [(14, None), (13, None), (12, None), (10, None),
                                                         (15, None), (11, None)]
    assert read_partition(_partition(store), 2000).share == []
