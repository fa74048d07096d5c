"""Transactions, kcoord against the reference Apache Kafka 4.3.1: every transactional scenario
(kcoord.conformance.txn_scenarios) runs on both brokers through a recording proxy and the two
transcripts must agree request for request and field by field (kcoord.conformance.txn_differential);
on both, a refused request must leave the transaction's state, epoch and partitions and the
last stable offset as they were. A stock transactional producer (confluent-kafka) is compared
on the transaction APIs it sends. Where kcoord still answers otherwise, the case is an
xfail(strict=True) naming the difference and where Kafka decides it."""
from __future__ import annotations

import pytest

from kcoord.conformance import txn_differential
from kcoord.conformance.recorder import ProxyThread, jsonable
from kcoord.conformance.txn_scenarios import SCENARIOS
from wire import records as R

# Scenario -> what kcoord answers otherwise than Kafka 4.3.1 (for the lead to fix, then unmark).
# Scenario name -> why kcoord's answers differ from Kafka's (none today; a difference found is
# marked here, strict, until it is fixed or written down in docs/deviations.md).
KNOWN_DIFFERENCES: dict[str, str] = {}


# ---------------------------------------------------------------- the normalisation, on hand-made exchanges
def _produce(seq: int, pid: int, epoch: int) -> dict:
    batch = R.build_batch([(None, b"v", 0)], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                          transactional=True)
    return {"conn": 1, "seq": seq, "client_id": "kcoord-check", "api": "Produce", "api_key": 0, "version": 11,
            "request": {"transactional_id": "kcoord-check-txn-0000abcd", "topic_data": [
                {"name": "kcoord-check-topic-0000abcd", "partition_data": [{"index": 0, "records": jsonable(batch)}]}]},
            "response": {"responses": [{"name": "kcoord-check-topic-0000abcd", "partition_responses": [
                {"index": 0, "error_code": 0, "base_offset": 0, "log_append_time_ms": seq}]}]}}


def _init(seq: int, pid: int, epoch: int, code: int = 0) -> dict:
    return {"conn": 1, "seq": seq, "client_id": "kcoord-check", "api": "InitProducerId", "api_key": 22,
            "version": 5, "request": {"transactional_id": "kcoord-check-txn-0000abcd"},
            "response": {"throttle_time_ms": seq, "error_code": code, "producer_id": pid, "producer_epoch": epoch}}


def test_producer_ids_compare_by_order_of_appearance_and_records_by_their_batches():
    kafka = [_init(1, 4000, 0), _produce(2, 4000, 0), _init(3, 4000, 1)]
    kcoord = [_init(1, 7, 0), _produce(2, 7, 0), _init(3, 7, 1)]
    assert txn_differential.compare(kafka, kcoord) == []
    # A new producer id where Kafka keeps its own, or a batch of another epoch, is a difference.
    [d] = txn_differential.compare(kafka, [_init(1, 7, 0), _produce(2, 7, 0), _init(3, 8, 1)])
    assert (d.index, d.path, d.kafka, d.kcoord) == (2, "response.producer_id", "pid1", "pid2")
    [d] = txn_differential.compare(kafka, [_init(1, 7, 0), _produce(2, 7, 1), _init(3, 7, 1)])
    assert d.path == "request.topic_data[0].partition_data[0].records[0].producer_epoch"


def test_a_client_comparison_leaves_out_retried_answers_and_other_apis():
    kafka = [_init(1, 4000, -1, code=51), _init(2, 4000, -1, code=51), _init(3, 4000, 0)]
    kcoord = [_produce(1, 9, 0), _init(2, 7, 0)]
    assert txn_differential.compare(kafka, kcoord, txn_differential.TRANSACTION_APIS) == []
    assert txn_differential.compare(kafka, kcoord) != []


# ---------------------------------------------------------------- kcoord vs Apache Kafka
@pytest.fixture(scope="module")
def kcoord_txn():
    from kcoord.testing.plugin import start_server

    # One __consumer_offsets partition, as the reference Kafka has: the group's partition that
    # AddOffsetsToTxn adds to a transaction is compared.
    server = start_server(offsets_topic_partitions=1)
    try:
        yield server.bootstrap
    finally:
        server.stop()


@pytest.fixture(scope="module")
def proxies():
    with ProxyThread() as p:
        yield p


def _assert_same(result: txn_differential.TxnResult) -> None:
    assert not (result.kafka_error or result.kcoord_error or result.kafka_problems or result.kcoord_problems
                or result.differences), result.report()


@pytest.mark.parametrize("scenario", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[name]))
    if name in KNOWN_DIFFERENCES else name for name in SCENARIOS])
def test_transactional_scenario_kcoord_vs_kafka(scenario, reference_kafka, kcoord_txn, proxies):
    _assert_same(txn_differential.run_scenario(scenario, reference_kafka.bootstrap, kcoord_txn, proxies))


def test_confluent_transactional_producer_kcoord_vs_kafka(reference_kafka, kcoord_txn, proxies):
    result = txn_differential.run_client(reference_kafka.bootstrap, kcoord_txn, proxies)
    _assert_same(result)
    sent = [i["api"] for i in txn_differential.client_items(result.kcoord_transcript, txn_differential.TRANSACTION_APIS)]
    assert sent == ["InitProducerId"] + ["AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"] * 2
