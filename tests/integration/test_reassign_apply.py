"""`kcoord reassign apply` against a four-broker kcoord, run as a user runs it (a subprocess):
a plan from `kcoord reassign plan` carried out in batches leaves the cluster exactly as planned
and no throttle behind; an apply interrupted (Ctrl-C, then kill -9) mid-batch resumes and
finishes without submitting anything twice; on a terminal it draws a progress bar; a stale
plan, an unknown broker and other bad input are one line, exit 1, and nothing changes; a
batch that outlives --timeout stops the apply, not its moves."""
from __future__ import annotations

import errno
import json
import logging
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic
from kcoord.testing.failover import KcoordCluster

ROOT = Path(__file__).resolve().parents[2]
BROKER, TOPIC = 4, 2
DEFAULT_CONFIG = 5   # DescribeConfigs' ConfigSource
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@pytest.fixture
def cluster():
    with KcoordCluster(size=4) as c:
        yield c


def _topic(cluster, assignment: list[list[int]], filled: dict[int, int]) -> str:
    """A new topic with `assignment`, `filled[p]` records of 200 bytes in partition p."""
    topic = f"a-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.bootstrap, topic, assignment=assignment, wait=False)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for p, n in filled.items():
        for _ in range(n):
            producer.send(topic, value=b"v" * 200, partition=p)
    producer.close()
    return topic


def _kcoord(*args, **popen):
    return subprocess.run([sys.executable, "-m", "kcoord", "reassign", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, **popen)


def _apply(*args, stderr) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kcoord", "reassign", "apply", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=stderr, text=True)


def _plan(cluster, tmp_path, topic: str, *args) -> tuple[Path, dict]:
    out = tmp_path / "plan.json"
    planned = _kcoord("plan", "--bootstrap", cluster.bootstrap, "--topics", topic, "--output", str(out), *args)
    assert planned.returncode == 0, planned.stderr
    return out, json.loads(out.read_text())


def _targets(doc: dict) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in doc["partitions"]}


def _placement(cluster, topic: str) -> dict[tuple[str, int], list[int]]:
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return {(t.name, p.partition_index): list(p.replica_nodes) for t in answer.topics for p in t.partitions}


def _reassigning(cluster) -> dict[tuple[str, int], list[int]]:
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(46, 0, {"timeout_ms": 30000, "topics": None})
    return {(t.name, p.partition_index): list(p.replicas) for t in answer.topics for p in t.partitions}


def _configs(cluster, resource_type: int, name: str, keys) -> dict[str, str]:
    """The configs among `keys` set on the resource (not defaults), as DescribeConfigs says."""
    node = cluster.app.cluster.node(int(name)) if resource_type == BROKER else None
    address = "%s:%d" % node.advertised if node else cluster.bootstrap
    with Connection.to(address) as conn:
        answer = conn.call(32, 4, {"resources": [{"resource_type": resource_type, "resource_name": name,
                                                  "configuration_keys": list(keys)}],
                                   "include_synonyms": False, "include_documentation": False})
    return {c.name: c.value for c in answer.results[0].configs if c.config_source != DEFAULT_CONFIG}


def _throttles(cluster, topic: str) -> dict:
    return {**{b: _configs(cluster, BROKER, str(b), RATES) for b in range(4)},
            topic: _configs(cluster, TOPIC, topic, REPLICAS)}


NO_THROTTLES = {0: {}, 1: {}, 2: {}, 3: {}}


