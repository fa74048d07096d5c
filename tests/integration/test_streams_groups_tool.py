"""Kafka's kafka-streams-groups tool (org.apache.kafka.tools.streams.StreamsGroupCommand of Kafka 4.3.1)
on a streams group of real Kafka Streams 4.3.1 instances (kcoord.testing.streams_app.StreamsApp), on
kcoord and on the reference Kafka: --list (--state), --describe with --members, --offsets and
--state while two instances run; after they closed, --reset-offsets --to-earliest --execute
--delete-all-internal-topics and --delete. The outputs are parsed; what they must say
is what the instances themselves report (their tasks) and what the group's committed offsets are.
When both brokers ran in one process the parsed outputs, ids masked, must be the same."""
from __future__ import annotations

import re
import time
import uuid

import pytest

from kcoord.testing import kafka_tools
from kcoord.testing.brokers import create_topic, end_offsets
from kcoord.testing.streams_app import StreamsApp, task_ids
from tests.integration.test_streams_groups import BROKERS, SOURCE, STREAMS_APP_CONFIG, Counts, assert_exact_counts

pytestmark = pytest.mark.integration

STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"  # bin/kafka-streams-groups.sh
PARTITIONS = 3
SEEN: dict[str, dict] = {}  # broker -> the parsed outputs, ids masked


def columns(text: str, header: str = "GROUP ") -> list[dict[str, str]]:
    """The rows of the tool's aligned tables, by the header's column starts (a cell may hold
    spaces: "127.0.0.1:9092 (1)", "ACTIVE: 0:[1]; 1:[0,2];"); lines before a header, blank
    lines and "Error:" lines are skipped. `header`: how the header line starts."""
    rows, starts, names = [], None, None
    for line in text.splitlines():
        if not line.strip() or line.startswith("Error:"):
            continue
        if line.startswith(header):
            found = list(re.finditer(r"\S+(?: \(\S+\))?", line))   # "COORDINATOR (ID)" is one name
            starts, names = [m.start() for m in found], [m.group() for m in found]
            continue
        if starts is None:
            continue
        bounds = [*starts[1:], None]
        rows.append({name: line[a:b].strip() for name, a, b in zip(names, starts, bounds)})
    return rows


