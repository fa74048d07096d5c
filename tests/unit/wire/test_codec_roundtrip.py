"""Every (api, version, direction) survives encode -> decode unchanged."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire import codec
from wire.types import Message

from .strategies import for_type

ALL = codec.all_message_versions()


def test_every_api_kcoord_serves_is_covered():
    keys = {k for k, _, _ in ALL}
    needed = {18, 3, 10, 11, 14, 12, 13, 8, 9, 47, 15, 16, 42, 19, 20, 0, 1, 2, 22, 60, 32,
              17, 36, 68, 69}
    assert needed <= keys, sorted(needed - keys)


def test_every_spec_version_compiles():
    assert len(ALL) > 400
    for api_key, version, kind in ALL:
        assert codec.message(api_key, version, kind).version == version


@pytest.mark.parametrize("api_key,version,kind", ALL, ids=[f"{k}v{v}{d[:3]}" for k, v, d in ALL])
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_roundtrip(api_key, version, kind, data):
    layout = codec.message(api_key, version, kind)
    value = data.draw(for_type(layout.tree))
    encoded = layout.encode(value)
    assert layout.decode(encoded) == value
    # The interpreted (diagnosing) path agrees with the compiled one.
    from io import BytesIO
    assert layout.tree._parse(BytesIO(encoded), None, "x") == value
    slow = BytesIO()
    layout.tree._build(value, slow, None, "x")
    assert slow.getvalue() == encoded


@pytest.mark.parametrize("api_key,version", sorted({(k, v) for k, v, d in ALL if d == "request"}))
def test_request_header_roundtrip(api_key, version):
    body = Message()  # every field takes its spec default
    payload = codec.encode_request(api_key, version, {"correlation_id": 77, "client_id": "c-1"}, body)
    req = codec.decode_request(payload)
    assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (api_key, version, 77, "c-1")
    assert codec.encode_request(api_key, version, req.header, req.body) == payload
