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
              17, 36, 68, 69, 88, 89}
    assert needed <= keys, sorted(needed - keys)


def test_every_spec_version_compiles():
    assert len(ALL) > 400
    for api_key, version, kind in ALL:
        assert codec.message(api_key, version, kind).version == version


@pytest.mark.parametrize("api_key,version,kind", ALL, ids=[f"{k}v{v}{d[:3]}" for k, v, d in ALL])
# Every layout in every run, with a few fresh examples each: runs add up the examples, not the suite's time.
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
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


def test_streams_endpoint_port_is_an_unsigned_16_bit_int():
    """KIP-1071's Endpoint.Port is a uint16: the top of its range is two 0xff bytes, not a
    negative int16, and one past it is refused before anything is sent."""
    from wire.types import EncodeError
    layout = codec.message(88, 0, "request")

    def heartbeat(port):
        return Message(group_id="g", member_id="m", member_epoch=0, endpoint_information_epoch=0,
                       user_endpoint=Message(host="h", port=port))

    encoded = layout.encode(heartbeat(65535))
    assert b"\x02h\xff\xff\x00" in encoded   # compact "h", port, the struct's empty tagged fields
    assert layout.decode(encoded).user_endpoint.port == 65535
    with pytest.raises(EncodeError, match="user_endpoint.port"):
        layout.encode(heartbeat(65536))
