"""Byte-for-byte differential tests against kio, an independent codec generated from Kafka's specs.

For every (api, version, direction) both codecs know: our bytes decode with
kio and kio re-encodes them to the very same bytes; kio's bytes decode with us
and we re-encode them identically. Comparison is on bytes, because kio maps
some integers to datetimes/timedeltas.
"""
import io

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import OutOfBoundValue

from wire import codec

from .strategies import for_type


def _kio_schema(api_key, version, kind):
    try:
        load = load_request_schema if kind == "request" else load_response_schema
        return load(api_key, version)
    except Exception:
        return None


COVERED = [(k, v, d) for k, v, d in codec.all_message_versions() if _kio_schema(k, v, d) is not None]

# kio's own limits, not invalid Kafka encodings: it maps int64 timestamps and
# durations to datetime/timedelta (refusing negative epochs and years past 9999:
# OutOfBoundValue / OverflowError) and error-code fields to its ErrorCode enum
# (refusing codes it does not know: ValueError "... is not a valid ErrorCode").
_KIO_LIMITS = (OutOfBoundValue, OverflowError, ValueError)


def test_coverage():
    assert len(COVERED) >= 400, len(COVERED)


def _kio_roundtrip(schema, data: bytes) -> bytes:
    value, size = entity_reader(schema)(data, 0)
    assert size == len(data)
    out = io.BytesIO()
    entity_writer(schema)(out, value)
    return out.getvalue()


@pytest.mark.parametrize("api_key,version,kind", COVERED, ids=[f"{k}v{v}{d[:3]}" for k, v, d in COVERED])
# Every layout in every run, with a few fresh examples each: runs add up the examples, not the suite's time.
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_same_bytes_as_kio(api_key, version, kind, data):
    layout = codec.message(api_key, version, kind)
    schema = _kio_schema(api_key, version, kind)
    value = data.draw(for_type(layout.tree))
    # kio holds OffsetCommit's retention_time_ms as a timedelta, which rounds
    # millisecond counts beyond 2**52 (float precision): keep to what it can hold.
    assume(abs(value.get("retention_time_ms", 0)) < 2**52)
    ours = layout.encode(value)
    try:
        theirs = _kio_roundtrip(schema, ours)
    except _KIO_LIMITS as exc:
        assume(not _is_kio_limit(exc))
        raise
    assert theirs == ours
    # The reverse direction: kio's bytes through our decoder and encoder.
    assert layout.encode(layout.decode(theirs)) == theirs


def _is_kio_limit(exc) -> bool:
    if isinstance(exc, (OutOfBoundValue, OverflowError)):
        return True
    text = str(exc)
    return any(w in text for w in ("is not a valid ErrorCode", "out of range", "timedelta milliseconds overflow"))
