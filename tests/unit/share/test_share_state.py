"""The share coordinator's state in __share_group_state: Kafka's placement of a share-partition,
the snapshot/update choice, the merge of updates over a snapshot when a partition loads, pruning,
and a kcoord killed and started again from its data dir."""
from __future__ import annotations

import uuid

from kcoord.coordinator.clock import ManualTimer
from kcoord.log.topics import InternalTopic, TopicStore
from kcoord.share import records as SR
from kcoord.share.state import TOPIC, TOPIC_CONFIGS, ShareStateRuntime, combine
from kcoord.storage.durable_state import DurableState
from wire import records as R
from wire.errors import ErrorCode

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
KEY = SR.ShareKey("g1", TOPIC_ID, 0)
B = SR.StateBatch


def store_with_state_topic(partitions: int = 3) -> TopicStore:
    store = TopicStore()
    store.internal[TOPIC] = InternalTopic(partitions, dict(TOPIC_CONFIGS), 1)
    return store


def records_of(store: TopicStore, index: int) -> list[tuple[int, str]]:
    """(record type, 'snapshot'/'update'/'tombstone') of each record the partition holds."""
    out = []
    for stored in store.partition(TOPIC, index).batches:
        for record in R.decode_records(R.parse_batch(stored.data)):
            kind, _ = SR.decode_key(record.key)
            out.append("tombstone" if record.value is None else ("snapshot", "update")[kind])
    return out


def test_combine_later_batches_win_and_nothing_below_the_start_offset_stays():
    current = [B(0, 9, SR.AVAILABLE, 1), B(10, 19, SR.ACKNOWLEDGED, 1)]
    new = [B(5, 12, SR.ARCHIVED, 2)]
    assert combine(current, new, 3) == [B(3, 4, SR.AVAILABLE, 1), B(5, 12, SR.ARCHIVED, 2),
                                        B(13, 19, SR.ACKNOWLEDGED, 1)]
    assert combine([B(0, 4, SR.ACKNOWLEDGED, 1)], [B(5, 9, SR.ACKNOWLEDGED, 1)], 0) == [B(0, 9, SR.ACKNOWLEDGED, 1)]


def test_placement_hashes_group_topic_id_and_partition_as_kafka_does():
    runtime = ShareStateRuntime(ManualTimer(), store_with_state_topic(50), 50)
    # Kafka: Utils.abs("g1:ASNFZ4mrze8BI0VniavN7w:0".hashCode()) % 50, the topic id as Uuid.toString().
    text = "g1:ASNFZ4mrze8BI0VniavN7w:0"
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    assert runtime.partition_for(KEY) == abs(h) % 50


def test_updates_follow_a_snapshot_until_the_limit_then_a_snapshot_and_the_older_records_go():
    store = store_with_state_topic()
    runtime = ShareStateRuntime(ManualTimer(), store, 3, per_snapshot=2)
    index = runtime.partition_for(KEY)
    assert runtime.initialize(KEY, 0) == ErrorCode.NONE
    runtime.write(KEY, 0, 0, [B(0, 4, SR.ACKNOWLEDGED, 1)], 5)
    runtime.write(KEY, 0, 0, [B(5, 9, SR.ARCHIVED, 1)], 10)
    assert records_of(store, index) == ["snapshot", "update", "update"]
    runtime.write(KEY, 0, 12, [B(12, 12, SR.AVAILABLE, 2)], 0)
    # The new snapshot holds everything; the records before it are redundant and deleted.
    assert records_of(store, index) == ["snapshot"]
    assert runtime.read(KEY)[1].batches == [B(12, 12, SR.AVAILABLE, 2)]
    assert runtime.read(KEY)[1].snapshot_epoch == 1


def test_a_new_leader_replays_the_snapshot_and_updates_into_the_same_state():
    store = store_with_state_topic()
    runtime = ShareStateRuntime(ManualTimer(), store, 3)
    runtime.initialize(KEY, 3)
    runtime.write(KEY, 2, 3, [B(3, 9, SR.AVAILABLE, 1)])
    runtime.write(KEY, 2, 5, [B(5, 6, SR.ACKNOWLEDGED, 1), B(7, 7, SR.ARCHIVED, 2)])
    before = runtime.read(KEY)[1]
    index = runtime.partition_for(KEY)
    runtime.leader_changed(index, 1, 1)
    after = runtime.read(KEY)[1]
    assert (after.start_offset, after.leader_epoch, after.batches) == (5, 2, [
        B(5, 6, SR.ACKNOWLEDGED, 1), B(7, 7, SR.ARCHIVED, 2), B(8, 9, SR.AVAILABLE, 1)])
    assert after.batches == before.batches


def test_delete_writes_a_tombstone_and_the_state_is_gone_after_a_reload():
    store = store_with_state_topic()
    runtime = ShareStateRuntime(ManualTimer(), store, 3)
    other = SR.ShareKey("g1", TOPIC_ID, 3)
    runtime.initialize(KEY, 0)
    runtime.initialize(other, 0)
    assert runtime.partition_for(other) == runtime.partition_for(KEY)
    assert runtime.delete(KEY) == ErrorCode.NONE
    # The deleted state's snapshot is redundant now; the other's stays, and the tombstone after it.
    assert records_of(store, runtime.partition_for(KEY)) == ["snapshot", "tombstone"]
    runtime.delete(other)
    # No state left: every record of the partition is redundant.
    assert records_of(store, runtime.partition_for(KEY)) == []
    runtime.leader_changed(runtime.partition_for(KEY), 0, 2)
    assert runtime.read(KEY) == (ErrorCode.NONE, None)


def test_state_survives_a_kill_through_the_data_dir(tmp_path):
    store = store_with_state_topic()
    DurableState(tmp_path, store, fsync="always").load()
    runtime = ShareStateRuntime(ManualTimer(), store, 3)
    runtime.initialize(KEY, 0)
    runtime.write(KEY, 0, 2, [B(2, 4, SR.ACKNOWLEDGED, 3)])
    # Nothing closed: a new process reads what the data dir holds.
    restarted = store_with_state_topic()
    DurableState(tmp_path, restarted).load()
    state = ShareStateRuntime(ManualTimer(), restarted, 3).read(KEY)[1]
    assert (state.start_offset, state.batches) == (2, [B(2, 4, SR.ACKNOWLEDGED, 3)])
