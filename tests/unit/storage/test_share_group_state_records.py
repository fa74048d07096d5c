"""__share_group_state records as Kafka 4.3.1's share coordinator writes them (ShareSnapshotKey/Value
and ShareUpdateKey/Value, version 0), byte for byte as the JSON specs lay them out, read back, and
read and rewritten unchanged by Kafka's own ShareCoordinatorRecordSerde (one short JVM)."""
from __future__ import annotations

import struct
import subprocess
import uuid

import pytest

from kcoord.share import records as SR
from kcoord.testing import reference_kafka

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
KEY = SR.ShareKey("g1", TOPIC_ID, 7)
BATCHES = [SR.StateBatch(10, 12, SR.ACKNOWLEDGED, 1), SR.StateBatch(13, 13, SR.AVAILABLE, 2)]


def _batches_bytes() -> bytes:
    # Compact array: length + 1, each batch its fields and an empty tagged-field section.
    return (bytes([len(BATCHES) + 1])
            + b"".join(struct.pack(">qqbh", b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                       + b"\x00" for b in BATCHES))


def test_keys_are_the_record_type_then_group_topic_id_and_partition():
    expected = struct.pack(">hh", 0, 2) + b"g1" + TOPIC_ID.bytes + struct.pack(">i", 7)
    assert SR.key_bytes(SR.SNAPSHOT, KEY) == expected
    assert SR.key_bytes(SR.UPDATE, KEY) == struct.pack(">h", 1) + expected[2:]
    assert SR.decode_key(expected) == (SR.SNAPSHOT, KEY)


def test_snapshot_value_layout():
    state = SR.ShareState(snapshot_epoch=3, leader_epoch=4, start_offset=10, batches=BATCHES, state_epoch=2,
                          delivery_complete_count=-1, create_timestamp=1000, write_timestamp=2000)
    expected = struct.pack(">hiiiqqq", 0, 3, 2, 4, 10, 1000, 2000) + _batches_bytes() + b"\x00"
    assert SR.value_bytes(SR.SNAPSHOT, state) == expected
    assert SR.decode_value(SR.SNAPSHOT, expected) == state


def test_update_value_layout_with_the_delivery_complete_count_tag():
    state = SR.ShareState(snapshot_epoch=3, leader_epoch=-1, start_offset=-1, batches=BATCHES,
                          delivery_complete_count=3)
    # Tagged fields: one, tag 0, 4 bytes, DeliveryCompleteCount.
    expected = struct.pack(">hiiq", 0, 3, -1, -1) + _batches_bytes() + b"\x01\x00\x04" + struct.pack(">i", 3)
    assert SR.value_bytes(SR.UPDATE, state) == expected
    assert SR.decode_value(SR.UPDATE, expected) == state


def test_unreadable_records_are_refused():
    with pytest.raises(SR.ShareRecordError):
        SR.decode_key(struct.pack(">hh", 9, 0))
    with pytest.raises(SR.ShareRecordError):
        SR.decode_value(SR.SNAPSHOT, struct.pack(">hi", 0, 1))
    with pytest.raises(SR.ShareRecordError):
        SR.decode_value(SR.SNAPSHOT, struct.pack(">h", 1) + bytes(40))


# Kafka's own serde reads kcoord's key and value and writes the same bytes back.
_JAVA_CHECK = """
import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;

public class DecodeShareRecord {
    public static void main(String[] args) {
        ShareCoordinatorRecordSerde serde = new ShareCoordinatorRecordSerde();
        HexFormat hex = HexFormat.of();
        for (int i = 0; i < args.length; i += 2) {
            var record = serde.deserialize(ByteBuffer.wrap(hex.parseHex(args[i])), ByteBuffer.wrap(hex.parseHex(args[i + 1])));
            System.out.println(record.value().message() + " " + hex.formatHex(serde.serializeKey(record))
                               + " " + hex.formatHex(serde.serializeValue(record)));
        }
    }
}
"""


def test_kafkas_share_coordinator_serde_reads_and_rewrites_the_same_bytes(tmp_path):
    java = reference_kafka.require_java()
    source = tmp_path / "DecodeShareRecord.java"
    source.write_text(_JAVA_CHECK)
    snapshot = SR.ShareState(3, 4, 10, BATCHES, 2, -1, 1000, 2000)
    update = SR.ShareState(3, -1, -1, BATCHES, delivery_complete_count=3)
    pairs = [(SR.key_bytes(SR.SNAPSHOT, KEY), SR.value_bytes(SR.SNAPSHOT, snapshot)),
             (SR.key_bytes(SR.UPDATE, KEY), SR.value_bytes(SR.UPDATE, update))]
    run = subprocess.run([java, "-Xmx128m", "-cp", reference_kafka.classpath(), str(source),
                          *(b.hex() for pair in pairs for b in pair)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("ShareSnapshotValue(snapshotEpoch=3, stateEpoch=2, leaderEpoch=4, startOffset=10,")
    assert "deliveryCompleteCount=3" in lines[1] and lines[1].startswith("ShareUpdateValue(")
    assert [line.split()[-2:] for line in lines] == [[k.hex(), v.hex()] for k, v in pairs]