def parse_assignments(cell: str) -> dict[str, set[str]]:
    """"ACTIVE: 0:[1]; 1:[0,2]; STANDBY: ..." -> {"ACTIVE": {"0_1", "1_0", "1_2"}, ...}."""
    kinds: dict[str, set[str]] = {}
    for kind, body in re.findall(r"([A-Z-]+):((?:\s*\d+:\[[\d,]*\];)*)", cell):
        kinds[kind] = {f"{s}_{p}" for s, parts in re.findall(r"(\d+):\[([\d,]*)\]", body)
                       for p in parts.split(",") if p}
    return kinds


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """partition -> the group's committed offset (OffsetFetch through confluent-kafka's admin)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(PARTITIONS)])
    answer = admin.list_consumer_group_offsets([request])[group].result(30)
    return {tp.partition: tp.offset for tp in answer.topic_partitions}


def topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)


@pytest.mark.parametrize("broker_any", BROKERS, indirect=True)
def test_streams_groups_tool_lists_describes_resets_and_deletes(broker_any, tmp_path, request):
    bootstrap, tag = broker_any.bootstrap, uuid.uuid4().hex[:6]
    source, sink, group = f"tool-in-{tag}", f"tool-out-{tag}", f"tool-app-{tag}"
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    internal = {f"{group}-by-value-repartition", f"{group}-counts-changelog"}
    seen: dict = {}

    def tool(*args: str, code: int = 0) -> str:
        result = kafka_tools.run_tool(STREAMS_GROUPS, bootstrap, *args)
        assert result.code == code, f"{args}: exit {result.code}\n{result.stdout}\n{result.stderr[-3000:]}"
        return result.stdout

    app = StreamsApp(SOURCE, bootstrap, group, source, sink, tasks=task_ids(PARTITIONS), config=STREAMS_APP_CONFIG,
                     home=tmp_path)
    counts = Counts(bootstrap, source)
    with app:
        app.add(2)
        app.wait_stable("start 2")
        counts.produce(120)
        assert_exact_counts(bootstrap, sink, counts)

        assert group in tool("--list").split()
        listed = {r["GROUP"]: r["STATE"] for r in columns(tool("--list", "--state"))}
        assert listed[group] == "Stable"
        seen["list state"] = listed[group]

        members = columns(tool("--describe", "--group", group, "--members"))
        assert len(members) == 2 and len({m["MEMBER"] for m in members}) == 2
        assert len({m["PROCESS"] for m in members}) == 2
        described = sorted(sorted(parse_assignments(m["ASSIGNMENTS"])["ACTIVE"]) for m in members)
        assert described == sorted(sorted(tasks) for tasks in app.active().values())
        seen["members"] = sorted(len(tasks) for tasks in described)

        verbose = columns(tool("--describe", "--group", group, "--members", "--verbose"))
        assert {m["MEMBER-PROTOCOL"] for m in verbose} == {"streams"}
        for member in verbose:  # a stable group: every member at the target epoch, holding its target
            assignments = parse_assignments(member["ASSIGNMENTS"])
            assert assignments["ACTIVE"] == assignments["TARGET-ACTIVE"]
            assert member["MEMBER-EPOCH"] == member["TARGET-ASSIGNMENT-EPOCH"]

        for offsets in (tool("--describe", "--group", group), tool("--describe", "--group", group, "--offsets")):
            lags = {(r["TOPIC"], int(r["PARTITION"])): r["OFFSET-LAG"] for r in columns(offsets)}
            everything = {(t, p) for t in (source, f"{group}-by-value-repartition") for p in range(PARTITIONS)}
            assert lags == {tp: "0" for tp in everything}  # all processed and committed
        seen["offsets"] = sorted((t.replace(tag, "*"), p) for t, p in lags)

        (state,) = columns(tool("--describe", "--group", group, "--state"))
        assert (state["STATE"], state["#MEMBERS"]) == ("Stable", "2")
        seen["state"] = (state["STATE"], state["#MEMBERS"])

        for instance in app.live():
            app.stop(instance)

    assert {r["GROUP"]: r["STATE"] for r in columns(tool("--list", "--state"))}[group] == "Empty"
    empty = tool("--describe", "--group", group, "--state")
    assert f"Streams group '{group}' has no active members." in empty
    assert [(r["STATE"], r["#MEMBERS"]) for r in columns(empty)] == [("Empty", "0")]

    assert committed(bootstrap, group, source) == end_offsets(bootstrap, source)
    assert internal <= topics(bootstrap)
    reset = columns(tool("--reset-offsets", "--group", group, "--all-input-topics", "--to-earliest", "--execute",
                         "--delete-all-internal-topics"))
    assert sorted((r["TOPIC"], int(r["PARTITION"]), r["NEW-OFFSET"]) for r in reset) == \
        [(source, p, "0") for p in range(PARTITIONS)]
    assert committed(bootstrap, group, source) == {p: 0 for p in range(PARTITIONS)}
    # The internal topics the group's topology names (StreamsGroupDescribe) are deleted too: only
    # with --delete-all-internal-topics, whatever --reset-offsets' help says of --execute alone.
    deadline = time.monotonic() + 60
    while internal & topics(bootstrap) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not internal & topics(bootstrap)
    seen["reset"] = sorted((t.replace(tag, "*"), p, o) for t, p, o in
                           ((r["TOPIC"], int(r["PARTITION"]), r["NEW-OFFSET"]) for r in reset))

    deleted = tool("--delete", "--group", group)
    assert f"Deletion of requested streams groups ('{group}') was successful." in deleted
    assert group not in tool("--list").split()
    gone = kafka_tools.run_tool(STREAMS_GROUPS, bootstrap, "--describe", "--group", group)
    assert gone.code == 1 and "GroupIdNotFoundException" in gone.stdout + gone.stderr

    broker = request.node.callspec.params["broker_any"]
    SEEN[broker] = seen
    other = next((s for b, s in SEEN.items() if b != broker), None)
    if other is not None:
        assert seen == other
