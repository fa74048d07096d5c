"""Kafka's Java transactional clients (kafka-clients 3.9.1 "java" and 4.3.1 "java4") on kcoord
and on the reference Kafka: committed and aborted transactions as a read_committed consumer
sees them, fencing of a replaced producer, the coordinator aborting a transaction that
outlived transaction.timeout.ms, and a consume-transform-produce loop whose member is killed
mid-transaction. The clients are tests/integration/java/KcoordTxnClient.java.

The exception classes asserted are what each client throws against the reference Kafka 4.3.1
(transaction version 2 there; the 3.9.1 client speaks version 1 of the protocol)."""
from __future__ import annotations

import collections
import uuid

import pytest

from kcoord.testing.brokers import create_topic
from tests.integration.clients import produce
from tests.integration.javaclient import txn_run, txn_start

CLIENTS = ("java", "java4")
# The broker configs these tests need, by Kafka's names: the reference Kafka's are
# kcoord.testing.plugin.REFERENCE_KAFKA_CONFIG; kcoord gets the same through the marker.
# A timed-out transaction is aborted within a second of its timeout (the default check runs
# every 10 s).
TXN_BROKER_CONFIG = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}
pytestmark = pytest.mark.kcoord(kafka_config=TXN_BROKER_CONFIG)

TXN_TIMEOUT_MS = 3000
# Past the timeout and the next check of the broker that aborts it, with room for a busy machine.
SLEEP_PAST_TIMEOUT_MS = 6000

# What a fenced producer's send, commit and then abort throw (an old epoch on Produce is
# abortable; EndTxn with it fences), and what commit throws after the coordinator aborted a
# timed-out transaction (its epoch bumped: version 1 fences, version 2 finds no transaction).
FENCED = {"java": ["InvalidProducerEpochException", "InvalidProducerEpochException", "ProducerFencedException"],
          "java4": ["InvalidProducerEpochException", "InvalidProducerEpochException", "ProducerFencedException"]}
TIMED_OUT = {"java": "ProducerFencedException", "java4": "InvalidTxnStateException"}


def _name(kind: str, client: str) -> str:
    return f"txn-{kind}-{client}-{uuid.uuid4().hex[:6]}"


def read_committed(client: str, bootstrap: str, topic: str) -> list[dict]:
    """Every record a read_committed consumer finds in `topic`, read to the last stable offsets."""
    events = txn_run(client, "read-committed", bootstrap=bootstrap, topic=topic)
    assert events[-1]["event"] == "done" and events[-1]["reached_end"], events[-5:]
    return [e for e in events if e["event"] == "record"]


def _failures(events: list[dict]) -> list[str]:
    return [e["error"] for e in events if e["event"] == "failed"]


@pytest.mark.parametrize("client", CLIENTS)
def test_read_committed_sees_exactly_the_committed_transactions_in_order(broker_any, client):
    topic, pattern, per_txn = _name("pattern", client), "caccaac", 6
    create_topic(broker_any.bootstrap, topic, 2)
    events = txn_run(client, "produce-txn", bootstrap=broker_any.bootstrap, topic=topic, pattern=pattern,
                     records=per_txn, partitions=2, transactional_id=_name("pattern-id", client))
    assert [e["outcome"][0] for e in events if e["event"] == "transaction"] == list(pattern)
    seen = collections.defaultdict(list)
    for record in read_committed(client, broker_any.bootstrap, topic):
        seen[record["partition"]].append(record["value"])
    expected = collections.defaultdict(list)
    for i, outcome in enumerate(pattern):
        for j in range(per_txn):
            if outcome == "c":
                expected[j % 2].append(f"t{i}-r{j}")
    assert dict(seen) == dict(expected)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_second_producer_with_the_same_transactional_id_fences_the_first(broker_any, client):
    topic = _name("fence", client)
    create_topic(broker_any.bootstrap, topic, 1)
    events = txn_run(client, "fence", bootstrap=broker_any.bootstrap, topic=topic,
                     transactional_id=_name("fence-id", client))
    assert _failures(events) == FENCED[client], events
    assert {"event": "committed", "producer": 2} in events
    # The first producer's open transaction was aborted by the second's initTransactions.
    assert [r["value"] for r in read_committed(client, broker_any.bootstrap, topic)] == ["fence-2"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_transaction_past_its_timeout_is_aborted_by_the_coordinator(broker_any, client):
    topic = _name("timeout", client)
    create_topic(broker_any.bootstrap, topic, 1)
    events = txn_run(client, "timeout", bootstrap=broker_any.bootstrap, topic=topic,
                     transactional_id=_name("timeout-id", client), transaction_timeout_ms=TXN_TIMEOUT_MS,
                     sleep_ms=SLEEP_PAST_TIMEOUT_MS)
    assert _failures(events) == [TIMED_OUT[client]], events
    # The next producer of the id commits behind the aborted transaction: the last stable
    # offset has passed it, and its record is not among the committed.
    assert [r["value"] for r in read_committed(client, broker_any.bootstrap, topic)] == ["after-timeout"]


CTP_INPUT = 200


@pytest.mark.parametrize("client", CLIENTS)
def test_consume_transform_produce_killed_mid_transaction_outputs_each_input_once(broker_any, client):
    bootstrap = broker_any.bootstrap
    source, sink, group = _name("ctp-in", client), _name("ctp-out", client), _name("ctp-group", client)
    create_topic(bootstrap, source, 4)
    create_topic(bootstrap, sink, 4)
    produce("confluent", bootstrap, source, CTP_INPUT)
    # Each transaction holds 5 records and its offsets for 300 ms before the commit, so a kill
    # most likely lands inside one; the killed member's transaction times out after 5 s.
    options = dict(bootstrap=bootstrap, input=source, output=sink, group=group, delay_ms=300, max_records=5,
                   transaction_timeout_ms=5000, session_ms=6000, max_seconds=150)
    first = txn_start(client, "ctp", transactional_id=f"{group}-a", **options)
    second = None
    try:
        first.wait_for(lambda e: e["event"] == "committed", timeout=60)
        second = txn_start(client, "ctp", transactional_id=f"{group}-b", **options)
        second.wait_for(lambda e: e["event"] == "assigned" and e["owned"] > 0, timeout=60)
        first.wait_for(lambda e: e["event"] == "committed" and e["total"] >= 40, timeout=60)
        first.kill()
        killed_after = max(e["total"] for e in first.snapshot() if e["event"] == "committed")
        events = second.finish(timeout=150)
    finally:
        for program in (first, second):
            if program is not None and program.proc.poll() is None:
                program.kill()
    assert events[-1]["event"] == "done"
    assert killed_after < CTP_INPUT and events[-1]["total"] > 0
    outputs = [r["value"] for r in read_committed(client, bootstrap, sink)]
    duplicates = [v for v, n in collections.Counter(outputs).items() if n > 1]
    assert not duplicates, f"{len(duplicates)} inputs were output twice: {duplicates[:10]}"
    assert sorted(outputs) == sorted(f"out-v{i}" for i in range(CTP_INPUT))
