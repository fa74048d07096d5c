"""Malformed bytes raise one typed DecodeError naming the field and offset."""
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire import codec
from wire.codec import UnsupportedVersionError
from wire.types import DecodeError, EncodeError


def _join_v5():
    return codec.encode_request(11, 5, {"correlation_id": 1, "client_id": "c"}, {
        "group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x01abc"}]})


def test_truncated_request_names_field_and_offset():
    payload = _join_v5()
    with pytest.raises(DecodeError) as e:
        codec.decode_request(payload[:-2])
    assert "protocols[0].metadata" in e.value.field
    assert e.value.offset == len(payload) - 9  # where the metadata's int32 length starts


@given(st.integers(min_value=0, max_value=10_000))
@settings(max_examples=60, deadline=None)
def test_every_truncation_is_a_decode_error(cut):
    payload = _join_v5()
    cut = cut % len(payload)
    with pytest.raises(DecodeError):
        codec.decode_request(payload[:cut])


def test_trailing_bytes_ignored_in_requests_but_refused_in_a_single_message():
    req = codec.decode_request(_join_v5() + b"\x00\x01\x02")  # as Kafka's parser does
    assert req.trailing_bytes == 3 and req.body.group_id == "g"
    layout = codec.message(12, 3, "request")
    with pytest.raises(DecodeError, match="trailing"):
        layout.decode(layout.encode({"group_id": "g", "generation_id": 1, "member_id": "m"}) + b"\x00")


def test_negative_string_length():
    hb = codec.encode_request(12, 3, {"correlation_id": 9, "client_id": "c"},
                              {"group_id": "g", "generation_id": 1, "member_id": "m"})
    # group id length (right after the header: 2+2+4 + 2+1 bytes) set to -5
    bad = hb[:11] + struct.pack(">h", -5) + hb[13:]
    with pytest.raises(DecodeError) as e:
        codec.decode_request(bad)
    assert e.value.field.endswith(".group_id") and e.value.offset == 11


def test_absurd_array_length_does_not_allocate():
    # JoinGroup v5 body whose protocols array claims 2^31-1 elements.
    head = codec.encode_request(11, 5, {"correlation_id": 1, "client_id": "c"}, {
        "group_id": "g", "session_timeout_ms": 1, "rebalance_timeout_ms": 1, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer", "protocols": []})
    bad = head[:-4] + struct.pack(">i", 2**31 - 1)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="array length 2147483647"):
            codec.decode_request(bad)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_absurd_bytes_length():
    payload = _join_v5()
    bad = payload[:-9] + struct.pack(">i", 2**31 - 1) + payload[-5:]
    with pytest.raises(DecodeError, match="exceeds"):
        codec.decode_request(bad)


def test_invalid_utf8():
    hb = codec.encode_request(12, 3, {"correlation_id": 9, "client_id": "c"},
                              {"group_id": "gg", "generation_id": 1, "member_id": "m"})
    bad = hb[:13] + b"\xc3\x28" + hb[15:]
    with pytest.raises(DecodeError, match="UTF-8") as e:
        codec.decode_request(bad)
    assert e.value.field.endswith(".group_id")


def test_varint_longer_than_five_bytes():
    # Heartbeat v4 is flexible: the group id is a compact string (uvarint length).
    hb = codec.encode_request(12, 4, {"correlation_id": 9, "client_id": "c"},
                              {"group_id": "g", "generation_id": 1, "member_id": "m"})
    header_len = 2 + 2 + 4 + 2 + 1 + 1  # key, version, corr id, client id "c", header tags
    bad = hb[:header_len] + b"\xff\xff\xff\xff\xff\x01" + hb[header_len + 1:]
    with pytest.raises(DecodeError, match="longer than 5 bytes") as e:
        codec.decode_request(bad)
    assert e.value.offset == header_len


@pytest.mark.parametrize("api_key,version", [(11, 10), (11, -1), (9999, 0), (18, 99)])
def test_unknown_api_or_version(api_key, version):
    with pytest.raises(UnsupportedVersionError) as e:
        codec.decode_request(struct.pack(">hhi", api_key, version, 1) + b"\x00\x00")
    assert (e.value.api_key, e.value.api_version) == (api_key, version)


def test_peek_header_of_unknown_version_keeps_correlation_id():
    payload = struct.pack(">hhih", 18, 99, 4242, 1) + b"c" + b"\x00\x00"
    assert codec.peek_request_header(payload)["correlation_id"] == 4242


def test_frame_shorter_than_header():
    with pytest.raises(DecodeError):
        codec.decode_request(b"\x00\x12")


def test_unknown_tagged_fields_survive_a_round_trip():
    layout = codec.message(12, 4, "request")
    value = layout.decode(layout.encode({"group_id": "g", "generation_id": 3, "member_id": "m",
                                         "group_instance_id": None, "_unknown_tags": {7: b"xyz", 3: b""}}))
    assert value["_unknown_tags"] == {3: b"", 7: b"xyz"}
    assert layout.decode(layout.encode(value)) == value


def test_encode_error_names_field():
    layout = codec.message(12, 3, "request")
    with pytest.raises(EncodeError) as e:
        layout.encode({"group_id": "g", "generation_id": 2**40, "member_id": "m"})
    assert e.value.field.endswith(".generation_id")
    with pytest.raises(EncodeError) as e:
        layout.encode({"group_id": None, "generation_id": 1, "member_id": "m"})
    assert e.value.field.endswith(".group_id")


@given(st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_random_bytes_never_escape_as_other_exceptions(blob):
    for api_key, version in [(11, 9), (14, 5), (8, 9), (3, 12), (1, 16)]:
        payload = struct.pack(">hh", api_key, version) + blob
        try:
            codec.decode_request(payload)
        except DecodeError:
            pass
