"""`kcoord broker`, `kcoord partition` and `kcoord groups` on a three-broker kcoord, run as a
user runs them (a subprocess), checked against what the cluster then tells Kafka clients."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer

from kcoord.conformance.member import subscribe_kafka_python
from kcoord.protocol_client import Admin
from kcoord.testing import brokers as kb
from kcoord.testing.plugin import KcoordHandle, start_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster():
    handle = KcoordHandle(start_server(brokers=3, default_replication_factor=3, http_host="127.0.0.1"))
    yield handle
    handle._thread.stop()


def _kcoord(*args):
    return subprocess.run([sys.executable, "-m", "kcoord", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def _admin(handle) -> str:
    return handle.http_url.removeprefix("http://")


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> leader, as Metadata tells a client."""
    with Admin(bootstrap) as admin:
        [t] = admin.metadata([topic]).topics
    return {p.partition_index: p.leader_id for p in t.partitions}


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[1:]]


def test_broker_commands_stop_kill_start_and_list_what_the_endpoint_reports(cluster):
    admin = _admin(cluster)
    listed = _kcoord("broker", "list", "--admin", admin)
    assert listed.returncode == 0, listed.stderr
    assert [r[:5] for r in _rows(listed.stdout)] == [
        [str(b.node_id), b.bootstrap, "-", "running", "yes" if b.node_id == 0 else "-"] for b in cluster.brokers]
    stopped = _kcoord("broker", "stop", "0", "--admin", admin)
    assert (stopped.returncode, stopped.stdout) == (0, "broker 0: stopped, leads 0 partitions\n")
    assert not cluster.brokers[0].running and cluster.brokers[0].fenced
    again = _kcoord("broker", "stop", "0", "--admin", admin)
    assert (again.returncode, again.stderr) == (1, "kcoord broker: broker 0 is not running\n")
    killed = _kcoord("broker", "kill", "2", "--admin", admin)
    assert killed.returncode == 0 and killed.stdout.startswith("broker 2: down, not yet fenced")
    as_json = json.loads(_kcoord("broker", "list", "--json", "--admin", admin).stdout)
    assert [(b["id"], b["running"], b["fenced"], b["controller"]) for b in as_json] == \
        [(0, False, True, False), (1, True, False, True), (2, False, False, False)]
    for node_id in (0, 2):
        started = _kcoord("broker", "start", str(node_id), "--admin", admin)
        assert started.returncode == 0 and started.stdout.startswith(f"broker {node_id}: running")
    assert all(b.running for b in cluster.brokers)
    missing = _kcoord("broker", "kill", "5", "--admin", admin)
    assert (missing.returncode, missing.stderr) == (2, "kcoord broker: no broker 5 (brokers: 0, 1, 2)\n")


def test_partition_move_and_elect_as_clients_then_see_it(cluster):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    kb.create_topic(cluster.brokers[0].bootstrap, topic, 3, replication_factor=3, wait=False)
    preferred = _leaders(cluster.brokers[0].bootstrap, topic)
    target = (preferred[0] + 1) % 3
    moved = _kcoord("partition", "move", topic, "0", str(target), "--admin", _admin(cluster))
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith(f"{topic}-0: leader {target} (epoch 1)")
    assert _leaders(cluster.brokers[2].bootstrap, topic)[0] == target
    refused = _kcoord("partition", "move", topic, "7", "0", "--admin", _admin(cluster))
    assert (refused.returncode, refused.stderr) == (2, f"kcoord partition move: no partition {topic}-7\n")

    # ElectLeaders through any broker: only the moved partition needed it.
    elected = _kcoord("partition", "elect", topic, "--bootstrap", cluster.brokers[1].bootstrap)
    assert elected.returncode == 0, elected.stderr
    lines = elected.stdout.splitlines()
    assert lines[0] == f"{topic}-0: preferred leader elected"
    assert all(line.startswith(f"{topic}-{p}: ELECTION_NOT_NEEDED") for p, line in zip((1, 2), lines[1:]))
    assert _leaders(cluster.brokers[0].bootstrap, topic) == preferred
    none_needed = _kcoord("partition", "elect", "--bootstrap", cluster.bootstrap)
    assert (none_needed.returncode, none_needed.stdout) == (0, "no partition needed a preferred leader election\n")
    unknown = _kcoord("partition", "elect", f"{topic}:9", "--bootstrap", cluster.bootstrap)
    assert unknown.returncode == 1
    assert unknown.stdout == f"{topic}-9: UNKNOWN_TOPIC_OR_PARTITION (No such partition as {topic}-9)\n"
    # An unclean election finds no running replica of a partition whose only one stopped.
    single = f"single-{uuid.uuid4().hex[:6]}"
    kb.create_topic(cluster.brokers[0].bootstrap, single, 1, replication_factor=1, wait=False)
    owner = cluster.leader(single, 0)
    cluster.brokers[owner].stop()
    survivor = cluster.brokers[(owner + 1) % 3].bootstrap
    assert _leaders(survivor, single) == {0: -1}
    unclean = _kcoord("partition", "elect", "--unclean", f"{single}:0", "--bootstrap", survivor)
    assert (unclean.returncode, unclean.stdout) == (1, f"{single}-0: ELIGIBLE_LEADERS_NOT_AVAILABLE "
                                                       "(Eligible topic partition leaders are not available.)\n")


def _balance(bootstrap: str, topic: str) -> dict:
    run = _kcoord("partition", "balance", "--bootstrap", bootstrap, "--topic", topic, "--json")
    assert run.returncode == 0, run.stderr
    [found] = json.loads(run.stdout)["topics"]
    return found


