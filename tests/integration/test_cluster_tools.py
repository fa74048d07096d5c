"""Kafka's own cluster tools against a three-broker kcoord and the three-node reference Kafka,
run the same way on both and their outputs compared: `kafka-leader-election` (ElectLeaders)
after a broker's restart left its partitions led elsewhere, `kafka-metadata-quorum`
(DescribeQuorum) on a quorum of three voters, and `kafka-reassign-partitions` (a plan naming an
unknown broker, one moving a partition's leader away, executed and verified until complete, a
cancel with nothing to cancel)."""
from __future__ import annotations

import json
import re
import time
import uuid

from kcoord.testing.failover import KafkaCluster, KcoordCluster, _leaders
from kcoord.testing.brokers import create_topic
from kcoord.testing.kafka_tools import ToolSession, run_tool


def _leader_of(cluster, topic: str) -> int:
    return _leaders(cluster.bootstrap, topic).get(0, -1)


def _election(cluster) -> list[str]:
    topic = f"le-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 1)
    preferred = _leader_of(cluster, topic)
    cluster.stop(preferred)              # its leadership moves to the next in-sync replica
    cluster.start(preferred)             # back as a follower: the partition is led elsewhere
    deadline = time.monotonic() + 30
    while _leader_of(cluster, topic) in (-1, preferred):
        assert time.monotonic() < deadline, "the partition never moved off its preferred leader"
        time.sleep(0.2)
    outputs = []
    for args in (["--election-type", "preferred", "--topic", topic, "--partition", "0"],
                 ["--election-type", "preferred", "--topic", topic, "--partition", "0"],
                 ["--election-type", "unclean", "--topic", topic, "--partition", "0"],
                 ["--election-type", "preferred", "--topic", topic, "--partition", "7"]):
        result = run_tool("leader-election", cluster.bootstrap, *args)
        outputs.append(f"exit {result.code}: " + (result.stdout + result.stderr).replace(topic, "TOPIC").strip())
    assert _leader_of(cluster, topic) == preferred
    return outputs


def _quorum(cluster) -> list[str]:
    result = run_tool("metadata-quorum", cluster.bootstrap, "describe", "--status")
    assert result.code == 0, result.stderr
    fields = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    voters = re.findall(r'"id": (\d+)', fields["CurrentVoters"])
    # Ids, epochs, offsets and ports differ between the clusters: the quorum's shape compares.
    return [f"keys {sorted(fields)}", f"voters {sorted(voters)}", f"observers {fields['CurrentObservers'].strip()}",
            f"leader is a voter {fields['LeaderId'].strip() in voters}"]


def test_leader_election_and_quorum_tools_answer_as_on_kafka(reference_kafka_cluster):
    kafka = KafkaCluster(reference_kafka_cluster)
    expected = (_election(kafka), _quorum(kafka))
    with KcoordCluster() as kcoord:
        assert (_election(kcoord), _quorum(kcoord)) == expected


def _reassignment(cluster, tmp_path) -> list[str]:
    topic = f"rp-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.bootstrap, topic, assignment=[[0, 1]], wait=False)
    plans = {}
    for name, replicas in (("unknown-broker", [1, 7]), ("move", [2, 1])):
        plans[name] = tmp_path / f"{cluster.kind}-{name}.json"
        plans[name].write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": replicas, "log_dirs": ["any", "any"]}]}))
    outputs = []
    with ToolSession() as tools:
        def run(plan: str, *args: str) -> str:
            result = tools.run("reassign-partitions", cluster.bootstrap, "--reassignment-json-file",
                               str(plans[plan]), *args)
            out = (result.stdout + result.stderr).replace(topic, "T").strip()
            # The log dirs are paths on Kafka, "(in memory)" on kcoord without a data dir.
            return f"exit {result.code}: " + re.sub(r'"log_dirs":\[[^\]]*\]', '"log_dirs":[...]', out)

        outputs.append(run("unknown-broker", "--execute"))
        outputs.append(run("move", "--execute"))
        deadline = time.monotonic() + 30
        while "is completed" not in (verified := run("move", "--verify")):
            assert time.monotonic() < deadline, verified
            time.sleep(0.5)
        outputs += [verified, run("move", "--cancel")]
    # Broker 0 led the partition and left it: the first in-sync replica of the target leads.
    outputs.append(f"leader {_leader_of(cluster, topic)}")
    return outputs


def test_reassign_partitions_answers_as_on_kafka(reference_kafka_cluster, tmp_path):
    expected = _reassignment(KafkaCluster(reference_kafka_cluster), tmp_path)
    with KcoordCluster() as kcoord:
        got = _reassignment(kcoord, tmp_path)
        assert got == expected, "\n".join(f"kcoord: {g}\nkafka:  {e}" for g, e in zip(got, expected) if g != e)
