"""`kcoord groups`, `kcoord wait`, /metrics and /groups against a running server with a real consumer."""
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer

from prometheus_client.parser import text_string_to_metric_families

from kcoord.conformance.member import subscribe_kafka_python
from kcoord.testing.plugin import start_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server():
    s = start_server(default_partitions=3, http_host="127.0.0.1", http_port=0)
    yield s
    s.stop()


def _kcoord(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "kcoord", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def _http(server, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.app.http.port}{path}", timeout=10) as r:
        return r.read().decode()


@pytest.fixture
def consumer(server):
    producer = KafkaProducer(bootstrap_servers=server.bootstrap)
    for i in range(10):
        producer.send("orders", b"x", partition=i % 3)
    producer.flush()
    producer.close()
    c = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id="billing", client_id="billing-1",
                      auto_offset_reset="earliest", enable_auto_commit=False)
    subscribe_kafka_python(c, ["orders"])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 10 and time.monotonic() < deadline:
        seen += sum(len(v) for v in c.poll(timeout_ms=200).values())
    assert seen == 10
    c.commit()
    yield c
    c.close()


def test_groups_lists_and_describes_with_lag(server, consumer):
    listed = _kcoord("groups", "--bootstrap", server.bootstrap)
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:3] == ["billing", "consumer", "Stable"] for line in listed.stdout.splitlines())
    described = _kcoord("groups", "--bootstrap", server.bootstrap, "--describe", "billing")
    assert described.returncode == 0, described.stderr
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith("billing ")]
    committed = {int(r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in rows}
    # 10 records over 3 partitions, all consumed and committed: lag 0 everywhere.
    assert committed == {0: (4, 4, 0), 1: (3, 3, 0), 2: (3, 3, 0)}
    assert all(r[8] == "billing-1" for r in rows)


def test_wait_returns_when_matched_and_fails_with_what_it_saw(server, consumer):
    ok = _kcoord("wait", "billing", "--bootstrap", server.bootstrap, "--state", "Stable", "--members", "1",
                 "--timeout", "20")
    assert ok.returncode == 0 and "Stable with 1 members" in ok.stdout
    late = _kcoord("wait", "billing", "--bootstrap", server.bootstrap, "--members", "2", "--timeout", "1")
    assert late.returncode == 1 and "last seen: Stable with 1 members" in late.stderr


def test_wait_on_an_unreachable_broker_times_out_cleanly():
    r = _kcoord("wait", "g", "--bootstrap", "127.0.0.1:1", "--state", "Stable", "--timeout", "1")
    assert r.returncode == 1 and "unreachable" in r.stderr


def test_metrics_and_group_json(server, consumer):
    metrics = _http(server, "/metrics")
    assert 'kcoord_groups{state="Stable"} 1.0' in metrics
    assert "kcoord_group_members 1.0" in metrics
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(metrics) for s in family.samples}
    started = {dict(labels)["reason"]: v for (name, labels), v in samples.items() if name == "kcoord_rebalances_total"}
    assert started.get("member_joined") == 1.0
    # Every rebalance started has ended (the group is Stable), so each has its duration.
    assert samples[("kcoord_rebalance_duration_seconds_count", ())] == sum(started.values())
    # Requests are labelled with the broker that answered: this one's node id, 0.
    assert any(name == "kcoord_requests_total" and {"api": "JoinGroup", "error": "0", "broker": "0"}.items()
               <= dict(labels).items() for name, labels in samples)
    assert samples[("kcoord_request_latency_seconds_count", (("api", "Fetch"), ("broker", "0")))] >= 1
    assert samples[("kcoord_partitions_led", (("broker", "0"),))] == 3 + 50   # orders, __consumer_offsets
    assert samples[("kcoord_groups_coordinated", (("broker", "0"),))] == 1
    assert samples[("kcoord_broker_running", (("broker", "0"),))] == 1
    # The event loop's lag is sampled while the server runs (no figure asserted: no timed assertions).
    assert samples[("kcoord_event_loop_lag_seconds_count", ())] >= 1
    assert ("kcoord_event_loop_lag_max_seconds", ()) in samples
    groups = json.loads(_http(server, "/groups"))
    assert [(g["group_id"], g["state"], g["members"], g["coordinator"]) for g in groups] == \
        [("billing", "Stable", 1, 0)]
    billing = json.loads(_http(server, "/groups/billing"))
    # One generation per rebalance the group went through.
    assert billing["generation"] == sum(started.values()) and billing["members"][0]["client_id"] == "billing-1"
    assert billing["coordinator"] == 0
    assert sorted(a["partition"] for a in billing["members"][0]["assignment"]) == [0, 1, 2]
    assert {(o["partition"], o["offset"]) for o in billing["offsets"]} == {(0, 4), (1, 3), (2, 3)}
    with pytest.raises(urllib.error.HTTPError) as missing:
        _http(server, "/groups/nobody")
    assert missing.value.code == 404
