"""The journal of a real kcoord while real confluent-kafka transactional producers commit, abort,
time out and leave a transaction open beside a kafka-python consumer group, run through `kcoord
report` on pyspark local: the transactions table, the counts per transactional id and the report's
transactions view beside the group's timeline."""
import json
import time

import pytest

from kcoord.conformance.members import Member
from kcoord.coordinator.events import EventKind
from kcoord.testing.plugin import start_server
from tests.analytics.conftest import report_of
from tests.integration.txn_clients import ConfluentProducer

TOPIC = "txn-report-topic"
GROUP = "txn-report-group"
TIMEOUT_MS = 2000        # transaction.timeout.ms of the producer that lets its transaction time out
ABORT_INTERVAL_MS = 200  # transaction.abort.timed.out.transaction.cleanup.interval.ms


def _now_ms() -> int:
    return int(time.time() * 1000)


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _wait_completed(server, transactional_id: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(e.kind is EventKind.TRANSACTION_COMPLETED and e.transactional_id == transactional_id
                  for e in list(server.app.recorded_events)):
        if time.monotonic() > deadline:
            raise AssertionError(f"the coordinator did not abort {transactional_id}'s timed-out transaction")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    path = tmp_path_factory.mktemp("txn-journal") / "events.jsonl"
    server = start_server(journal=str(path), transaction_abort_interval_ms=ABORT_INTERVAL_MS)
    seen = {"journal": path, "begin_ms": _now_ms()}
    producers, member = [], None
    try:
        async def create():
            server.app.topics.create(TOPIC, 1)
        server.call(create)
        member = Member("kafka-python", server.bootstrap, TOPIC, GROUP, session_ms=10_000)
        server.call(lambda: server.app.coordinator.wait_for(GROUP, state="Stable", members=1, timeout=90), timeout=100)
        a = ConfluentProducer(server.bootstrap, "txn-report-a", {})
        producers.append(a)
        a.transact(TOPIC, 0, b"a0", b"a1", end="commit")
        a.transact(TOPIC, 0, b"a2", end="commit")
        a.transact(TOPIC, 0, b"a3", end="abort")
        b = ConfluentProducer(server.bootstrap, "txn-report-b",
                              {"transaction.timeout.ms": TIMEOUT_MS, "socket.timeout.ms": TIMEOUT_MS})
        producers.append(b)
        b.transact(TOPIC, 0, b"b0", end=None)
        seen["b_sent_ms"] = _now_ms()
        _wait_completed(server, "txn-report-b")
        c = ConfluentProducer(server.bootstrap, "txn-report-c", {})
        producers.append(c)
        c.transact(TOPIC, 0, b"c0", end=None)   # still open when kcoord stops
        seen["end_ms"] = _now_ms()
    finally:
        for p in producers:
            p.close()
        if member is not None:
            member.stop()
        server.stop()
    return seen


@pytest.fixture(scope="module")
def report(spark, scenario, tmp_path_factory):
    return report_of(spark, [scenario["journal"]], tmp_path_factory)


def test_the_journal_names_transactions_by_transactional_id(scenario):
    txns = [r for r in _records(scenario["journal"]) if r["kind"].startswith("transaction_")]
    assert txns and all("group_id" not in r for r in txns)
    a = [r for r in txns if r["transactional_id"] == "txn-report-a"]
    assert [r["kind"] for r in a] == ["transaction_initialized"] + [
        "transaction_started", "transaction_ending", "transaction_completed"] * 3
    assert [r["result"] for r in a if r["kind"] == "transaction_completed"] == ["commit", "commit", "abort"]
    assert len({r["producer_id"] for r in a}) == 1 and all(r["partitions"] == 1 for r in a
                                                          if r["kind"] == "transaction_ending")
    b = [r for r in txns if r["transactional_id"] == "txn-report-b"]
    assert [r["kind"] for r in b] == ["transaction_initialized", "transaction_started", "transaction_timed_out",
                                      "transaction_ending", "transaction_completed"]
    ending = b[3]
    assert (ending["result"], ending["fenced"]) == ("abort", True)
    assert ending["producer_epoch"] == b[0]["producer_epoch"] + 1   # the timeout fenced the producer


def test_the_transactions_table_counts_each_outcome(spark, scenario, report):
    rows = spark.read.parquet(str(report / "transactions")).orderBy("transactional_id", "seq").collect()
    assert [(r.transactional_id, r.seq, r.outcome) for r in rows] == [
        ("txn-report-a", 1, "committed"), ("txn-report-a", 2, "committed"), ("txn-report-a", 3, "aborted"),
        ("txn-report-b", 1, "timed_out"), ("txn-report-c", 1, "open")]
    for r in rows[:4]:
        assert scenario["begin_ms"] <= r.start_ms <= r.end_ms <= scenario["end_ms"]
        assert r.duration_ms == r.end_ms - r.start_ms and r.partitions == 1
    timed_out = rows[3]
    # aborted once its timeout passed, by a cleanup that runs every ABORT_INTERVAL_MS
    assert timed_out.duration_ms >= TIMEOUT_MS and timed_out.end_ms >= scenario["b_sent_ms"]
    assert rows[4].end_ms is None and rows[4].duration_ms is None
    events = spark.read.parquet(str(report / "events"))
    assert events.where("transactional_id IS NOT NULL AND group_id IS NOT NULL").count() == 0
    # the group beside them: its own rebalances (its join, its leave), no transactional id taken for a group
    rebalances = spark.read.parquet(str(report / "rebalances")).collect()
    assert {r.group_id for r in rebalances} == {GROUP} and "stable" in {r.outcome for r in rebalances}


def test_the_report_shows_transactions_beside_the_groups(spark, report):
    page = (report / "report.html").read_text()
    assert "5 transactions (2 committed, 1 aborted, 1 timed out, 1 open)" in page
    assert "1 groups" in page
    section = page.split("<h2>Transactions</h2>")[1].split("<h2>")[0]
    assert '<img src="data:image/png;base64,' in section
    per_id = section.split("<h3>Per transactional id</h3>")[1].split("<h3>")[0]
    rows = [[cell.split("</td>")[0] for cell in tr.split("<td>")[1:]] for tr in per_id.split("<tr>")[2:]]
    assert [r[:6] for r in rows] == [["txn-report-a", "3", "2", "1", "0", "0"],
                                     ["txn-report-b", "1", "0", "0", "1", "0"],
                                     ["txn-report-c", "1", "0", "0", "0", "1"]]
    # after the group timeline, before the rest of the report
    assert page.index("<h2>Timeline</h2>") < page.index("<h2>Transactions</h2>") < page.index("<h2>Durations</h2>")