def _wait(condition, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_plan_applied_in_batches_leaves_the_cluster_as_planned_and_no_throttle(cluster, tmp_path):
    topic = _topic(cluster, [[3, 0], [1, 3], [2, 3], [3, 1], [0, 1], [1, 2]], {p: 20 for p in range(6)})
    plan, doc = _plan(cluster, tmp_path, topic, "--remove-broker", "3")
    targets, before = _targets(doc), _placement(cluster, topic)
    # The plan records what it was made against, for the partitions it moves.
    assert {(e["topic"], e["partition"]): e["replicas"] for e in doc["kcoord"]["made_against"]} == \
        {k: before[k] for k in targets}
    assert len(targets) >= 4 and all(3 not in r for r in targets.values())

    done = _kcoord("apply", "--bootstrap", cluster.bootstrap, "--plan", str(plan), "--batch", "2",
                   "--throttle", "100000000")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    batches = (len(targets) + 1) // 2
    assert re.fullmatch(rf"applying {len(targets)} of {len(targets)} partitions: {batches} batches left, "
                        rf"[0-9.]+ KiB to copy, throttle 100000000 B/s on brokers 0,1,2,3", lines[0]), lines
    keys = sorted(targets)   # the plan's order: kcoord writes it sorted
    for i, line in enumerate(lines[1:], start=1):
        names = " ".join(f"{t}-{p}" for t, p in keys[2 * i - 2:2 * i])
        assert re.fullmatch(rf"batch {i}/{batches} done: {names}; {min(2 * i, len(keys))}/{len(keys)} partitions, "
                            rf"[0-9.]+ KiB of [0-9.]+ KiB copied", line), line
    assert len(lines) == 1 + batches
    assert re.fullmatch(rf"reassignment complete: {len(targets)} partitions on their targets \({len(targets)} moved "
                        rf"by this apply in {batches} batches, [0-9.]+ KiB copied\); throttles cleared on brokers "
                        rf"0,1,2,3 and topics {topic}\n", done.stdout), done.stdout

    assert _placement(cluster, topic) == {**before, **targets} and _reassigning(cluster) == {}
    assert _throttles(cluster, topic) == {**NO_THROTTLES, topic: {}}
    state = json.loads((tmp_path / "plan.state.json").read_text())
    assert [b["done"] for b in state["batches"]] == [True] * batches
    assert [tuple(k) for b in state["batches"] for k in b["partitions"]] == keys

    again = _kcoord("apply", "--bootstrap", cluster.bootstrap, "--plan", str(plan))
    assert again.returncode == 0, again.stderr
    assert again.stderr == f"nothing to move: every partition of the plan ({len(targets)}) is on its target\n"
    assert f"({0} moved by this apply in 0 batches, 0 B copied)" in again.stdout


def _state(path: Path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def test_an_interrupted_apply_resumes_where_it_stopped_and_submits_nothing_twice(cluster, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kcoord.cluster")
    # Broker 3 leaves: partitions 0 and 1 are empty (their batch copies nothing, even at 1 B/s),
    # 2 and 3 hold 4 KiB each, which the 1 B/s throttle holds back until it is raised.
    topic = _topic(cluster, [[3, 0], [1, 3], [3, 2], [0, 3]], {2: 20, 3: 20})
    plan, doc = _plan(cluster, tmp_path, topic, "--remove-broker", "3")
    targets, base = _targets(doc), _placement(cluster, topic)
    assert sorted(targets) == [(topic, p) for p in range(4)]
    state_path = tmp_path / "plan.state.json"
    args = ("--bootstrap", cluster.bootstrap, "--plan", str(plan), "--batch", "2")

    first = _apply(*args, "--throttle", "1", stderr=subprocess.PIPE)
    _wait(lambda: (_state(state_path) or {}).get("batches", [{}])[-1:] ==
          [{"partitions": [[topic, 2], [topic, 3]], "done": False}]
          and set(_reassigning(cluster)) == {(topic, 2), (topic, 3)}, "the second batch never began")
    # Kafka's throttles, as --execute --throttle sets them: the moving replicas of each partition.
    assert _throttles(cluster, topic) == {
        **{b: dict.fromkeys(RATES, "1") for b in range(4)},
        topic: {REPLICAS[0]: ",".join(sorted(f"{p}:{b}" for (_, p), rs in base.items() for b in rs)),
                REPLICAS[1]: ",".join(sorted(f"{p}:{b}" for (_, p), rs in targets.items()
                                             for b in rs if b not in base[(topic, p)]))}}
    first.send_signal(signal.SIGINT)   # Ctrl-C
    out, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    assert err.splitlines()[-1] == ("kcoord reassign apply: interrupted in batch 2/2: its reassignments go on in "
                                    f"the cluster; run the same command again to resume (state: {state_path})")
    assert out == ""
    recorded = _state(state_path)
    assert recorded["batches"] == [{"partitions": [[topic, 0], [topic, 1]], "done": True},
                                   {"partitions": [[topic, 2], [topic, 3]], "done": False}]

    # kill -9 while it waits: the state file is as it was.
    log = tmp_path / "second.err"
    with open(log, "w") as second_err:
        second = _apply(*args, "--throttle", "1", stderr=second_err)
        _wait(lambda: log.read_text().startswith("resuming:"), "the second apply never resumed")
        second.kill()
        second.wait(timeout=60)
    assert _state(state_path) == recorded and set(_reassigning(cluster)) == {(topic, 2), (topic, 3)}

    third = _apply(*args, "--throttle", "100000000", stderr=subprocess.PIPE)
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0, err
    lines = err.splitlines()
    assert re.fullmatch(r"resuming: 2 of 4 partitions on their targets, 1 batch done before, 2 under way; "
                        r"1 batch left, [0-9.]+ KiB to copy, throttle 100000000 B/s on brokers [0-9,]+",
                        lines[0]), lines
    assert re.fullmatch(rf"batch 2/2 done: {topic}-2 {topic}-3; 4/4 partitions, [0-9.]+ KiB of [0-9.]+ KiB copied",
                        lines[1]), lines
    assert len(lines) == 2 and "(2 moved by this apply in 1 batch," in out
    assert _placement(cluster, topic) == targets and _reassigning(cluster) == {}
    assert _throttles(cluster, topic) == {**NO_THROTTLES, topic: {}}
    assert [b["done"] for b in _state(state_path)["batches"]] == [True, True]
    # The server reassigned each partition once: the resumed applies waited, they did not resubmit.
    submitted = [m for m in caplog.messages if m.startswith(f"partition {topic}-") and ": reassigning " in m]
    assert sorted(m.split(":")[0] for m in submitted) == [f"partition {topic}-{p}" for p in range(4)]


def _read_pty(fd: int, process: subprocess.Popen) -> str:
    """All a child wrote to the terminal `fd` until it closed it."""
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, "the apply went quiet"
        try:
            chunk = os.read(fd, 4096)
        except OSError as err:   # Linux: EIO once the child's side is closed
            if err.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    return b"".join(chunks).decode()


def test_on_a_terminal_progress_is_a_bar(cluster, tmp_path):
    topic = _topic(cluster, [[3, 0], [3, 1]], {0: 20, 1: 20})
    plan, doc = _plan(cluster, tmp_path, topic, "--remove-broker", "3")
    master, slave = pty.openpty()
    try:
        # 4 KiB per partition at 4 KiB/s: polled (every 0.5 s) while it copies.
        process = _apply("--bootstrap", cluster.bootstrap, "--plan", str(plan), "--throttle", "4096",
                         stderr=slave)
        os.close(slave)
        text = _read_pty(master, process)
    finally:
        os.close(master)
    assert process.returncode == 0, text
    assert re.search(r"\r\x1b\[K\[[#.]{30}\] 0/2 partitions  [0-9.]+ (B|KiB) of [0-9.]+ KiB  batch 1/1", text), text
    assert re.search(rf"\r\x1b\[Kbatch 1/1 done: {topic}-0 {topic}-1; 2/2 partitions", text), text
    assert _placement(cluster, topic) == _targets(doc)


def test_a_stale_plan_is_refused_and_nothing_moves(cluster, tmp_path):
    topic = _topic(cluster, [[3, 0], [3, 1], [1, 2]], {})
    plan, doc = _plan(cluster, tmp_path, topic, "--remove-broker", "3")
    targets = _targets(doc)
    # Someone moves partition 0 elsewhere after the plan was made (AlterPartitionReassignments).
    moved = [b for b in (2, 1, 0) if b not in targets[(topic, 0)]][:1] + [3]
    with Connection.to(cluster.bootstrap) as conn:
        answer = conn.call(45, 0, {"timeout_ms": 30000, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "replicas": moved}]}]})
    assert answer.responses[0].partitions[0].error_code == 0
    _wait(lambda: not _reassigning(cluster), "the outside reassignment never finished")
    before = _placement(cluster, topic)

    refused = _kcoord("apply", "--bootstrap", cluster.bootstrap, "--plan", str(plan), "--throttle", "1000")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (f"kcoord reassign apply: {topic}-0 is on {moved}, not on [3, 0] as when the plan "
                              f"was made, nor on its target {targets[(topic, 0)]}: the cluster changed since; "
                              "plan again\n")
    assert _placement(cluster, topic) == before and _reassigning(cluster) == {}
    assert _throttles(cluster, topic) == {**NO_THROTTLES, topic: {}}
    assert not (tmp_path / "plan.state.json").exists()


