"""`kcoord check` against kcoord itself: every scenario passes, for every client, and the
JSON report has the documented shape."""
from __future__ import annotations

import json
import subprocess
import sys

from kcoord.conformance import check
from kcoord.conformance.members import CONSUMER_PROTOCOL_CLIENTS
from kcoord.testing.plugin import start_server


def test_kcoord_check_passes_against_kcoord():
    # Kafka's default initial rebalance delay: the scenarios must tolerate it.
    thread = start_server(initial_rebalance_delay_ms=3000)
    try:
        proc = subprocess.run([sys.executable, "-m", "kcoord", "check", "--bootstrap", thread.bootstrap,
                               "--clients", ",".join(check.CLIENTS), "--json"],
                              capture_output=True, text=True, timeout=540)
    finally:
        thread.stop()
    report = json.loads(proc.stdout)
    assert set(report) == {"bootstrap", "passed", "results"}
    # The consumer group protocol's client rows are skipped, and only those, for the clients
    # without group.protocol=consumer.
    skipped = {(r["scenario"], r["client"]) for r in report["results"] if r["status"] == "skip"}
    assert skipped == {(s, c) for s in check.all_scenarios() if s.startswith("client:kip848-")
                       for c in check.CLIENTS if c not in CONSUMER_PROTOCOL_CLIENTS}
    failed = [r for r in report["results"] if r["status"] not in ("pass", "skip")]
    assert not failed, json.dumps(failed, indent=1)
    assert proc.returncode == 0 and report["passed"] is True
    rows = {(r["scenario"], r["client"]) for r in report["results"]}
    assert rows == {(s, "raw") for s in check.raw_scenarios.SCENARIOS} | {
        (s, c) for s in check.all_scenarios() if s.startswith("client:") for c in check.CLIENTS}
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
