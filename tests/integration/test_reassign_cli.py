"""`kcoord reassign plan` and `score` against a four-broker kcoord over two racks, run as a user
runs them (a subprocess): the plan is Kafka's reassignment JSON for the cluster's own topics,
the score its six criteria, and bad input one line with exit status 1."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaProducer

from kcoord.protocol_client import Admin
from kcoord.testing import brokers as kb
from kcoord.testing.plugin import KcoordHandle, start_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():
    handle = KcoordHandle(start_server(brokers=4, broker_racks=("a", "b", "a", "b")))
    for topic in ("orders", "clicks"):
        kb.create_topic(handle.bootstrap, topic, 6, replication_factor=2, wait=False)
    producer = KafkaProducer(bootstrap_servers=handle.bootstrap)
    for i in range(60):
        producer.send("orders", b"x" * (100 + 50 * (i % 6)), partition=i % 6)
    producer.flush()
    producer.close()
    yield handle
    handle._thread.stop()


def _kcoord(*args):
    return subprocess.run([sys.executable, "-m", "kcoord", "reassign", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def _placement(bootstrap: str) -> dict[tuple[str, int], list[int]]:
    with Admin(bootstrap) as admin:
        return {(t.name, p.partition_index): list(p.replica_nodes) for t in admin.metadata(["orders", "clicks"]).topics
                for p in t.partitions}


def test_a_plan_removing_a_broker_is_kafka_json_that_empties_it(cluster, tmp_path):
    before = _placement(cluster.bootstrap)
    out = tmp_path / "plan.json"
    planned = _kcoord("plan", "--bootstrap", cluster.bootstrap, "--remove-broker", "3", "--output", str(out))
    assert planned.returncode == 0, planned.stderr
    doc = json.loads(out.read_text())
    assert doc["version"] == 1 and doc["partitions"]
    racks = {0: "a", 1: "b", 2: "a", 3: "b"}
    for entry in doc["partitions"]:
        assert set(entry) == {"topic", "partition", "replicas", "log_dirs"}
        assert (entry["topic"], entry["partition"]) in before
        assert len(entry["replicas"]) == 2 and len(set(entry["replicas"])) == 2
        assert 3 not in entry["replicas"]
        assert {racks[b] for b in entry["replicas"]} == {"a", "b"}   # one replica per rack still
        assert entry["log_dirs"] == ["any", "any"]
    # Every partition broker 3 held is in the plan; nothing was changed on the cluster.
    assert {k for k, r in before.items() if 3 in r} <= {(e["topic"], e["partition"]) for e in doc["partitions"]}
    assert _placement(cluster.bootstrap) == before

    scored = _kcoord("score", "--bootstrap", cluster.bootstrap, "--remove-broker", "3", "--plan", str(out), "--json")
    assert scored.returncode == 0, scored.stderr
    s = json.loads(scored.stdout)
    assert s["rack_violations"] == 0 and s["replan_moves"] == 0
    assert s["partitions_moved"] == sum(1 for r in before.values() if 3 in r)
    assert s["bytes_moved"] > 0   # the moved "orders" partitions hold records


def test_scoring_the_cluster_as_it_is_moves_nothing(cluster):
    scored = _kcoord("score", "--bootstrap", cluster.bootstrap, "--json")
    assert scored.returncode == 0, scored.stderr
    s = json.loads(scored.stdout)
    assert (s["partitions_moved"], s["bytes_moved"], s["rack_violations"]) == (0, 0, 0)
    assert s["bytes_max"] > 0
    table = _kcoord("score", "--bootstrap", cluster.bootstrap, "--topics", "clicks")
    assert table.returncode == 0 and "worst leader spread, one broker down" in table.stdout


@pytest.mark.parametrize("args,line", [
    (("--add-broker", "9"), "kcoord reassign plan: --add-broker 9: no such broker (the cluster has 0, 1, 2, 3)\n"),
    (("--topics", "nope"), "kcoord reassign plan: --topics nope: no such topic\n"),
    (("--remove-broker", "0", "--remove-broker", "1", "--remove-broker", "2"),
     "kcoord reassign plan: clicks-0 has 2 replicas but only 1 of the brokers would hold replicas: 3\n"),
])
def test_bad_input_is_one_line_and_exit_1(cluster, args, line):
    refused = _kcoord("plan", "--bootstrap", cluster.bootstrap, *args)
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", line)


def test_an_unreachable_cluster_and_a_stale_plan_are_refused(cluster, tmp_path):
    gone = _kcoord("plan", "--bootstrap", "127.0.0.1:1")
    assert gone.returncode == 1 and gone.stderr.startswith("kcoord reassign plan: cannot reach --bootstrap 127.0.0.1:1")
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 99, "replicas": [0, 1], "log_dirs": ["any", "any"]}]}))
    refused = _kcoord("score", "--bootstrap", cluster.bootstrap, "--plan", str(stale))
    assert (refused.returncode, refused.stderr) == (
        1, "kcoord reassign score: the plan names partition orders-99, which the cluster does not have\n")
