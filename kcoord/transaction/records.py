"""`__transaction_state` records in Kafka's format (TransactionLogKey v0, TransactionLogValue v0/v1),
so Kafka's TransactionLogMessageFormatter reads what kcoord writes.

    key    int16 0 (the record type), TransactionalId string
    value  int16 version; v0: ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
           TransactionStatus int8, TransactionPartitions [Topic string, PartitionIds [int32]]?,
           TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64
           v1 (flexible: compact strings/arrays, tagged fields): the same, with tags
           0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion, 3 NextProducerEpoch

Kafka writes v1 once the finalized transaction.version is 1 or more, v0 before; the partitions
are null in the Empty state. A tombstone (null value) removes an expired transactional id.
"""
from __future__ import annotations

import struct

from kcoord.transaction.state import NO_PRODUCER_ID, TransactionMetadata, TxnState
from wire.types import uvarint_bytes as _uvarint

KEY_VERSION = 0


class TransactionRecordError(ValueError):
    pass


def key_bytes(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return struct.pack(">hh", KEY_VERSION, len(raw)) + raw


def value_bytes(meta: TransactionMetadata, version: int) -> bytes:
    """The record of `meta` at value `version` (0 or 1)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    partitions = None if meta.state is TxnState.EMPTY else by_topic
    out = bytearray(struct.pack(">hqh", version, meta.producer_id, meta.producer_epoch))
    out += struct.pack(">ib", meta.timeout_ms, meta.state.id)
    if version == 0:
        if partitions is None:
            out += struct.pack(">i", -1)
        else:
            out += struct.pack(">i", len(partitions))
            for topic, ids in partitions.items():
                raw = topic.encode()
                out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(ids))
                out += b"".join(struct.pack(">i", p) for p in ids)
        out += struct.pack(">qq", meta.last_update_ms, meta.start_ms)
        return bytes(out)
    if partitions is None:
        out += _uvarint(0)
    else:
        out += _uvarint(len(partitions) + 1)
        for topic, ids in partitions.items():
            raw = topic.encode()
            out += _uvarint(len(raw) + 1) + raw + _uvarint(len(ids) + 1)
            out += b"".join(struct.pack(">i", p) for p in ids)
            out += b"\x00"
    out += struct.pack(">qq", meta.last_update_ms, meta.start_ms)
    tags = []
    if meta.prev_producer_id != NO_PRODUCER_ID:
        tags.append((0, struct.pack(">q", meta.prev_producer_id)))
    if meta.next_producer_id != NO_PRODUCER_ID:
        tags.append((1, struct.pack(">q", meta.next_producer_id)))
    if meta.client_version != 0:
        tags.append((2, struct.pack(">h", meta.client_version)))
    out += _uvarint(len(tags))
    for tag, data in tags:
        out += _uvarint(tag) + _uvarint(len(data)) + data
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise TransactionRecordError("record ends early")
        value = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value[0] if len(value) == 1 else value

    def uvarint(self) -> int:
        shift = n = 0
        while True:
            b = self.take(">B")
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7
            if shift > 28:
                raise TransactionRecordError("varint too long")

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise TransactionRecordError("record ends early")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def decode_key(data: bytes) -> str:
    r = _Reader(data)
    version = r.take(">h")
    if version != KEY_VERSION:
        raise TransactionRecordError(f"unknown TransactionLogKey version {version}")
    return r.raw(r.take(">h")).decode()


def decode_value(transactional_id: str, data: bytes) -> tuple[int, TransactionMetadata]:
    """(value version, the metadata the record holds)."""
    r = _Reader(data)
    version = r.take(">h")
    if version not in (0, 1):
        raise TransactionRecordError(f"unknown TransactionLogValue version {version}")
    producer_id, epoch, timeout, status = r.take(">qhib")
    partitions: set = set()
    if version == 0:
        count = r.take(">i")
        for _ in range(max(count, 0)):
            topic = r.raw(r.take(">h")).decode()
            for _ in range(r.take(">i")):
                partitions.add((topic, r.take(">i")))
    else:
        count = r.uvarint() - 1
        for _ in range(max(count, 0)):
            topic = r.raw(r.uvarint() - 1).decode()
            for _ in range(r.uvarint() - 1):
                partitions.add((topic, r.take(">i")))
            _skip_tags(r)
    last_update, start = r.take(">qq")
    meta = TransactionMetadata(transactional_id, producer_id, epoch, timeout, TxnState.from_id(status),
                               partitions=partitions, start_ms=start, last_update_ms=last_update)
    if version >= 1:
        for tag, payload in _tags(r):
            if tag == 0:
                meta.prev_producer_id = struct.unpack(">q", payload)[0]
            elif tag == 1:
                meta.next_producer_id = struct.unpack(">q", payload)[0]
            elif tag == 2:
                meta.client_version = struct.unpack(">h", payload)[0]
    return version, meta


def _tags(r: _Reader):
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        yield tag, r.raw(r.uvarint())


def _skip_tags(r: _Reader) -> None:
    for _ in _tags(r):
        pass


def as_json(key: bytes, value: bytes | None) -> dict:
    """A record as Kafka's TransactionLogMessageFormatter prints it: the spec's field names, a
    tagged field only when it is not at its default."""
    transactional_id = decode_key(key)
    out = {"key": {"type": KEY_VERSION, "data": {"transactionalId": transactional_id}}, "value": None}
    if value is None:
        return out
    version, meta = decode_value(transactional_id, value)
    data = {"producerId": meta.producer_id}
    if meta.prev_producer_id != NO_PRODUCER_ID:
        data["previousProducerId"] = meta.prev_producer_id
    if meta.next_producer_id != NO_PRODUCER_ID:
        data["nextProducerId"] = meta.next_producer_id
    data.update(producerEpoch=meta.producer_epoch, transactionTimeoutMs=meta.timeout_ms,
                transactionStatus=meta.state.id,
                transactionPartitions=None if meta.state is TxnState.EMPTY else [
                    {"topic": t, "partitionIds": sorted(p for tt, p in meta.partitions if tt == t)}
                    for t in sorted({t for t, _ in meta.partitions})],
                transactionLastUpdateTimestampMs=meta.last_update_ms,
                transactionStartTimestampMs=meta.start_ms)
    if meta.client_version != 0:
        data["clientTransactionVersion"] = meta.client_version
    out["value"] = {"version": version, "data": data}
    return out
