"""A plan from `kcoord reassign plan` executed by Kafka's own `kafka-reassign-partitions` on a
three-broker kcoord: a topic's replicas are moved off one broker, `--execute` takes the plan as
it is (kcoord's record of what it was made against included), `--verify` sees it completed, the
cluster ends exactly as planned, and planning it again moves nothing. The same on the reference
Kafka is in test_reassign_apply.py."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

from kafka import KafkaProducer

from kcoord.protocol_client import Admin
from kcoord.testing.failover import KcoordCluster
from kcoord.testing.kafka_tools import ToolSession

ROOT = Path(__file__).resolve().parents[2]


def _kcoord(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcoord", "reassign", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def _placement(bootstrap: str, topic: str) -> dict[int, list[int]]:
    with Admin(bootstrap) as admin:
        [t] = admin.metadata([topic]).topics
        return {p.partition_index: list(p.replica_nodes) for p in t.partitions}


def _brokers(bootstrap: str) -> list[int]:
    with Admin(bootstrap) as admin:
        return sorted(b.node_id for b in admin.metadata([]).brokers)


def _planned_and_executed(cluster, tmp_path: Path) -> dict:
    topic = f"plan-exec-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 6, replication_factor=2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    for i in range(60):   # sizes for the planner to weigh (DescribeLogDirs)
        producer.send(topic, b"x" * (100 + 40 * (i % 6)), partition=i % 6)
    producer.flush()
    producer.close()
    victim = _brokers(cluster.bootstrap)[-1]
    before = _placement(cluster.bootstrap, topic)
    plan = tmp_path / f"{cluster.kind}.json"
    planned = _kcoord("plan", "--bootstrap", cluster.bootstrap, "--topics", topic, "--remove-broker", str(victim),
                      "--output", str(plan))
    assert planned.returncode == 0, planned.stderr
    wanted = {e["partition"]: e["replicas"] for e in json.loads(plan.read_text())["partitions"]}
    assert {p for p, r in before.items() if victim in r} <= set(wanted)

    with ToolSession() as tools:
        executed = tools.run("reassign-partitions", cluster.bootstrap, "--reassignment-json-file", str(plan),
                             "--execute")
        assert executed.code == 0 and "Successfully started partition reassignment" in executed.stdout, \
            executed.stdout + executed.stderr
        deadline = time.monotonic() + 60
        while True:
            verified = tools.run("reassign-partitions", cluster.bootstrap, "--reassignment-json-file", str(plan),
                                 "--verify")
            if "in progress" not in verified.stdout:
                break
            assert time.monotonic() < deadline, verified.stdout
            time.sleep(1)
    assert verified.code == 0, verified.stdout + verified.stderr
    assert verified.stdout.count("is completed") == len(wanted), verified.stdout

    after = _placement(cluster.bootstrap, topic)
    assert after == {p: wanted.get(p, r) for p, r in before.items()}
    assert all(victim not in r for r in after.values())
    again = _kcoord("plan", "--bootstrap", cluster.bootstrap, "--topics", topic, "--remove-broker", str(victim))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["partitions"] == []
    return {"moved": len(wanted), "replicas per broker": sorted(
        sum(b in r for r in after.values()) for b in _brokers(cluster.bootstrap) if b != victim)}


def test_a_kcoord_plan_runs_with_kafkas_own_tool_on_kcoord(tmp_path):
    with KcoordCluster() as kcoord:
        done = _planned_and_executed(kcoord, tmp_path)
    assert done["moved"] >= 4 and done["replicas per broker"] == [6, 6]
