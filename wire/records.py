"""Record batches, magic v2 — the only format Kafka 4.x accepts in Produce v3+.

A records blob is a sequence of batches. Each batch has a 61-byte header:

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32

The CRC-32C (Castagnoli) covers everything from `attributes` to the end of the
batch, so a broker can assign offsets (baseOffset) and leader epochs without
recomputing it. Records are decoded for every codec Kafka has: gzip here, snappy,
lz4 and zstd with kafka-python's codecs (its extras, which kcoord depends on); where one
of those libraries is missing, the batch is reported and still passes through untouched.
"""
from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass, field
from typing import Iterator

from wire.crc import crc32c

HEADER_SIZE = 61
_LOG_OVERHEAD = 12  # baseOffset + batchLength
_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_START = 21

COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class RecordsError(ValueError):
    """A records blob that is not a valid sequence of v2 batches."""

    def __init__(self, reason: str, field: str | None = None, offset: int | None = None):
        self.reason, self.field, self.offset = reason, field, offset
        where = (f" in {field}" if field else "") + (f" at byte offset {offset}" if offset is not None else "")
        super().__init__(reason + where)


class UnsupportedMagicError(RecordsError):
    """Message sets of magic v0/v1 (pre-0.11 formats), which Kafka 4.x no longer accepts."""

    def __init__(self, magic: int, offset: int):
        self.magic = magic
        super().__init__(f"record batch magic v{magic} is not supported (only v2)", "magic", offset)


class CorruptBatchError(RecordsError):
    """CRC mismatch: the batch was altered after the producer wrote it."""


@dataclass
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0


@dataclass
class RecordBatch:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    raw: bytes  # the whole batch, header included

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def compression_name(self) -> str:
        return COMPRESSION_NAMES.get(self.compression, f"unknown({self.compression})")

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes >> 3) & 1

    @property
    def is_control(self) -> bool:
        """A control batch (transaction markers)."""
        return bool(self.attributes & 0x20)

    @property
    def is_transactional(self) -> bool:
        """A batch written inside a transaction (its records wait for the transaction's marker)."""
        return bool(self.attributes & 0x10)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    def records(self) -> list[Record]:
        return decode_records(self)


# ---------------------------------------------------------------------------
# batches
# ---------------------------------------------------------------------------
def iter_batches(blob: bytes, validate_crc: bool = True) -> Iterator[RecordBatch]:
    """Each batch in `blob`; raises RecordsError on anything malformed (including a partial tail)."""
    view = memoryview(blob)
    pos = 0
    end = len(blob)
    while pos < end:
        if end - pos < _LOG_OVERHEAD + 5:
            raise RecordsError(f"truncated batch header ({end - pos} bytes left)", "batch", pos)
        length = struct.unpack_from(">i", blob, pos + 8)[0]
        magic = blob[pos + 16]
        if magic != 2:
            raise UnsupportedMagicError(magic, pos + 16)
        if length < HEADER_SIZE - _LOG_OVERHEAD:
            raise RecordsError(f"batchLength {length} is smaller than a v2 batch header", "batchLength", pos + 8)
        if length > end - pos - _LOG_OVERHEAD:
            raise RecordsError(f"batchLength {length} exceeds the {end - pos - _LOG_OVERHEAD} bytes left",
                               "batchLength", pos + 8)
        batch_end = pos + _LOG_OVERHEAD + length
        fields = _HEADER.unpack_from(blob, pos)
        if validate_crc:
            actual = crc32c(view[pos + _CRC_START:batch_end])
            if actual != fields[4]:
                raise CorruptBatchError(f"CRC-32C mismatch: header says {fields[4]:#010x}, bytes give {actual:#010x}",
                                        "crc", pos + 17)
        if fields[12] < 0:
            raise RecordsError(f"negative records count {fields[12]}", "recordsCount", pos + 57)
        yield RecordBatch(*fields, raw=bytes(view[pos:batch_end]))
        pos = batch_end


def parse_batch(data: bytes, validate_crc: bool = True) -> RecordBatch:
    batches = list(iter_batches(data, validate_crc))
    if len(batches) != 1:
        raise RecordsError(f"expected one batch, found {len(batches)}")
    return batches[0]


def rewrite_base_offset(batch: bytes, base_offset: int) -> bytes:
    """The same batch at a new base offset; CRC-covered bytes are untouched, so the CRC stays valid."""
    return struct.pack(">q", base_offset) + batch[8:]


def rewrite_leader_epoch(batch: bytes, epoch: int) -> bytes:
    """partitionLeaderEpoch also sits before the CRC-covered range."""
    return batch[:12] + struct.pack(">i", epoch) + batch[16:]


