"""The broker surface stock clients lean on: produce acks, long-poll fetch, list offsets, CLI."""
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing.plugin import start_server
from wire.records import build_batch, parse_batch


@pytest.fixture
def server():
    s = start_server(default_partitions=1)
    yield s
    s.stop()


def Raw(bootstrap):
    """A blocking protocol connection (the one `kcoord groups` uses)."""
    return Connection.to(bootstrap, client_id="raw")


def _produce(raw, topic, batch, acks=-1, version=9):
    return raw.call(0, version, {"transactional_id": None, "acks": acks, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})


def test_produce_assigns_offsets_and_high_watermark_follows_the_last_record(server):
    raw = Raw(server.bootstrap)
    raw.call(3, 9, {"topics": [{"name": "s"}], "allow_auto_topic_creation": True})
    r = _produce(raw, "s", build_batch([(None, b"a", 1000), (None, b"b", 5000), (None, b"c", 3000)]))
    p = r.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (0, 0)
    r = _produce(raw, "s", build_batch([(None, b"d", 2000)]))
    assert r.responses[0].partition_responses[0].base_offset == 3
    offsets = raw.call(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "s", "partitions": [
        {"partition_index": 0, "timestamp": t} for t in (-1, -2, -3, 2500, 9999)]}]})
    got = [(x.offset, x.timestamp) for x in offsets.topics[0].partitions]
    # latest = after the last record (4), earliest 0, max timestamp at offset 1, first ts >= 2500 at offset 1
    assert got == [(4, -1), (0, -1), (1, 5000), (1, 5000), (-1, -1)]
    # acks=0: no response at all; the next request's answer is the next thing on the wire
    raw.send(0, 9, {"transactional_id": None, "acks": 0, "timeout_ms": 5000, "topic_data": [
        {"name": "s", "partition_data": [{"index": 0, "records": build_batch([(None, b"e")])}]}]})
    assert raw.call(18, 0, {}).error_code == 0
    assert server.app.broker.topics.partition("s", 0).high_watermark == 5


def test_idempotent_sequences_and_corrupt_batches(server):
    raw = Raw(server.bootstrap)
    raw.call(3, 9, {"topics": [{"name": "idem"}], "allow_auto_topic_creation": True})
    pid = raw.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000}).producer_id
    batch = lambda seq, n=2: build_batch([(None, b"x")] * n, producer_id=pid, producer_epoch=0, base_sequence=seq)
    assert _produce(raw, "idem", batch(0)).responses[0].partition_responses[0].error_code == 0
    assert _produce(raw, "idem", batch(0)).responses[0].partition_responses[0].error_code == 46  # DUPLICATE_SEQUENCE
    assert _produce(raw, "idem", batch(5)).responses[0].partition_responses[0].error_code == 45  # OUT_OF_ORDER
    assert _produce(raw, "idem", batch(2)).responses[0].partition_responses[0].error_code == 0
    corrupt = bytearray(batch(4))
    corrupt[-1] ^= 0xFF
    assert _produce(raw, "idem", bytes(corrupt)).responses[0].partition_responses[0].error_code == 2  # CORRUPT_MESSAGE
    legacy = struct.pack(">qiIbb", 0, 14, 0, 1, 0) + b"\xff\xff\xff\xff\x00\x00\x00\x00"
    assert _produce(raw, "idem", legacy).responses[0].partition_responses[0].error_code == 87  # INVALID_RECORD


def test_fetch_long_poll_is_woken_by_a_produce(server):
    raw = Raw(server.bootstrap)
    raw.call(3, 9, {"topics": [{"name": "lp"}], "allow_auto_topic_creation": True})
    fetch = {"replica_id": -1, "max_wait_ms": 5000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1, "topics": [{"topic": "lp", "partitions": [
                 {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    started = time.monotonic()
    threading.Timer(0.5, lambda: _produce(Raw(server.bootstrap), "lp", build_batch([(b"k", b"v")]))).start()
    r = raw.call(1, 11, fetch)
    waited = time.monotonic() - started
    part = r.responses[0].partitions[0]
    assert 0.4 < waited < 4 and part.high_watermark == 1
    assert [rec.value for rec in parse_batch(part.records).records()] == [b"v"]
    fetch["max_wait_ms"] = 300
    fetch["topics"][0]["partitions"][0]["fetch_offset"] = 1
    started = time.monotonic()
    r = raw.call(1, 11, fetch)  # nothing new: answered empty after max_wait_ms
    assert 0.25 < time.monotonic() - started < 3 and r.responses[0].partitions[0].records in (None, b"")
    fetch["topics"][0]["partitions"][0]["fetch_offset"] = 99
    assert raw.call(1, 11, fetch).responses[0].partitions[0].error_code == 1  # OFFSET_OUT_OF_RANGE


def test_cli_serve_prints_listening_and_stops_on_sigterm():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "kcoord", "serve", "--listen", f"127.0.0.1:{port}",
                             "--initial-rebalance-delay-ms", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout.readline().strip() == f"kcoord listening on 127.0.0.1:{port}"
        assert Raw(f"127.0.0.1:{port}").call(18, 3, {"client_software_name": "t",
                                                     "client_software_version": "1"}).error_code == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