def test_a_batch_that_outlives_the_timeout_stops_the_apply_and_its_moves_go_on(cluster, tmp_path):
    topic = _topic(cluster, [[3, 0]], {0: 20})
    plan, _ = _plan(cluster, tmp_path, topic, "--remove-broker", "3", "--add-broker", "1")
    stopped = _kcoord("apply", "--bootstrap", cluster.bootstrap, "--plan", str(plan), "--throttle", "1",
                      "--timeout", "1")
    assert (stopped.returncode, stopped.stdout) == (1, "")
    assert stopped.stderr.splitlines()[-1] == (
        f"kcoord reassign apply: batch 1/1 did not finish within --timeout 1 s ({topic}-0 still moving); its "
        "reassignments go on: run the same command again to wait for them")
    assert set(_reassigning(cluster)) == {(topic, 0)}
    assert _state(tmp_path / "plan.state.json")["batches"] == [{"partitions": [[topic, 0]], "done": False}]


def test_bad_input_is_one_line_exit_1_and_changes_nothing(cluster, tmp_path):
    topic = _topic(cluster, [[0, 1], [1, 2]], {})
    before = _placement(cluster, topic)
    kafka_json = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 3],
                                                "log_dirs": ["any", "any"]}]}

    def write(name: str, content) -> str:
        path = tmp_path / name
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return str(path)

    unknown = write("unknown.json", {"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 9], "log_dirs": ["any", "any"]}],
        "kcoord": {"made_against": [{"topic": topic, "partition": 0, "replicas": [0, 1]}]}})
    gone = write("gone.json", {"version": 1, "partitions": [{"topic": "nope", "partition": 0, "replicas": [0]}],
                               "kcoord": {"made_against": [{"topic": "nope", "partition": 0, "replicas": [1]}]}})
    generated = write("generated.json", kafka_json)
    other_state = write("other.state.json", {"version": 1, "plan": "0" * 64, "batches": []})
    cases = [
        (("--plan", unknown), f"the plan puts {topic}-0 on broker 9, which the cluster does not have"),
        (("--plan", gone), "the plan names partition nope-0, which the cluster does not have"),
        (("--plan", generated), "the plan has no record of the replicas it was made against (kcoord reassign plan "
                                "writes one); --no-base-check applies it to the cluster as it is"),
        (("--plan", write("bad.json", "{\"version\": 1}")),
         "not Kafka's reassignment JSON ({\"version\":1,\"partitions\":[...]}): 'partitions'"),
        (("--plan", str(tmp_path / "missing.json")), f"--plan {tmp_path / 'missing.json'}: No such file or directory"),
        (("--plan", generated, "--no-base-check", "--state", other_state),
         f"--state {other_state} records the apply of another plan: remove it, or name another --state"),
    ]
    for args, line in cases:
        refused = _kcoord("apply", "--bootstrap", cluster.bootstrap, "--throttle", "1000", *args)
        assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", f"kcoord reassign apply: {line}\n"), args
    gone_cluster = _kcoord("apply", "--bootstrap", "127.0.0.1:1", "--plan", generated)
    assert gone_cluster.returncode == 1
    assert gone_cluster.stderr.startswith("kcoord reassign apply: cannot reach --bootstrap 127.0.0.1:1")
    assert _placement(cluster, topic) == before and _reassigning(cluster) == {}
    assert _throttles(cluster, topic) == {**NO_THROTTLES, topic: {}}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bad.json", "generated.json", "gone.json", "other.state.json", "unknown.json"]

    # A plan from Kafka's --generate, with the check off, is applied to the cluster as it is.
    applied = _kcoord("apply", "--bootstrap", cluster.bootstrap, "--plan", generated, "--no-base-check")
    assert applied.returncode == 0, applied.stderr
    assert _placement(cluster, topic) == {**before, (topic, 0): [2, 3]}


