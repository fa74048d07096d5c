"""`__share_group_state` records in Kafka 4.3.1's format, so its share coordinator (and
`kafka-dump-log --share-group-state-decoder`) reads what kcoord writes.

    key    int16 record type (0 ShareSnapshot, 1 ShareUpdate), then v0 (not flexible):
           GroupId string, TopicId uuid, Partition int32
    value  int16 version 0, then (flexible: compact arrays, tagged fields)
           ShareSnapshot: SnapshotEpoch int32, StateEpoch int32, LeaderEpoch int32, StartOffset int64,
                          CreateTimestamp int64, WriteTimestamp int64, StateBatches [...]
           ShareUpdate:   SnapshotEpoch int32, LeaderEpoch int32, StartOffset int64 (-1: unchanged),
                          StateBatches [...]
           StateBatch:    FirstOffset int64, LastOffset int64, DeliveryState int8, DeliveryCount int16
           tag 0 of either: DeliveryCompleteCount int32 (KIP-1226), written only when not -1.

A snapshot holds the whole state of a share-partition; an update only the batches that changed
since, merged over the snapshot when the log is replayed. A tombstone (null value) under the
snapshot key deletes the state.
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from wire.types import uvarint_bytes as _uvarint

SNAPSHOT, UPDATE = 0, 1
VALUE_VERSION = 0
# The states a StateBatch holds (RecordState ids): ACQUIRED is persisted as AVAILABLE.
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


class ShareRecordError(ValueError):
    pass


@dataclass(frozen=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class ShareKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass
class ShareState:
    """One ShareSnapshot or ShareUpdate value (an update has no state epoch or timestamps)."""
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    batches: list[StateBatch] = field(default_factory=list)
    state_epoch: int = 0
    delivery_complete_count: int = -1
    create_timestamp: int = 0
    write_timestamp: int = 0


def key_bytes(record_type: int, key: ShareKey) -> bytes:
    raw = key.group_id.encode()
    return (struct.pack(">hh", record_type, len(raw)) + raw + key.topic_id.bytes
            + struct.pack(">i", key.partition))


def value_bytes(record_type: int, state: ShareState) -> bytes:
    out = bytearray(struct.pack(">h", VALUE_VERSION))
    if record_type == SNAPSHOT:
        out += struct.pack(">iiiqqq", state.snapshot_epoch, state.state_epoch, state.leader_epoch,
                           state.start_offset, state.create_timestamp, state.write_timestamp)
    else:
        out += struct.pack(">iiq", state.snapshot_epoch, state.leader_epoch, state.start_offset)
    out += _uvarint(len(state.batches) + 1)
    for b in state.batches:
        out += struct.pack(">qqbh", b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        out += b"\x00"   # no tagged fields in a batch
    if state.delivery_complete_count == -1:
        out += b"\x00"
    else:
        out += b"\x01\x00\x04" + struct.pack(">i", state.delivery_complete_count)
    return bytes(out)


def decode_key(data: bytes) -> tuple[int, ShareKey]:
    try:
        record_type, length = struct.unpack_from(">hh", data, 0)
        if record_type not in (SNAPSHOT, UPDATE):
            raise ShareRecordError(f"not a share state record type: {record_type}")
        pos = 4 + length
        group_id = data[4:pos].decode()
        topic_id = uuid.UUID(bytes=bytes(data[pos:pos + 16]))
        (partition,) = struct.unpack_from(">i", data, pos + 16)
    except (struct.error, UnicodeDecodeError, ValueError) as err:
        if isinstance(err, ShareRecordError):
            raise
        raise ShareRecordError(f"unreadable share state key: {err}") from None
    return record_type, ShareKey(group_id, topic_id, partition)


def _read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def decode_value(record_type: int, data: bytes) -> ShareState:
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        if version != VALUE_VERSION:
            raise ShareRecordError(f"unknown share state value version {version}")
        if record_type == SNAPSHOT:
            snapshot_epoch, state_epoch, leader_epoch, start, created, written = struct.unpack_from(">iiiqqq", data, 2)
            pos = 2 + 36
        else:
            snapshot_epoch, leader_epoch, start = struct.unpack_from(">iiq", data, 2)
            state_epoch = created = written = 0
            pos = 2 + 16
        count, pos = _read_uvarint(data, pos)
        batches = []
        for _ in range(max(count - 1, 0)):
            first, last, state, delivered = struct.unpack_from(">qqbh", data, pos)
            pos += 19
            tags, pos = _read_uvarint(data, pos)
            for _ in range(tags):
                pos = _skip_tag(data, pos)
            batches.append(StateBatch(first, last, state, delivered))
        complete = -1
        tags, pos = _read_uvarint(data, pos)
        for _ in range(tags):
            tag, after = _read_uvarint(data, pos)
            size, after = _read_uvarint(data, after)
            if tag == 0:
                (complete,) = struct.unpack_from(">i", data, after)
            pos = after + size
    except (struct.error, IndexError) as err:
        raise ShareRecordError(f"unreadable share state value: {err}") from None
    return ShareState(snapshot_epoch, leader_epoch, start, batches, state_epoch, complete, created, written)


def _skip_tag(data: bytes, pos: int) -> int:
    _, pos = _read_uvarint(data, pos)
    size, pos = _read_uvarint(data, pos)
    return pos + size
