"""Hypothesis over frame decoding and over a live in-process server.

Decoding: any bytes, and mutations of real captured requests, either decode or
raise the codec's own errors (which close only their connection); never
anything else. Live: a hypothesis-chosen mutated frame gets an answer or a
closed connection, and a second connection is answered afterwards.
"""
from __future__ import annotations

import random
import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.corpus import frame, mutate, mutate_structured, seed_requests, templates
from wire import codec
from wire.framing import FrameError, split_frames
from wire.types import DecodeError

SEEDS = seed_requests()
TEMPLATES = templates(SEEDS)
EXPECTED = (DecodeError, codec.UnsupportedVersionError)


def _decode(payload: bytes):
    try:
        codec.decode_request(payload)
    except EXPECTED:
        pass


def test_every_captured_request_decodes():
    assert len(TEMPLATES) == len(SEEDS)


@given(st.binary(max_size=512))
def test_arbitrary_bytes_decode_or_fail_cleanly(data):
    _decode(data)


@given(st.sampled_from(SEEDS), st.integers(0, 2**32 - 1))
@settings(max_examples=2000)
def test_mutated_captured_requests_decode_or_fail_cleanly(seed, rnd_seed):
    _decode(mutate(seed, random.Random(rnd_seed), SEEDS))


@given(st.integers(0, len(TEMPLATES) - 1), st.integers(0, 2**32 - 1))
@settings(max_examples=500)
def test_structured_mutations_reencode_to_decodable_requests(index, rnd_seed):
    payload = mutate_structured(TEMPLATES[index], random.Random(rnd_seed))
    if payload is not None:
        req = codec.decode_request(payload)
        assert req.api_key == TEMPLATES[index].api_key


@given(st.binary(max_size=256), st.integers(1, 4096))
def test_frame_splitting_never_fails_unexpectedly(data, max_size):
    try:
        frames, rest = split_frames(data, max_size)
    except FrameError:
        return
    assert b"".join(frame(f) for f in frames) + rest == data


def _roundtrip(port, data: bytes) -> bytes | None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
        except TimeoutError:
            pass  # a fuzzed JoinGroup may legitimately wait for its rebalance
        return b"".join(chunks)


@given(st.integers(0, len(SEEDS) - 1), st.integers(0, 2**32 - 1), st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_live_server_survives_each_mutated_frame(kcoord_server, index, rnd_seed, structured):
    port = int(kcoord_server.bootstrap.rsplit(":", 1)[1])
    rnd = random.Random(rnd_seed)
    payload = mutate_structured(TEMPLATES[index], rnd) if structured else None
    data = frame(payload if payload is not None else mutate(SEEDS[index], rnd, SEEDS))
    _roundtrip(port, data)
    # Another connection is still served: ApiVersions v0 answers with error 0.
    reply = _roundtrip(port, frame(codec.encode_request(18, 0, {"correlation_id": 9}, {})))
    size = struct.unpack_from(">i", reply)[0]
    assert size == len(reply) - 4
    assert codec.decode_response(18, 0, reply[4:])[1].error_code == 0