def test_a_kcoord_plan_applies_on_kafka_and_kafkas_tool_executes_one(reference_kafka_cluster, tmp_path):
    """Any Kafka cluster: on the three-node reference Kafka, `apply` carries out a plan
    (throttled, then the throttles cleared), and Kafka's own `kafka-reassign-partitions
    --execute` takes a plan with kcoord's record of what it was made against."""
    from kcoord.testing.kafka_tools import ToolSession

    kafka = reference_kafka_cluster
    topic = f"ra-{uuid.uuid4().hex[:6]}"
    create_topic(kafka.bootstrap, topic, assignment=[[2, 0], [0, 2], [2, 1], [1, 2]], wait=False)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all")
    for i in range(80):
        producer.send(topic, value=b"v" * 200, partition=i % 4)
    producer.close()

    def placement():
        with Connection.to(kafka.bootstrap) as conn:
            answer = conn.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        return {(t.name, p.partition_index): list(p.replica_nodes) for t in answer.topics for p in t.partitions}

    def throttles():
        out = {}
        for node in range(3):
            with Connection.to(kafka.node(node).bootstrap) as conn:
                answer = conn.call(32, 4, {"resources": [
                    {"resource_type": BROKER, "resource_name": str(node), "configuration_keys": list(RATES)},
                    {"resource_type": TOPIC, "resource_name": topic, "configuration_keys": list(REPLICAS)}],
                    "include_synonyms": False, "include_documentation": False})
            out[node] = [{c.name: c.value for c in r.configs if c.config_source != DEFAULT_CONFIG}
                         for r in answer.results]
        return out

    out = tmp_path / "off-2.json"
    planned = _kcoord("plan", "--bootstrap", kafka.bootstrap, "--topics", topic, "--remove-broker", "2",
                      "--output", str(out))
    assert planned.returncode == 0, planned.stderr
    targets = _targets(json.loads(out.read_text()))
    assert sorted(targets) == [(topic, p) for p in range(4)]
    applied = _kcoord("apply", "--bootstrap", kafka.bootstrap, "--plan", str(out), "--batch", "3",
                      "--throttle", "10000000")
    assert applied.returncode == 0, applied.stderr
    assert [line.split(":")[0] for line in applied.stderr.splitlines()] == ["applying 4 of 4 partitions",
                                                                           "batch 1/2 done", "batch 2/2 done"]
    assert placement() == targets
    assert throttles() == {node: [{}, {}] for node in range(3)}

    back = tmp_path / "onto-2.json"
    planned = _kcoord("plan", "--bootstrap", kafka.bootstrap, "--topics", topic, "--add-broker", "2",
                      "--output", str(back))
    assert planned.returncode == 0, planned.stderr
    doc = json.loads(back.read_text())
    assert doc["partitions"] and doc["kcoord"]["made_against"]
    with ToolSession() as tools:
        executed = tools.run("reassign-partitions", kafka.bootstrap, "--reassignment-json-file", str(back),
                             "--execute")
        assert executed.code == 0 and "Successfully started partition reassignment" in executed.stdout, \
            executed.stdout + executed.stderr

        def complete() -> bool:
            verified = tools.run("reassign-partitions", kafka.bootstrap, "--reassignment-json-file", str(back),
                                 "--verify").stdout
            return "is completed" in verified and "in progress" not in verified

        _wait(complete, "Kafka's reassignment never completed")
    assert placement() == {**targets, **_targets(doc)}
