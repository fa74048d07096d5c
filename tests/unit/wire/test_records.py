"""Record batch v2: build/parse round trips, CRC, offset rewrite, malformed input; kafka-python as oracle."""
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from wire import records as R

_blob = st.one_of(st.none(), st.binary(max_size=40))
_record = st.tuples(_blob, _blob, st.integers(0, 2**41),
                    st.lists(st.tuples(st.text(max_size=8), _blob), max_size=3))


@given(st.lists(_record, min_size=1, max_size=8), st.sampled_from([0, 1, 2, 3, 4]), st.integers(0, 2**40))
@settings(max_examples=150, deadline=None)
def test_build_parse_roundtrip(recs, compression, base):
    data = R.build_batch(recs, base_offset=base, compression=compression)
    batch = R.parse_batch(data)
    assert (batch.base_offset, batch.records_count, batch.compression) == (base, len(recs), compression)
    got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in batch.records()]
    assert got == [(base + i, k, v, ts, list(h)) for i, (k, v, ts, h) in enumerate(recs)]
    assert batch.max_timestamp == max(ts for _, _, ts, _ in recs)


_sized = st.one_of(st.binary(max_size=40), st.binary(min_size=1000, max_size=1100))  # 1- and 2-byte lengths


@given(st.lists(st.tuples(_sized, st.one_of(st.none(), _sized)), max_size=70), st.integers(0, 2**41),
       st.integers(0, 2**40), st.integers(-1, 5))
@settings(max_examples=150, deadline=None)
def test_plain_batches_are_the_bytes_build_batch_makes(entries, timestamp, base, leader_epoch):
    assert R.build_plain_batch(entries, base, timestamp, leader_epoch) == R.build_batch(
        [(k, v, timestamp) for k, v in entries], base, partition_leader_epoch=leader_epoch)


@given(st.integers(21, 120), st.integers(1, 255))
@settings(max_examples=200, deadline=None)
def test_any_flip_in_crc_range_is_detected(pos, xor):
    data = bytearray(R.build_batch([(b"k", b"value-%d" % i, 1000 + i) for i in range(4)]))
    pos = 21 + (pos - 21) % (len(data) - 21)  # 21: where the CRC-covered bytes start
    data[pos] ^= xor
    with pytest.raises(R.RecordsError):
        list(R.iter_batches(bytes(data)))


def test_rewrite_base_offset_keeps_crc_valid():
    data = R.build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=0)
    moved = R.rewrite_base_offset(data, 12345)
    batch = R.parse_batch(moved)
    assert batch.base_offset == 12345 and [r.offset for r in batch.records()] == [12345, 12346]
    assert moved[8:] == data[8:]
    assert R.parse_batch(R.rewrite_leader_epoch(moved, 7)).partition_leader_epoch == 7


def test_several_batches_in_one_blob():
    blob = R.build_batch([(None, b"x")], 0) + R.build_batch([(None, b"y"), (None, b"z")], 1)
    batches = list(R.iter_batches(blob))
    assert [b.last_offset for b in batches] == [0, 2]
    assert list(R.record_timestamps(blob)) == [(0, 0), (1, 0), (2, 0)]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batches_of_kafka_python_give_each_record_its_timestamp(codec):
    # ListOffsets by timestamp answers the first record at or after it, inside a compressed batch as well
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(5):
        builder.append(i, timestamp=1000 + 10 * i, key=b"k%d" % i, value=b"v%d" % i * 50, headers=[])
    blob = bytes(builder.build())
    assert R.parse_batch(blob).compression == codec
    assert list(R.record_timestamps(blob)) == [(i, 1000 + 10 * i) for i in range(5)]


def test_a_batch_whose_codec_is_missing_is_seen_whole(monkeypatch):
    blob = R.build_batch([(b"k", b"v", 5), (b"k", b"w", 9)], compression=4)
    monkeypatch.setattr(R, "_decoders", lambda: {1: None})
    assert list(R.record_timestamps(blob)) == [(1, 9)]
    with pytest.raises(R.RecordsError, match="zstd"):
        R.parse_batch(blob).records()


@pytest.mark.parametrize("magic", [0, 1])
def test_old_magic_rejected(magic):
    legacy = struct.pack(">qiIbb", 0, 14, 0, magic, 0) + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00"
    with pytest.raises(R.UnsupportedMagicError) as e:
        list(R.iter_batches(legacy))
    assert e.value.magic == magic and "v%d" % magic in str(e.value)


def test_malformed_batches():
    data = R.build_batch([(b"k", b"v")])
    with pytest.raises(R.RecordsError, match="truncated"):
        list(R.iter_batches(data[:10]))
    with pytest.raises(R.RecordsError, match="exceeds"):
        list(R.iter_batches(data[:-1]))
    with pytest.raises(R.RecordsError, match="smaller"):
        list(R.iter_batches(data[:8] + struct.pack(">i", -5) + data[12:]))
    with pytest.raises(R.RecordsError, match="exceeds"):
        list(R.iter_batches(data[:8] + struct.pack(">i", 2**31 - 1) + data[12:]))


def test_kafka_python_batches_parse_identically():
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=77, producer_epoch=3, base_sequence=10, batch_size=1 << 20)
    for i in range(5):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v%d" % i,
                       headers=[("h", b"x")])
    data = bytes(builder.build())
    batch = R.parse_batch(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 10)
    theirs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in DefaultRecordBatch(data)]
    ours = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()]
    assert ours == theirs


def test_our_batches_parse_with_kafka_python():
    data = R.build_batch([(b"k", b"v", 5, [("a", b"b")]), (None, None, 9)], base_offset=40, compression=1)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs] == \
        [(40, 5, b"k", b"v", [("a", b"b")]), (41, 9, None, None, [])]
