"""The broker surface stock clients lean on: produce acks, long-poll fetch, list offsets, CLI."""
import os
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing.plugin import start_server
from kcoord.testing.reference_kafka import free_port
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


def _idempotence_answers(bootstrap: str, topic: str) -> list[tuple[str, int]]:
    """(error name, base offset) for a fixed series of idempotent produces and bad batches."""
    from kcoord.testing.brokers import create_topic
    from wire.errors import ErrorCode

    create_topic(bootstrap, topic)
    raw = Raw(bootstrap)
    deadline = time.monotonic() + 30
    while True:  # as producers do: a fresh Kafka answers COORDINATOR_LOAD_IN_PROGRESS for a moment
        init = raw.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        if init.error_code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert init.error_code == 0, init
    pid = init.producer_id

    def batch(seq, n=2, epoch=0):
        # Stamped now: Kafka's time retention deletes records stamped 1970 (and moves the log start).
        return build_batch([(None, b"x", int(time.time() * 1000))] * n, producer_id=pid, producer_epoch=epoch,
                           base_sequence=seq)

    def produce(records):
        p = _produce(raw, topic, records).responses[0].partition_responses[0]
        return ErrorCode(p.error_code).name, p.base_offset if p.error_code == 0 else -1

    answers = [produce(batch(0)),             # offsets 0-1
               produce(batch(0)),             # a retry of the latest batch: its first answer again
               produce(batch(5)),             # a gap
               produce(batch(2))]             # offsets 2-3
    answers += [produce(batch(seq)) for seq in range(4, 16, 2)]  # six more: offsets 4-15
    answers += [produce(batch(10)),           # among the last five: the first answer (offset 10)
                produce(batch(4)),            # older than the last five: out of order
                produce(batch(3, epoch=1)),   # a new epoch must start at sequence 0
                produce(batch(0, epoch=1)),   # it does: offsets 16-17
                produce(batch(16, epoch=0))]  # the old epoch is fenced
    corrupt = bytearray(batch(2, epoch=1))
    corrupt[-1] ^= 0xFF
    answers.append(produce(bytes(corrupt)))
    legacy = struct.pack(">qiIbb", 0, 14, 0, 1, 0) + b"\xff\xff\xff\xff\x00\x00\x00\x00"
    answers.append(produce(legacy))
    return answers


def test_idempotent_retries_gaps_epochs_and_corrupt_batches_are_answered_as_kafka_does(broker_any):
    answers = _idempotence_answers(broker_any.bootstrap, f"idem-{os.urandom(4).hex()}")
    assert answers == [
        ("NONE", 0), ("NONE", 0), ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1), ("NONE", 2),
        ("NONE", 4), ("NONE", 6), ("NONE", 8), ("NONE", 10), ("NONE", 12), ("NONE", 14),
        ("NONE", 10), ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1), ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1), ("NONE", 16),
        ("INVALID_PRODUCER_EPOCH", -1), ("CORRUPT_MESSAGE", -1), ("INVALID_RECORD", -1)], answers


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


def test_a_fetch_naming_no_partitions_is_answered_at_once(broker_any):
    # What a closing Java consumer sends (its fetch-session close, sessionless here): Kafka
    # answers it without waiting max_wait_ms, so the consumer's close does not wait either
    # (each of a Connect worker's KafkaBasedLog consumers took fetch.max.wait.ms to close).
    raw = Raw(broker_any.bootstrap)
    fetch = {"replica_id": -1, "max_wait_ms": 3000, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1, "topics": [], "forgotten_topics_data": []}
    started = time.monotonic()
    r = raw.call(1, 11, fetch)
    assert time.monotonic() - started < 1.5
    assert (r.error_code, r.session_id, r.responses) == (0, 0, [])


def test_cli_serve_prints_listening_and_stops_on_sigterm():
    port = free_port()
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


def test_metadata_naming_consumer_offsets_creates_it_with_its_own_settings(server):
    """The first request to name __consumer_offsets may be a Metadata request (a tool, a curious
    user) rather than FindCoordinator: Kafka creates the internal topic with its own settings
    whichever request does, and so does kcoord; groups then hash over those partitions."""
    raw = Raw(server.bootstrap)
    answer = raw.call(3, 9, {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": True,
                             "include_cluster_authorized_operations": False,
                             "include_topic_authorized_operations": False})
    [topic] = answer.topics
    assert (topic.error_code, topic.is_internal, len(topic.partitions)) == (0, True, 50)
    configs = raw.call(32, 4, {"resources": [{"resource_type": 2, "resource_name": "__consumer_offsets",
                                              "configuration_keys": ["cleanup.policy"]}],
                               "include_synonyms": False, "include_documentation": False})
    assert [(c.name, c.value) for c in configs.results[0].configs] == [("cleanup.policy", "compact")]
    from kcoord.coordinator.config import offsets_partition_for
    assert server.app.coordinator.runtime.partition_for("some-group") == offsets_partition_for("some-group", 50)
