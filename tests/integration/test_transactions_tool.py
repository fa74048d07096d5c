"""Kafka's `kafka-transactions` tool (org.apache.kafka.tools.TransactionsCommand, Kafka 4.3.1)
against kcoord and the reference Kafka (`broker_any`): the same transactions are set up with
kafka-python on each, the tool's tables are parsed (kcoord.testing.kafka_tools.tab_table) and
the cells that follow from what was done must be the same on both: states, coordinator,
partitions, producer ids and epochs, sequences, open transactions' start offsets.

kcoord runs with node id 1, the reference Kafka's node.id, so the coordinator and broker ids
are the same. One ToolSession (one JVM) runs every command of the module.

find-hanging is run over a legitimately open transaction, which it must not report: a truly
hanging one (a partition's open transaction its coordinator does not know) cannot be made on
Kafka 4.3.1 with its default partition verification (KIP-890), short of turning that off.
`abort` ends an open transaction with the producer id, epoch and coordinator epoch
describe-producers shows, as an operator would a hanging one; read_committed readers then
get past it.
"""
from __future__ import annotations

import uuid

import pytest

from kcoord.testing.brokers import create_topic
from kcoord.testing.kafka_tools import ToolSession, tab_table
from tests.integration.txn_clients import READ_COMMITTED, latest_offsets, txn_session, wait_stable

pytestmark = pytest.mark.kcoord(node_id=1)
NODE = "1"
NOT_FOUND = ("Failed to describe transaction state of transactional-id `{id}`: DescribeTransactions request "
             "for transactionalId `{id}` failed because the ID could not be found.")


@pytest.fixture(scope="module")
def tools():
    with ToolSession() as session:
        yield session


def _tool(tools, bootstrap: str, *args: str) -> list[dict[str, str]]:
    result = tools.run("transactions", bootstrap, *args)
    assert result.code == 0, result
    return tab_table(result.stdout)


def _new_topic(bootstrap: str, stem: str, partitions: int) -> tuple[str, str, str]:
    """A new topic, and the transactional ids of a producer that commits and one left open."""
    suffix = uuid.uuid4().hex[:8]  # the reference Kafka lives for the whole session
    topic = f"{stem}-{suffix}"
    create_topic(bootstrap, topic, partitions)
    return topic, f"tx-{stem}-done-{suffix}", f"tx-{stem}-open-{suffix}"


