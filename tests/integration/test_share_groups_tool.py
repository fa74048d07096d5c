"""Kafka's kafka-share-groups tool (org.apache.kafka.tools.consumer.group.ShareGroupCommand of Kafka
4.3.1) on a share group of KafkaShareConsumer 4.3.1 workers (kcoord.testing.share_workers), on kcoord
and on the reference Kafka: --list (--state), --describe with --members, --offsets and --state while
two workers run (waits poll DescribeShareGroupOffsets directly, the tool runs once the answer is
there; all its runs share one JVM, kafka_tools.ToolSession); after they
closed, --reset-offsets (AlterShareGroupOffsets), --delete-offsets
(DeleteShareGroupOffsets) and --delete. The outputs are parsed; what they must say is what the
workers did (who holds what, how many records are left). When both brokers ran in one process the
parsed outputs (no member ids: they differ) must be the same.

The start offset is not compared while records are being acknowledged: Kafka reports the start
offset its share coordinator last persisted, which may trail the acknowledgements (10 of 20 accepted
records in a run of 2026-11-26, with LAG 0); the lag is compared."""
from __future__ import annotations

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing import kafka_tools
from kcoord.testing.share_workers import ShareWorkers
from tests.integration.test_share_groups import EXPLICIT, produce, share_group
from tests.integration.test_streams_groups_tool import columns

pytestmark = pytest.mark.integration

SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"  # bin/kafka-share-groups.sh
SEEN: dict[str, dict] = {}  # broker -> the parsed outputs, ids masked


@pytest.mark.parametrize("broker_any", ["kcoord", "kafka"], indirect=True)
def test_share_groups_tool_lists_describes_resets_and_deletes(broker_any, request):
    # One JVM for all the tool's runs (a JVM start per run cost ~40 s of CPU per broker).
    with kafka_tools.ToolSession() as session:
        _lists_describes_resets_and_deletes(broker_any.bootstrap, session, request)


def _lists_describes_resets_and_deletes(bootstrap, session, request):
    topic, group = share_group(bootstrap, "tool")
    seen: dict = {}

    def tool(*args: str, code: int = 0) -> str:
        result = session.run(SHARE_GROUPS, bootstrap, *args)
        assert result.code == code, f"{args}: exit {result.code}\n{result.stdout}\n{result.stderr[-3000:]}"
        return result.stdout

    def offsets() -> dict[tuple[str, int], str]:
        return {(r["TOPIC"], int(r["PARTITION"])): r["LAG"] for r in columns(tool("--describe", "--group", group))}

    def lag() -> int:
        # What the tool's LAG column shows, asked without a JVM (DescribeShareGroupOffsets v1): the
        # waits poll this, and the tool is run once the answer is there.
        with Connection.to(bootstrap, 10.0) as conn:
            [g] = conn.call(90, 1, {"groups": [{"group_id": group, "topics": [
                {"topic_name": topic, "partitions": [0]}]}]}).groups
        return g.topics[0].partitions[0].lag if g.topics else -1

    def assigned_members() -> int:
        # Members holding a partition (ShareGroupDescribe, without a JVM): one worker may have
        # taken every record before the other's assignment reached it (the reference Kafka under
        # a full suite's load, 2026-11-27).
        with Connection.to(bootstrap, 10.0) as conn:
            [g] = conn.call(77, 1, {"group_ids": [group], "include_authorized_operations": False}).groups
        return sum(1 for m in g.members if any(tp.partitions for tp in m.assignment.topic_partitions))

    produce(bootstrap, topic, [f"v{i}" for i in range(20)])
    with ShareWorkers(bootstrap, group, topic, EXPLICIT) as workers:
        workers.add(2)
        workers.wait_for(lambda: len(workers.accepted()) >= 20, "every record accepted")
        workers.wait_for(lambda: lag() == 0, "no lag once every record is accepted")
        workers.wait_for(lambda: assigned_members() == 2, "both workers assigned the partition")
        assert offsets() == {(topic, 0): "0"}

        listed = {r["GROUP"]: r["STATE"] for r in columns(tool("--list", "--state"))}
        assert listed[group] == "Stable"
        seen["list state"] = listed[group]

        members = columns(tool("--describe", "--group", group, "--members", "--verbose"))
        assert sorted(m["CLIENT-ID"] for m in members) == ["w0", "w1"]
        assert {(m["#PARTITIONS"], m["ASSIGNMENT"]) for m in members} == {("1", f"{topic}:0")}  # both share it
        assert len({m["MEMBER-EPOCH"] for m in members}) == 1
        seen["members"] = sorted((m["CLIENT-ID"], m["#PARTITIONS"]) for m in members)

        (state,) = columns(tool("--describe", "--group", group, "--state", "--verbose"))
        assert (state["STATE"], state["#MEMBERS"]) == ("Stable", "2")
        assert state["GROUP-EPOCH"] == state["ASSIGNMENT-EPOCH"]
        seen["state"] = (state["STATE"], state["#MEMBERS"])

        (verbose,) = columns(tool("--describe", "--group", group, "--offsets", "--verbose"))
        assert (verbose["TOPIC"], verbose["PARTITION"], verbose["LAG"]) == (topic, "0", "0")
        assert 0 <= int(verbose["START-OFFSET"]) <= 20
        seen["offsets"] = sorted(k for k in verbose if k != "GROUP")

    assert {r["GROUP"]: r["STATE"] for r in columns(tool("--list", "--state"))}[group] == "Empty"
    produce(bootstrap, topic, [f"w{i}" for i in range(5)])
    assert offsets() == {(topic, 0): "5"}

    dry = columns(tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--dry-run"))
    assert [(r["TOPIC"], r["PARTITION"], r["NEW-OFFSET"]) for r in dry] == [(topic, "0", "0")]
    assert offsets() == {(topic, 0): "5"}
    reset = columns(tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"))
    assert [(r["TOPIC"], r["PARTITION"], r["NEW-OFFSET"]) for r in reset] == [(topic, "0", "0")]
    (after,) = columns(tool("--describe", "--group", group))
    assert (after["START-OFFSET"], after["LAG"]) == ("0", "25")
    seen["reset"] = (after["START-OFFSET"], after["LAG"])

    deleted = columns(tool("--delete-offsets", "--group", group, "--topic", topic), header="TOPIC ")
    assert [(r["TOPIC"], r["STATUS"]) for r in deleted] == [(topic, "Successful")]
    assert f"Share group '{group}' has no offset information." in tool("--describe", "--group", group)

    out = tool("--delete", "--group", group)
    assert f"Deletion of requested share groups ('{group}') was successful." in out
    assert group not in tool("--list").split()
    gone = session.run(SHARE_GROUPS, bootstrap, "--describe", "--group", group)
    assert "GroupIdNotFoundException" in gone.stdout + gone.stderr

    broker = request.node.callspec.params["broker_any"]
    SEEN[broker] = seen
    other = next((s for b, s in SEEN.items() if b != broker), None)
    if other is not None:
        assert seen == other