def test_balance_predicts_the_leaders_after_each_stop_and_kcoord_keeps_them_balanced(cluster):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    kb.create_topic(cluster.brokers[0].bootstrap, topic, 12, replication_factor=3, wait=False)
    report = _balance(cluster.bootstrap, topic)
    assert report["now"] == {"leaders": {"0": 4, "1": 4, "2": 4}, "leaderless": 0, "max_minus_min": 0,
                             "balanced": True}
    assert all(s["balanced"] and s["leaderless"] == 0 for s in report["stopped"].values()), report
    for node_id in range(3):
        cluster.brokers[node_id].stop()
        survivor = cluster.brokers[(node_id + 1) % 3].bootstrap
        after = _balance(survivor, topic)["now"]["leaders"]
        assert after == report["stopped"][str(node_id)]["leaders"]
        cluster.brokers[node_id].start()
        cluster.elect_preferred()
    table = _kcoord("partition", "balance", "--bootstrap", cluster.bootstrap, "--topic", topic)
    assert _rows(table.stdout)[0] == [topic, "-", "0:4", "1:4", "2:4", "0", "0", "yes"]
    assert [r[1] for r in _rows(table.stdout)] == ["-", "0", "1", "2"]
    missing = _kcoord("partition", "balance", "--bootstrap", cluster.bootstrap, "--topic", "nope")
    assert (missing.returncode, missing.stderr) == \
        (2, f"kcoord partition balance: no topic nope on --bootstrap {cluster.bootstrap}\n")


def test_groups_name_each_coordinator_and_describe_reads_each_partitions_leader(cluster):
    topic = f"t-{uuid.uuid4().hex[:6]}"
    kb.create_topic(cluster.brokers[0].bootstrap, topic, 3, replication_factor=3, wait=False)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    for p in range(3):
        producer.send(topic, b"x", partition=p).get(30)
    producer.close()
    # Groups until two of them are coordinated by different brokers.
    consumers, coordinators = [], {}
    try:
        while len(set(coordinators.values())) < 2:
            group = f"g-{uuid.uuid4().hex[:6]}"
            consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group,
                                     auto_offset_reset="earliest", enable_auto_commit=False)
            consumers.append(consumer)
            subscribe_kafka_python(consumer, [topic])
            deadline, seen = time.monotonic() + 60, 0
            while seen < 3:
                assert time.monotonic() < deadline, f"{group} consumed {seen} of 3 records"
                seen += sum(len(v) for v in consumer.poll(timeout_ms=200).values())
            consumer.commit()
            coordinators[group] = cluster.coordinator_of(group)
        listed = _kcoord("groups", "--bootstrap", cluster.brokers[0].bootstrap)
        assert listed.returncode == 0, listed.stderr
        assert {r[0]: int(r[3]) for r in _rows(listed.stdout)} == coordinators
        group = next(iter(coordinators))
        described = _kcoord("groups", "--bootstrap", cluster.brokers[0].bootstrap, "--describe", group)
        assert described.returncode == 0, described.stderr
        assert described.stdout.startswith(f"group {group}: coordinator {coordinators[group]}, state Stable")
        # Every partition's log end offset, asked of its own leader (three brokers lead them).
        assert {(int(r[2]), r[3], r[4], r[5]) for r in _rows(described.stdout.split("\n", 1)[1])} == \
            {(p, "1", "1", "0") for p in range(3)}
        assert len(set(_leaders(cluster.bootstrap, topic).values())) == 3
        # A broker that cannot answer leaves its groups out: said on stderr, exit 1.
        down = coordinators[group]
        cluster.brokers[down].kill()
        partial = _kcoord("groups", "--bootstrap", cluster.brokers[(down + 1) % 3].bootstrap)
        assert partial.returncode == 1
        assert partial.stderr.startswith(f"kcoord groups: cannot list the groups of broker {down} ")
        assert {r[0] for r in _rows(partial.stdout)} == {g for g, c in coordinators.items() if c != down}
    finally:
        for consumer in consumers:
            consumer.close()


def test_balance_predicts_where_the_reference_kafka_moves_leadership_on_a_controlled_shutdown(
        reference_kafka_cluster):
    kafka = reference_kafka_cluster
    topic = f"balance-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 6, replication_factor=3)
    report = _balance(kafka.bootstrap, topic)
    led = [s.leader for s in kafka.metadata(topic).values()]
    assert report["now"]["leaders"] == {str(b): led.count(b) for b in range(3)}
    # Kafka's controller moves each partition the stopping node led to its first in-sync replica.
    stopping = max(range(3), key=led.count)
    kafka.stop(stopping)
    survivor = (stopping + 1) % 3
    deadline = time.monotonic() + 60
    while True:
        after = [s.leader for s in kafka.metadata(topic, via=survivor).values()]
        if stopping not in after and -1 not in after:
            break
        assert time.monotonic() < deadline, f"node {stopping}'s partitions did not move: {after}"
        time.sleep(0.2)
    assert report["stopped"][str(stopping)]["leaders"] == \
        {str(b): after.count(b) for b in range(3) if b != stopping}


def test_groups_reaches_a_broker_that_advertises_a_name_this_machine_cannot_resolve():
    # As from the host to compose.yaml's kcoord, advertised as kcoord:9092: the address on the
    # bootstrap connection's port is taken to be the bootstrap broker.
    handle = KcoordHandle(start_server(advertised_host="kcoord.invalid"))
    try:
        address = "127.0.0.1:%d" % handle.app.server.port
        listed = _kcoord("groups", "--bootstrap", address)
        assert listed.returncode == 0, listed.stderr
        described = _kcoord("groups", "--bootstrap", address, "--describe", "solo")   # FindCoordinator: kcoord.invalid
        assert described.returncode == 0 and described.stdout.startswith("group solo: coordinator 0,"), \
            described.stderr
    finally:
        handle._thread.stop()
