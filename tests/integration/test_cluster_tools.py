"""Kafka's own cluster tools against a three-broker kcoord and the three-node reference Kafka,
run the same way on both and their outputs compared: `kafka-leader-election` (ElectLeaders)
after a broker's restart left its partitions led elsewhere, and `kafka-metadata-quorum`
(DescribeQuorum) on a quorum of three voters."""
from __future__ import annotations

import re
import time
import uuid

from kcoord.testing.failover import KafkaCluster, KcoordCluster, _leaders
from kcoord.testing.kafka_tools import run_tool


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