def record_timestamps(blob: bytes) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record; batch-level (max timestamp) where records can't be decoded."""
    for batch in iter_batches(blob, validate_crc=False):
        if decodable(batch.compression):
            for r in decode_records(batch):
                yield r.offset, r.timestamp
        else:
            yield batch.last_offset, batch.max_timestamp


def _decoders() -> dict:
    from kafka import codec

    return {1: gzip.decompress,
            2: codec.snappy_decode if codec.has_snappy() else None,  # xerial-framed, as Kafka's Java client writes it
            3: codec.lz4_decode if codec.has_lz4() else None,
            4: codec.zstd_decode if codec.has_zstd() else None}


def decodable(compression: int) -> bool:
    """Whether this process can read the records of a batch with this codec."""
    return compression == 0 or _decoders().get(compression) is not None


def _encoders() -> dict:
    from kafka import codec

    return {1: lambda body: gzip.compress(body),
            2: codec.snappy_encode if codec.has_snappy() else None,
            3: codec.lz4_encode if codec.has_lz4() else None,
            4: codec.zstd_encode if codec.has_zstd() else None}


# ---------------------------------------------------------------------------
# records inside a batch
# ---------------------------------------------------------------------------
def _read_varint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:  # one byte: the usual length, delta or small key size
            return (b >> 1) ^ -(b & 1), pos + 1
    result = shift = 0
    for i in range(max_bytes):
        if pos >= len(buf):
            raise RecordsError("truncated varint", "record", pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise RecordsError(f"varint longer than {max_bytes} bytes", "record", pos)


def _write_varint(v: int, out: bytearray) -> None:
    v = (v << 1) ^ (v >> 63)
    v &= 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _read_blob(buf, pos, what):
    n, pos = _read_varint(buf, pos, 5)
    if n < 0:
        return None, pos
    if n > len(buf) - pos:
        raise RecordsError(f"{what} length {n} exceeds the {len(buf) - pos} bytes left", what, pos)
    return bytes(buf[pos:pos + n]), pos + n


def decode_records(batch: RecordBatch) -> list[Record]:
    body = batch.raw[HEADER_SIZE:]
    if batch.compression != 0:
        decode = _decoders().get(batch.compression)
        if decode is None:
            raise RecordsError(f"batch compressed with {batch.compression_name}: records not decoded "
                               f"(its codec library is not installed)")
        body = decode(bytes(body))
    out = []
    pos = 0
    for _ in range(batch.records_count):
        length, pos = _read_varint(body, pos, 5)
        end = pos + length
        if length < 0 or end > len(body):
            raise RecordsError(f"record length {length} exceeds the batch", "record", pos)
        attributes = body[pos]
        pos += 1
        ts_delta, pos = _read_varint(body, pos, 10)
        off_delta, pos = _read_varint(body, pos, 5)
        key, pos = _read_blob(body, pos, "key")
        value, pos = _read_blob(body, pos, "value")
        n_headers, pos = _read_varint(body, pos, 5)
        if n_headers < 0 or n_headers > end - pos:
            raise RecordsError(f"invalid header count {n_headers}", "headers", pos)
        headers = []
        for _ in range(n_headers):
            hk, pos = _read_blob(body, pos, "header key")
            hv, pos = _read_blob(body, pos, "header value")
            headers.append(((hk or b"").decode("utf-8", "replace"), hv))
        if pos != end:
            raise RecordsError(f"record length {length} does not match its content", "record", pos)
        out.append(Record(batch.base_offset + off_delta, batch.base_timestamp + ts_delta, key, value,
                          headers, attributes))
    return out


def _entry(key, value, timestamp=0, headers=()):
    return 0, timestamp, key, value, headers


def _zigzag(v: int) -> bytes:
    out = bytearray()
    _write_varint(v, out)
    return bytes(out)


# The varints of -1 (a null key or value) up to 1023: every length and offset delta of a
# small batch is one lookup.
_SMALL_VARINTS = [_zigzag(v) for v in range(-1, 1024)]
_PLAIN_TAIL = struct.Struct(">hiqqqhii")
_PLAIN_HEAD = struct.Struct(">qiibI")


def _varint(v: int) -> bytes:
    return _SMALL_VARINTS[v + 1] if v < 1023 else _zigzag(v)


def build_plain_batch(entries: list[tuple[bytes, bytes | None]], base_offset: int, timestamp: int,
                      partition_leader_epoch: int = -1) -> bytes:
    """The batch build_batch makes of (key, value, timestamp) tuples sharing one timestamp,
    uncompressed, with no producer and no headers, at a fraction of its cost: what the
    group coordinator writes on every commit."""
    body = bytearray()
    for i, (key, value) in enumerate(entries):
        # attributes 0, timestamp delta 0, offset delta, key, value, no headers
        rec = b"".join((b"\x00\x00", _varint(i), _varint(len(key)), key,
                        _SMALL_VARINTS[0] if value is None else _varint(len(value)),
                        value or b"", b"\x00"))
        body += _varint(len(rec))
        body += rec
    n = len(entries)
    tail = _PLAIN_TAIL.pack(0, max(n - 1, 0), timestamp if n else 0, timestamp if n else -1, -1, -1, -1, n) + body
    return _PLAIN_HEAD.pack(base_offset, 9 + len(tail), partition_leader_epoch, 2, crc32c(tail)) + tail


def build_batch(records: list[Record] | list[tuple], base_offset: int = 0, *, compression: int = 0,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                partition_leader_epoch: int = -1, timestamp_type: int = 0, transactional: bool = False,
                control: bool = False) -> bytes:
    """A valid v2 batch. `records` are Record objects or (key, value[, timestamp[, headers]]) tuples;
    record offsets are consecutive from `base_offset` (Record.offset is ignored)."""
    # (attributes, timestamp, key, value, headers) of each record; tuples need no Record made.
    recs = [(r.attributes, r.timestamp, r.key, r.value, r.headers) if isinstance(r, Record) else _entry(*r)
            for r in records]
    base_ts = min((r[1] for r in recs), default=0)
    max_ts = max((r[1] for r in recs), default=-1)
    body = bytearray()
    for i, (attributes, timestamp, key, value, headers) in enumerate(recs):
        rec = bytearray([attributes & 0xFF])
        _write_varint(timestamp - base_ts, rec)
        _write_varint(i, rec)
        for blob in (key, value):
            if blob is None:
                _write_varint(-1, rec)
            else:
                _write_varint(len(blob), rec)
                rec += blob
        _write_varint(len(headers), rec)
        for hk, hv in headers:
            hkb = hk.encode("utf-8")
            _write_varint(len(hkb), rec)
            rec += hkb
            if hv is None:
                _write_varint(-1, rec)
            else:
                _write_varint(len(hv), rec)
                rec += hv
        _write_varint(len(rec), body)
        body += rec
    if compression != 0:
        encode = _encoders().get(compression)
        if encode is None:
            raise ValueError(f"build_batch cannot compress with {COMPRESSION_NAMES.get(compression)}: "
                             f"its codec library is not installed")
        body = bytearray(encode(bytes(body)))
    attributes = compression | (timestamp_type << 3) | (0x10 if transactional else 0) | (0x20 if control else 0)
    tail = struct.pack(">hiqqqhii", attributes, max(len(recs) - 1, 0), base_ts, max_ts, producer_id,
                       producer_epoch, base_sequence, len(recs)) + bytes(body)
    length = 4 + 1 + 4 + len(tail)  # leader epoch, magic, crc, then the CRC-covered part
    return struct.pack(">qiibI", base_offset, length, partition_leader_epoch, 2, crc32c(tail)) + tail


# ---------------------------------------------------------------------------
# transaction markers (control batches)
# ---------------------------------------------------------------------------
# A marker is a control batch of one record: key = version int16 (0) + type int16 (0 abort,
# 1 commit), value = version int16 (0) + the transaction coordinator's epoch int32
# (Kafka's ControlRecordType and EndTransactionMarker).
ABORT_MARKER, COMMIT_MARKER = 0, 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


def build_marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                       base_offset: int, timestamp: int, partition_leader_epoch: int = -1) -> bytes:
    """The control batch that ends producer `producer_id`'s transaction in one partition."""
    key = _CONTROL_KEY.pack(0, COMMIT_MARKER if commit else ABORT_MARKER)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return build_batch([(key, value, timestamp)], base_offset, producer_id=producer_id,
                       producer_epoch=producer_epoch, partition_leader_epoch=partition_leader_epoch,
                       transactional=True, control=True)


def parse_marker(batch: RecordBatch) -> tuple[bool, int]:
    """(commit?, coordinator epoch) of a control batch's marker; RecordsError if it is not one."""
    records = decode_records(batch)
    if not batch.is_control or len(records) != 1 or records[0].key is None or len(records[0].key) < 4:
        raise RecordsError("not a transaction marker batch")
    _, kind = _CONTROL_KEY.unpack_from(records[0].key)
    if kind not in (ABORT_MARKER, COMMIT_MARKER):
        raise RecordsError(f"control record type {kind} is not a transaction marker")
    value = records[0].value or b""
    epoch = _MARKER_VALUE.unpack_from(value)[1] if len(value) >= 6 else -1
    return kind == COMMIT_MARKER, epoch