def test_list_describe_and_describe_producers_show_the_transactions(broker_any, tools):
    bootstrap = broker_any.bootstrap
    topic, done_id, open_id = _new_topic(bootstrap, "tool", 2)
    with txn_session("kafka-python") as s:
        done = s.producer(bootstrap, done_id)
        done.transact(topic, 1, b"committed")
        done.close()
        opened = s.producer(bootstrap, open_id)
        try:
            opened.transact(topic, 0, b"open-0", b"open-1", end=None)
            wait_stable(bootstrap, topic, [1])

            listed = {r["TransactionalId"]: r for r in _tool(tools, bootstrap, "list")
                      if r["TransactionalId"] in (done_id, open_id)}
            assert {t: (r["Coordinator"], r["TransactionState"]) for t, r in listed.items()} == {
                done_id: (NODE, "CompleteCommit"), open_id: (NODE, "Ongoing")}

            [described] = _tool(tools, bootstrap, "describe", "--transactional-id", open_id)
            assert described["ProducerId"] == listed[open_id]["ProducerId"]
            assert {k: described[k] for k in ("CoordinatorId", "TransactionalId", "TransactionState",
                                              "TransactionTimeoutMs", "TopicPartitions")} == {
                "CoordinatorId": NODE, "TransactionalId": open_id, "TransactionState": "Ongoing",
                "TransactionTimeoutMs": "60000", "TopicPartitions": f"{topic}-0"}
            [described_done] = _tool(tools, bootstrap, "describe", "--transactional-id", done_id)
            assert (described_done["ProducerId"], described_done["TransactionState"],
                    described_done["TopicPartitions"]) == (listed[done_id]["ProducerId"], "CompleteCommit", "")

            unknown = f"{open_id}-unknown"
            missing = tools.run("transactions", bootstrap, "describe", "--transactional-id", unknown)
            assert missing.code == 1
            assert NOT_FOUND.format(id=unknown) in missing.stderr, missing.stderr

            # The open transaction: its producer, its sequence (two records: 0 and 1), where it
            # starts; no marker yet, so no coordinator epoch. The committed one's has a marker.
            [open_producer] = _tool(tools, bootstrap, "describe-producers", "--topic", topic, "--partition", "0")
            assert {k: open_producer[k] for k in ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
                                                  "LastSequence", "CurrentTransactionStartOffset")} == {
                "ProducerId": described["ProducerId"], "ProducerEpoch": described["ProducerEpoch"],
                "LatestCoordinatorEpoch": "-1", "LastSequence": "1", "CurrentTransactionStartOffset": "0"}
            [done_producer] = _tool(tools, bootstrap, "describe-producers", "--topic", topic, "--partition", "1")
            assert {k: done_producer[k] for k in ("ProducerId", "ProducerEpoch", "LastSequence",
                                                  "CurrentTransactionStartOffset")} == {
                "ProducerId": described_done["ProducerId"], "ProducerEpoch": described_done["ProducerEpoch"],
                "LastSequence": "0", "CurrentTransactionStartOffset": "None"}
            assert int(done_producer["LatestCoordinatorEpoch"]) >= 0

            # Open for longer than a zero timeout, yet its coordinator has it Ongoing with this
            # partition: not hanging.
            hanging = _tool(tools, bootstrap, "find-hanging", "--broker-id", NODE, "--max-transaction-timeout", "0")
            assert [r for r in hanging if r["Topic"] == topic] == []
            opened.abort()
        finally:
            opened.close()


def test_abort_ends_an_open_transaction_and_read_committed_readers_go_on(broker_any, tools):
    bootstrap = broker_any.bootstrap
    topic, done_id, open_id = _new_topic(bootstrap, "abort", 1)
    with txn_session("kafka-python") as s:
        done = s.producer(bootstrap, done_id)
        opened = s.producer(bootstrap, open_id)
        try:
            done.transact(topic, 0, b"before")
            wait_stable(bootstrap, topic, [0])
            opened.transact(topic, 0, b"left-open", end=None)
            done.transact(topic, 0, b"after")

            [producer] = [r for r in _tool(tools, bootstrap, "describe-producers", "--topic", topic, "--partition", "0")
                          if r["CurrentTransactionStartOffset"] != "None"]
            start = int(producer["CurrentTransactionStartOffset"])
            assert start == 2  # "before" and its commit marker come first
            assert latest_offsets(bootstrap, topic, [0], 1) == {0: start}  # read_committed readers stop there

            aborted = tools.run("transactions", bootstrap, "abort", "--topic", topic, "--partition", "0",
                                "--producer-id", producer["ProducerId"], "--producer-epoch", producer["ProducerEpoch"],
                                "--coordinator-epoch", producer["LatestCoordinatorEpoch"])
            assert aborted.code == 0, aborted
            assert s.read(bootstrap, topic, READ_COMMITTED) == {0: [b"before", b"after"]}
            after = {r["ProducerId"]: r for r in _tool(tools, bootstrap, "describe-producers", "--topic", topic,
                                                        "--partition", "0")}
            assert after[producer["ProducerId"]]["CurrentTransactionStartOffset"] == "None"
            assert [r for r in _tool(tools, bootstrap, "find-hanging", "--broker-id", NODE,
                                     "--max-transaction-timeout", "0") if r["Topic"] == topic] == []
            # Its coordinator still has it Ongoing: the producer ends it, and the aborted record stays out.
            opened.commit()
            assert s.read(bootstrap, topic, READ_COMMITTED) == {0: [b"before", b"after"]}
        finally:
            opened.close()
            done.close()
