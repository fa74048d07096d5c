"""`kcoord check` against kcoord itself: every scenario passes, for every client, and the
JSON report has the documented shape."""
from __future__ import annotations

import json
import subprocess
import sys

from kcoord.conformance import check
from kcoord.conformance.members import CONSUMER_PROTOCOL_CLIENTS
from kcoord.testing.plugin import start_server


# Two clients, not all five: one without the consumer group protocol (its kip848 rows are
# skipped) and one with it. Every client scenario already runs on kcoord for all five clients,
# at this same initial delay, in test_differential.py, whose verdict includes each scenario's own
# check; this test is about `kcoord check` itself, and the Java clients' JVMs here cost two minutes.
CHECK_CLIENTS = ("kafka-python", "confluent")


def test_kcoord_check_passes_against_kcoord():
    # Kafka's default initial rebalance delay: the scenarios must tolerate it.
    thread = start_server(initial_rebalance_delay_ms=3000)
    try:
        proc = subprocess.run([sys.executable, "-m", "kcoord", "check", "--bootstrap", thread.bootstrap,
                               "--clients", ",".join(CHECK_CLIENTS), "--json"],
                              capture_output=True, text=True, timeout=540)
    finally:
        thread.stop()
    report = json.loads(proc.stdout)
    assert set(report) == {"bootstrap", "passed", "results"}
    # The consumer group protocol's client rows are skipped, and only those, for the clients
    # without group.protocol=consumer.
    skipped = {(r["scenario"], r["client"]) for r in report["results"] if r["status"] == "skip"}
    assert skipped == {(s, c) for s in check.all_scenarios() if s.startswith("client:kip848-")
                       for c in CHECK_CLIENTS if c not in CONSUMER_PROTOCOL_CLIENTS}
    assert skipped
    failed = [r for r in report["results"] if r["status"] not in ("pass", "skip")]
    assert not failed, json.dumps(failed, indent=1)
    assert proc.returncode == 0 and report["passed"] is True
    rows = {(r["scenario"], r["client"]) for r in report["results"]}
    assert rows == {(s, "raw") for s in check.RAW_SCENARIOS} | {
        (s, c) for s in check.all_scenarios() if s.startswith("client:") for c in CHECK_CLIENTS}
    for r in report["results"]:
        assert set(r) == {"scenario", "client", "status", "observed", "expected", "seconds"}


def test_kcoord_check_fails_when_the_broker_deviates():
    # A fault rule makes kcoord answer heartbeats of every group wrongly: check must notice.
    thread = start_server(fault_rules=["api=Heartbeat,error=NOT_COORDINATOR,seconds=600"])
    try:
        proc = subprocess.run([sys.executable, "-m", "kcoord", "check", "--bootstrap", thread.bootstrap,
                               "--clients", "none", "--scenarios", "single-member-stable,member-id-required"],
                              capture_output=True, text=True, timeout=120)
    finally:
        thread.stop()
    assert proc.returncode == 1, proc.stdout
    assert "FAIL" in proc.stdout and "heartbeat=NOT_COORDINATOR" in proc.stdout
    assert "1 passed" in proc.stdout


TXN_ROWS = ",".join(check.txn_check_scenarios.SCENARIOS)


def _check(bootstrap: str, scenarios: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcoord", "check", "--bootstrap", bootstrap, "--clients", "none",
                           "--scenarios", scenarios, "--json"], capture_output=True, text=True, timeout=timeout)


def test_the_transaction_rows_pass_against_the_reference_kafka(reference_kafka):
    # The session's Kafka aborts timed-out transactions every second, so the timeout row waits ~2 s.
    proc = _check(reference_kafka.bootstrap, TXN_ROWS, 180)
    report = json.loads(proc.stdout)
    assert {r["scenario"]: r["status"] for r in report["results"]} == {
        s: "pass" for s in check.txn_check_scenarios.SCENARIOS}, json.dumps(report, indent=1)
    timeout_row, = (r for r in report["results"] if r["scenario"] == "txn-timeout-abort")
    assert "cleanup interval 1000 ms" in timeout_row["observed"]


def _statuses_when_faulty(fault_rule: str, scenarios: str, timeout: float, **config) -> tuple[dict, dict]:
    """(row -> status, the report) of `kcoord check` on a kcoord answering with `fault_rule`;
    the check must have failed as a whole."""
    thread = start_server(fault_rules=[fault_rule], **config)
    try:
        proc = _check(thread.bootstrap, scenarios, timeout)
    finally:
        thread.stop()
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["passed"] is False
    return {r["scenario"]: r["status"] for r in report["results"]}, report


def test_the_transaction_rows_fail_when_the_broker_deviates():
    # EndTxn refused everywhere: every row that ends a transaction must notice.
    status, report = _statuses_when_faulty("api=EndTxn,error=INVALID_TXN_STATE,seconds=600", TXN_ROWS, 120,
                                           transaction_abort_interval_ms=500)
    assert status == {"txn-init-producer-id-fencing": "fail", "txn-commit-abort-read-committed": "fail",
                      "txn-offset-commit-pending": "fail", "txn-unknown-transactional-id": "fail",
                      "txn-timeout-abort": "fail"}, json.dumps(report, indent=1)


STREAMS_ROWS = ",".join(check.streams_check_scenarios.SCENARIOS)


def test_the_streams_rows_pass_against_the_reference_kafka(reference_kafka):
    report = json.loads(_check(reference_kafka.bootstrap, STREAMS_ROWS, 300).stdout)
    # The reference Kafka has answered a streams join whose topology has a changelog topic with
    # UNKNOWN_SERVER_ERROR under a loaded full run (2026-11-27): an internal error of the judge,
    # not an answer to model. Such a row is run once more; any other failure, or the same one
    # twice, fails the test.
    glitched = [r["scenario"] for r in report["results"] if "UNKNOWN_SERVER_ERROR" in r["observed"]]
    if glitched:
        print(f"rerunning {glitched} after UNKNOWN_SERVER_ERROR: {json.dumps(report, indent=1)}")
        again = json.loads(_check(reference_kafka.bootstrap, ",".join(glitched), 300).stdout)["results"]
        report["results"] = [r for r in report["results"] if r["scenario"] not in glitched] + again
    assert {r["scenario"]: r["status"] for r in report["results"]} == {
        s: "pass" for s in check.streams_check_scenarios.SCENARIOS}, json.dumps(report, indent=1)


SHARE_ROWS = [s for s in check.RAW_SCENARIOS if s.startswith("share-")]


def test_the_share_rows_pass_against_the_reference_kafka(reference_kafka):
    # The share-* raw scenarios' expectations are Kafka's answers: `kcoord check` agrees.
    proc = _check(reference_kafka.bootstrap, ",".join(SHARE_ROWS), 300)
    report = json.loads(proc.stdout)
    assert len(SHARE_ROWS) >= 10
    assert {r["scenario"]: r["status"] for r in report["results"]} == {s: "pass" for s in SHARE_ROWS}, \
        json.dumps(report, indent=1)


def test_the_streams_rows_fail_when_the_broker_deviates():
    # StreamsGroupDescribe refused everywhere: the rows that describe must notice, the others pass.
    status, report = _statuses_when_faulty("api=StreamsGroupDescribe,error=GROUP_AUTHORIZATION_FAILED,seconds=600",
                                           STREAMS_ROWS, 300)
    assert status == {"streams-join-assigns-tasks": "pass", "streams-second-member-revocation": "pass",
                      "streams-member-leaves": "fail", "streams-describe": "fail",
                      "streams-missing-source-topic": "fail"}, json.dumps(report, indent=1)
