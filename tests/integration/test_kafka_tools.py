"""Apache Kafka's own CLI tools (kafka-consumer-groups, kafka-topics, kafka-console-consumer)
run against kcoord and against the reference Kafka: the same state is set up on both with
Python clients, every command runs on both, and the outputs, normalised
(kcoord.testing.kafka_tools.normalise), must be equal and say the expected thing.

One ToolSession (one JVM) runs every command of the module. kcoord runs with node id 1,
the reference Kafka's node.id, so coordinator and leader ids match without normalising.
The differences that remain are listed in docs/deviations.md and asserted here exactly.

KCOORD_TOOLS_REPORT=FILE writes each command's outcome and wall time on both brokers as
JSON lines (the table in docs/conformance.md, "Kafka's CLI tools").
"""
from __future__ import annotations

import json
import os
import re
import threading
import uuid

import pytest

from kcoord.testing.brokers import create_topic, wait_group, wait_subscription
from kcoord.testing.kafka_tools import ToolResult, ToolSession, normalise, run_tool, table
from kcoord.testing.reference_kafka import ReferenceKafkaUnavailable

pytestmark = pytest.mark.kcoord(node_id=1)

_REPORT: list[dict] = []


@pytest.fixture(scope="module")
def tools():
    with ToolSession() as session:
        yield session
    path = os.environ.get("KCOORD_TOOLS_REPORT")
    if path:
        with open(path, "a") as f:
            for row in _REPORT:
                f.write(json.dumps(row) + "\n")


@pytest.fixture
def both(kcoord_server, reference_kafka):
    return kcoord_server.bootstrap, reference_kafka.bootstrap


def _names(stem: str) -> tuple[str, str]:
    # The reference Kafka lives for the whole session: names are unique, and the same on both.
    suffix = uuid.uuid4().hex[:8]
    return f"{stem}-{suffix}", f"{stem}-group-{suffix}"


def _run(tools, both, tool, *args, expect_code=0, kafka_differs=None, only=None,
         also=None) -> tuple[ToolResult, ToolResult]:
    """The command on kcoord and on Kafka; the normalised outputs must be equal, or differ
    exactly as `kafka_differs` (a function from kcoord's normalised text to Kafka's) says.
    A listing is compared on the lines of the names in `only` (the shared Kafka holds other
    tests' groups and topics), in any order: both brokers list in hash order. `also`
    normalises both stdouts further, after `normalise`."""
    k, ref = (tools.run(tool, b, *args) for b in both)
    out = [normalise(r.stdout) for r in (k, ref)]
    if also is not None:
        out = [also(text) for text in out]
    if only is not None:
        out = ["\n".join(sorted(line for line in text.splitlines() if line.split()[0] in {*only, "GROUP", "TOPIC"}))
               for text in out]
    err = [normalise(r.stderr) for r in (k, ref)]
    expected_ref = kafka_differs(out[0]) if kafka_differs else out[0]
    _REPORT.append({"command": f"kafka-{tool} " + " ".join(args), "kcoord_code": k.code, "kafka_code": ref.code,
                    "same": out[0] == out[1] and err[0] == err[1], "known_difference": kafka_differs is not None,
                    "kcoord_s": round(k.seconds, 2), "kafka_s": round(ref.seconds, 2)})
    assert (k.code, ref.code) == (expect_code, expect_code), (k, ref)
    assert out[1] == expected_ref, f"kcoord:\n{out[0]}\nkafka:\n{out[1]}"
    assert err[0] == err[1], f"kcoord:\n{err[0]}\nkafka:\n{err[1]}"
    return k, ref


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(partitions * per_partition):
        p.send(topic, partition=i % partitions, key=b"k%d" % i, value=b"v%d" % i)
    p.flush()
    p.close()


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    c.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
    c.close()


def _setup(both, topic: str, group: str, partitions: int = 3, per_partition: int = 10,
           offsets: dict[int, int] | None = None) -> None:
    for b in both:
        create_topic(b, topic, partitions)
        _produce(b, topic, partitions, per_partition)
        if offsets:
            _commit(b, group, {(topic, p): o for p, o in offsets.items()})


class LiveMember:
    """A librdkafka consumer subscribed to `topic` in `group`, polling on a thread, on each broker."""

    def __init__(self, both, topic: str, group: str):
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._poll, args=(b, topic, group), daemon=True) for b in both]
        for t in self.threads:
            t.start()
        for b in both:
            wait_group(b, group, state="Stable", members=1, timeout=60)

    def _poll(self, bootstrap: str, topic: str, group: str) -> None:
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "tools-live",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        c.subscribe([topic])
        try:
            while not self.stop.is_set():
                c.poll(0.2)
        finally:
            c.close()

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


def _ours(text: str, *names: str) -> list[str]:
    """The lines of a listing that name this test's groups or topics (Kafka's holds other tests')."""
    return [line for line in text.splitlines() if line.split()[:1] and line.split()[0] in names]


def test_consumer_groups_list_and_describe(tools, both):
    topic, group = _names("cg-describe")
    live = f"{group}-live"
    _setup(both, topic, group, offsets={0: 4, 1: 10})
    member = LiveMember(both, topic, live)
    try:
        k, _ = _run(tools, both, "consumer-groups", "--list", only=(group, live))
        assert sorted(_ours(k.stdout, group, live)) == sorted([group, live])
        k, _ = _run(tools, both, "consumer-groups", "--list", "--state", only=(group, live))
        assert {r["GROUP"]: r["STATE"] for r in table(k.stdout)} == {group: "Empty", live: "Stable"}

        k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", group)
        assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CONSUMER-ID"])
                for r in table(k.stdout)] == [("0", "4", "10", "6", "-"), ("1", "10", "10", "0", "-")]
        assert f"Consumer group '{group}' has no active members." in k.stderr
        _run(tools, both, "consumer-groups", "--describe", "--group", group, "--offsets")
        k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", group, "--state")
        assert normalise(k.stdout).splitlines()[1] == f"{group} <host> (1) - Empty 0"

        k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", live)
        assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["CLIENT-ID"]) for r in table(k.stdout)] \
            == [("0", "-", "10", "tools-live"), ("1", "-", "10", "tools-live"), ("2", "-", "10", "tools-live")]
        k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", live, "--members")
        assert [(r["CLIENT-ID"], r["#PARTITIONS"]) for r in table(k.stdout)] == [("tools-live", "3")]
        k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", live, "--members", "--verbose")
        assert normalise(k.stdout).splitlines()[1] == f"{live} <member> <host> tools-live 3 - {topic}:0,1,2 - -"
        k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", live, "--state")
        assert normalise(k.stdout).splitlines()[1] == f"{live} <host> (1) range Stable 1"
        _run(tools, both, "consumer-groups", "--describe", "--group", live, "--offsets")

        k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", f"{group}-none")
        assert f"GroupIdNotFoundException: Group {group}-none not found." in k.stdout
    finally:
        member.close()


def test_consumer_groups_reset_offsets(tools, both):
    topic, group = _names("cg-reset")
    _setup(both, topic, group, offsets={0: 4, 1: 10})

    def new_offsets(result) -> dict[int, int]:
        return {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in table(result.stdout)}

    def committed() -> list[dict[int, int]]:
        return [new_offsets_from_describe(tools.run("consumer-groups", b, "--describe", "--group", group, "--offsets"))
                for b in both]

    def new_offsets_from_describe(result) -> dict[int, int]:
        return {int(r["PARTITION"]): int(r["CURRENT-OFFSET"]) for r in table(result.stdout)}

    reset = ("consumer-groups", "--reset-offsets", "--group", group)
    k, _ = _run(tools, both, *reset, "--all-topics", "--to-earliest", "--dry-run")
    assert new_offsets(k) == {0: 0, 1: 0}  # the group's partitions: the ones it has offsets for
    assert committed() == [{0: 4, 1: 10}] * 2  # a dry run changes nothing
    k, _ = _run(tools, both, *reset, "--topic", topic, "--to-latest", "--dry-run")
    assert new_offsets(k) == {0: 10, 1: 10, 2: 10}
    k, _ = _run(tools, both, *reset, "--topic", f"{topic}:0,2", "--to-offset", "3", "--execute")
    assert new_offsets(k) == {0: 3, 2: 3}
    assert committed() == [{0: 3, 1: 10, 2: 3}] * 2
    k, _ = _run(tools, both, *reset, "--all-topics", "--shift-by", "-2", "--execute")
    assert new_offsets(k) == {0: 1, 1: 8, 2: 1}
    k, _ = _run(tools, both, *reset, "--all-topics", "--to-datetime", "2000-01-01T00:00:00.000", "--dry-run")
    assert new_offsets(k) == {0: 0, 1: 0, 2: 0}
    k, _ = _run(tools, both, *reset, "--all-topics", "--to-datetime", "2100-01-01T00:00:00.000", "--dry-run")
    assert new_offsets(k) == {0: 10, 1: 10, 2: 10}  # no record that late: the log end
    assert f"Warn: Partition 0 from topic {topic} is empty. Falling back to latest known offset." in k.stdout
    k, _ = _run(tools, both, *reset, "--all-topics", "--by-duration", "PT1H", "--dry-run")
    assert new_offsets(k) == {0: 0, 1: 0, 2: 0}
    k, _ = _run(tools, both, *reset, "--topic", topic, "--to-offset", "100", "--execute")
    assert new_offsets(k) == {0: 10, 1: 10, 2: 10}  # clamped to the log end
    assert committed() == [{0: 10, 1: 10, 2: 10}] * 2
    k, _ = _run(tools, both, *reset, "--topic", f"{topic}:1", "--shift-by", "-100", "--execute")
    assert new_offsets(k) == {1: 0}  # clamped to the log start
    assert committed() == [{0: 10, 1: 0, 2: 10}] * 2

    live = f"{group}-live"
    member = LiveMember(both, topic, live)
    try:
        k, _ = _run(tools, both, "consumer-groups", "--reset-offsets", "--group", live, "--all-topics",
                    "--to-earliest", "--execute")
        assert (f"Error: Assignments can only be reset if the group '{live}' is inactive, "
                f"but the current state is Stable.") in k.stdout
    finally:
        member.close()


def test_consumer_groups_delete_and_delete_offsets(tools, both):
    topic, group = _names("cg-delete")
    _setup(both, topic, group, offsets={0: 4, 1: 10, 2: 7})
    k, _ = _run(tools, both, "consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{topic}:2")
    assert normalise(k.stdout).splitlines() == [f"Request succeeded for deleting offsets from group {group}.",
                                                "TOPIC PARTITION STATUS", f"{topic} 2 Successful"]
    k, _ = _run(tools, both, "consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{topic}-none")
    assert "UnknownTopicOrPartitionException" in k.stdout
    k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", group, "--offsets")
    assert [(r["PARTITION"], r["CURRENT-OFFSET"]) for r in table(k.stdout)] == [("0", "4"), ("1", "10")]

    live = f"{group}-live"
    member = LiveMember(both, topic, live)
    try:
        k, _ = _run(tools, both, "consumer-groups", "--delete-offsets", "--group", live, "--topic", topic)
        assert k.stdout.count("GroupSubscribedToTopicException") == 3
        k, _ = _run(tools, both, "consumer-groups", "--delete", "--group", live)
        assert "GroupNotEmptyException: The group is not empty." in k.stdout
    finally:
        member.close()

    k, _ = _run(tools, both, "consumer-groups", "--delete", "--group", group)
    assert k.stdout.strip() == f"Deletion of requested consumer groups ('{group}') was successful."
    k, _ = _run(tools, both, "consumer-groups", "--delete", "--group", group)
    assert "GroupIdNotFoundException: The group id does not exist." in k.stdout
    k, _ = _run(tools, both, "consumer-groups", "--list", only=(group, live))
    assert _ours(k.stdout, group, live) == [live]


def _kafka_topic_description(kcoord_text: str) -> str:
    """kcoord's `kafka-topics --describe`, as the reference Kafka prints it (docs/deviations.md):
    Kafka's controller sets min.insync.replicas cluster-wide, which shows among the topic's
    configs, and kcoord's missing DescribeTopicPartitions leaves the ELR columns N/A."""
    return (kcoord_text.replace("Configs:", "Configs: min.insync.replicas=1")
            .replace("Elr: N/A LastKnownElr: N/A", "Elr: LastKnownElr:"))


def test_topics_create_describe_list_delete(tools, both):
    topic, _ = _names("tc")
    k, _ = _run(tools, both, "topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    assert k.stdout.strip() == f"Created topic {topic}."
    k, _ = _run(tools, both, "topics", "--create", "--topic", topic, "--partitions", "2", expect_code=1)
    assert f"Topic '{topic}' already exists." in k.stdout
    k, _ = _run(tools, both, "topics", "--describe", "--topic", topic, kafka_differs=_kafka_topic_description)
    assert normalise(k.stdout).splitlines() == [
        f"Topic: {topic} TopicId: <topic-id> PartitionCount: 2 ReplicationFactor: 1 Configs:",
        f"Topic: {topic} Partition: 0 Leader: 1 Replicas: 1 Isr: 1 Elr: N/A LastKnownElr: N/A",
        f"Topic: {topic} Partition: 1 Leader: 1 Replicas: 1 Isr: 1 Elr: N/A LastKnownElr: N/A"]
    k, _ = _run(tools, both, "topics", "--list", "--exclude-internal", only=(topic,))
    assert _ours(k.stdout, topic) == [topic]
    k, _ = _run(tools, both, "topics", "--delete", "--topic", topic)
    k, _ = _run(tools, both, "topics", "--list", only=(topic,))
    assert _ours(k.stdout, topic) == []
    k, _ = _run(tools, both, "topics", "--delete", "--topic", topic, expect_code=1)
    assert f"Topic '{topic}' does not exist as expected" in k.stdout
    _run(tools, both, "topics", "--describe", "--topic", topic, expect_code=1)


def test_console_consumer_in_a_group(tools, both):
    topic, group = _names("cc")
    _setup(both, topic, group, partitions=1, per_partition=10)
    consume = ("console-consumer", "--topic", topic, "--group", group, "--timeout-ms", "30000",
               "--formatter-property", "print.key=true", "--formatter-property", "print.offset=true")
    k, _ = _run(tools, both, *consume, "--max-messages", "7", "--from-beginning")
    assert normalise(k.stdout).splitlines() == [f"Offset:{i} k{i} v{i}" for i in range(7)]
    assert "Processed a total of 7 messages" in k.stderr
    k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", group)
    assert [(r["CURRENT-OFFSET"], r["LAG"]) for r in table(k.stdout)] == [("7", "3")]
    k, _ = _run(tools, both, *consume, "--max-messages", "3")  # on from the group's offset
    assert normalise(k.stdout).splitlines() == [f"Offset:{i} k{i} v{i}" for i in range(7, 10)]
    k, _ = _run(tools, both, "consumer-groups", "--describe", "--group", group)
    assert [(r["CURRENT-OFFSET"], r["LAG"]) for r in table(k.stdout)] == [("10", "0")]


def test_one_shot_runs_match_the_session(tools, kcoord_server):
    create_topic(kcoord_server.bootstrap, "one-shot")
    for args in (("--list",), ("--create", "--topic", "one-shot")):  # exit 0, then 1
        once, in_session = (run("topics", kcoord_server.bootstrap, *args) for run in (run_tool, tools.run))
        assert (once.code, once.stdout, once.stderr) == (in_session.code, in_session.stdout, in_session.stderr)
    assert (once.code, once.stdout.strip()) == (1, "Error while executing topic command : Topic 'one-shot' already exists.")


def test_missing_jars_say_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("KCOORD_KAFKA_CACHE", str(tmp_path))
    with pytest.raises(ReferenceKafkaUnavailable, match=r"make install-test"):
        run_tool("topics", "127.0.0.1:9", "--list")


def _perf_figures(stdout: str) -> dict[str, str]:
    """kafka-consumer-perf-test's one result line, by its header's names."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line.startswith("start.time"))
    names = [n.strip() for n in lines[header].split(",")]
    return dict(zip(names, (v.strip() for v in lines[header + 1].split(","))))


def test_consumer_perf_test_consumes_exactly_the_messages_asked_for(tools, both):
    topic, group = _names("cperf")
    _setup(both, topic, group, partitions=3, per_partition=100)
    for bootstrap in both:
        # The tool stops after the poll that reaches the count and counts that poll's records
        # whole: asking for all 300 records of the topic is what makes "exactly" exact.
        r = tools.run("consumer-perf-test", bootstrap, "--topic", topic, "--group", group, "--num-records", "300",
                      "--timeout", "30000")
        assert r.code == 0, r
        figures = _perf_figures(r.stdout)
        assert figures["data.consumed.in.nMsg"] == "300", (bootstrap, r.stdout)
        assert "Exiting before consuming" not in r.stderr, r.stderr
        assert float(figures["rebalance.time.ms"]) >= 0 and float(figures["fetch.time.ms"]) >= 0, r.stdout
        # It consumed in the group: its offsets (committed on close) add up to what it read.
        k = tools.run("consumer-groups", bootstrap, "--describe", "--group", group)
        assert sum(int(row["CURRENT-OFFSET"]) for row in table(k.stdout)) == 300, k.stdout


# ---- the cluster's tools: kafka-features, kafka-metadata-quorum, kafka-client-metrics ----

# What the reference Kafka 4.3.1 reports where kcoord reports otherwise (docs/deviations.md,
# "Feature levels"): SupportedMinVersion, SupportedMaxVersion, FinalizedVersionLevel.
KAFKA_FEATURES = {
    "eligible.leader.replicas.version": ("0", "1", "1"),
    "group.version": ("0", "1", "1"),
    "kraft.version": ("0", "1", "0"),
    "metadata.version": ("3.3-IV3", "4.3-IV0", "4.3-IV0"),
    "share.version": ("0", "1", "1"),
    "streams.version": ("0", "1", "1"),
    "transaction.version": ("0", "2", "2"),
}
KCOORD_FEATURES = [
    "Feature: eligible.leader.replicas.version SupportedMinVersion: 1 SupportedMaxVersion: 1 FinalizedVersionLevel: 1",
    "Feature: group.version SupportedMinVersion: 1 SupportedMaxVersion: 1 FinalizedVersionLevel: 1",
    "Feature: kraft.version SupportedMinVersion: 0 SupportedMaxVersion: 0 FinalizedVersionLevel: 0",
    "Feature: metadata.version SupportedMinVersion: 4.3-IV0 SupportedMaxVersion: 4.3-IV0 FinalizedVersionLevel: 4.3-IV0",
    "Feature: share.version SupportedMinVersion: 0 SupportedMaxVersion: 1 FinalizedVersionLevel: 1",
    "Feature: streams.version SupportedMinVersion: 0 SupportedMaxVersion: 1 FinalizedVersionLevel: 1",
    "Feature: transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 FinalizedVersionLevel: 2",
]
_FEATURE_LINE = re.compile(r"Feature: (\S+) SupportedMinVersion: \S+ SupportedMaxVersion: \S+ FinalizedVersionLevel: \S+")


def _features_epoch(text: str) -> str:
    """Kafka's epoch is the offset of its metadata log, which grows by a no-op record every
    500 ms (metadata.max.idle.interval.ms); kcoord's is 0 (kcoord.features), asserted apart."""
    return re.sub(r" Epoch: \d+$", " Epoch: <offset>", text, flags=re.M)


def _kafka_features(kcoord_text: str) -> str:
    def kafka_line(m: re.Match) -> str:
        low, high, finalized = KAFKA_FEATURES[m.group(1)]
        return (f"Feature: {m.group(1)} SupportedMinVersion: {low} SupportedMaxVersion: {high} "
                f"FinalizedVersionLevel: {finalized}")
    return _FEATURE_LINE.sub(kafka_line, kcoord_text)


def test_features_describe(tools, both):
    for args in (("describe",), ("describe", "--node-id", "1")):
        k, _ = _run(tools, both, "features", *args, also=_features_epoch, kafka_differs=_kafka_features)
        assert normalise(k.stdout).splitlines() == [f"{line} Epoch: 0" for line in KCOORD_FEATURES]


def test_api_versions_carry_the_features_from_v3_and_those_with_minimum_0_from_v4(both):
    from kcoord.protocol_client import Connection

    def features(bootstrap: str, version: int):
        with Connection.to(bootstrap) as conn:
            r = conn.call(18, version, {"client_software_name": "kcoord-test", "client_software_version": "1"})
        return ({f.name: (f.min_version, f.max_version) for f in r.supported_features},
                r.finalized_features_epoch,
                {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features})

    for bootstrap in both:
        (v3, _, finalized3), (v4, epoch, finalized4) = features(bootstrap, 3), features(bootstrap, 4)
        assert v3 == {name: r for name, r in v4.items() if r[0] > 0}, bootstrap
        assert finalized3 == finalized4 and epoch >= 0, bootstrap
        # A feature at level 0 is off and left out of the finalized list.
        assert all(low == high > 0 for low, high in finalized4.values()), bootstrap
    v4, epoch, finalized = features(both[0], 4)
    assert v4 == {"metadata.version": (30, 30), "kraft.version": (0, 0), "group.version": (1, 1),
                  "transaction.version": (0, 2), "eligible.leader.replicas.version": (1, 1),
                  "share.version": (0, 1), "streams.version": (0, 1)}
    assert (epoch, finalized) == (0, {"metadata.version": (30, 30), "group.version": (1, 1),
                                      "transaction.version": (2, 2), "eligible.leader.replicas.version": (1, 1),
                                      "share.version": (1, 1), "streams.version": (1, 1)})


def _quorum_offsets(text: str) -> str:
    """Kafka's metadata log grows by a no-op record every 500 ms; kcoord's holds one record
    (kcoord.quorum), asserted apart. Cluster ids are each cluster's own."""
    text = re.sub(r"^(HighWatermark:) \d+$", r"\1 <offset>", text, flags=re.M)
    text = re.sub(r"^(ClusterId:) \S+$", r"\1 <cluster-id>", text, flags=re.M)
    return re.sub(r"^(\d+ [A-Za-z0-9_-]{22}) \d+ ", r"\1 <offset> ", text, flags=re.M)


def _kafka_quorum(kcoord_text: str) -> str:
    """kcoord's controller answers on its one listener; Kafka's has a CONTROLLER listener of
    its own (docs/deviations.md, "DescribeQuorum")."""
    return kcoord_text.replace('"PLAINTEXT:/<host>"', '"CONTROLLER:/<host>"')


def test_metadata_quorum_describe(tools, both):
    k, _ = _run(tools, both, "metadata-quorum", "describe", "--status", also=_quorum_offsets,
                kafka_differs=_kafka_quorum)
    assert normalise(k.stdout).splitlines() == [
        "ClusterId: kcoord-cluster-00000001", "LeaderId: 1", "LeaderEpoch: 1", "HighWatermark: 1",
        "MaxFollowerLag: 0", "MaxFollowerLagTimeMs: 0", 'CurrentVoters: [{"id": 1, "endpoints": ["PLAINTEXT:/<host>"]}]',
        "CurrentObservers: []"]
    k, _ = _run(tools, both, "metadata-quorum", "describe", "--replication", also=_quorum_offsets)
    assert normalise(k.stdout).splitlines() == [
        "NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status",
        "1 AAAAAAAAAAAAAAAAAAAAAA 1 0 <ms> <ms> Leader"]
    k, _ = _run(tools, both, "metadata-quorum", "describe", "--replication", "--human-readable",
                also=lambda text: re.sub(r"\b\d+ ms ago\b", "<n> ms ago", _quorum_offsets(text)))
    assert re.fullmatch(r"1 AAAAAAAAAAAAAAAAAAAAAA 1 0 \d+ ms ago \d+ ms ago Leader",
                        normalise(k.stdout).splitlines()[1])
    k, _ = _run(tools, both, "metadata-quorum", "describe", expect_code=1)
    assert "One of --status or --replication must be specified with describe sub-command" in k.stderr


def test_describe_quorum_for_another_partition_or_topic(both):
    """Kafka's raft client answers only a request for exactly __cluster_metadata-0."""
    from kcoord.protocol_client import Connection

    requests = [
        [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}],
        [{"topic_name": "other", "partitions": [{"partition_index": 0}]}],
        [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}, {"partition_index": 0}]}],
        [],
    ]
    for version in (0, 1, 2):
        for topics in requests:
            answers = []
            for bootstrap in both:
                with Connection.to(bootstrap) as conn:
                    answers.append(conn.call(55, version, {"topics": topics}))
            assert answers[0] == answers[1], (version, topics)
            assert all(p.error_code == 3 for t in answers[0].topics for p in t.partitions)
            assert [t.topic_name for t in answers[0].topics] == [t["topic_name"] for t in topics]


def _subscriptions_of(*names: str):
    """`kafka-client-metrics --describe` without a name describes every subscription, in hash
    order: only these, sorted (the shared Kafka may hold others)."""
    def keep(text: str) -> str:
        blocks = re.split(r"(?m)^(?=Client metrics configs for )", text)
        ours = [b.strip() for b in blocks if (m := re.match(r"Client metrics configs for (\S+) are:", b))
                and m.group(1) in names]
        return "\n".join(sorted(ours))
    return keep


def test_client_metrics_alter_list_describe_delete(tools, both):
    suffix = uuid.uuid4().hex[:8]
    full, short, absent = f"cm-full-{suffix}", f"cm-short-{suffix}", f"cm-none-{suffix}"
    cm = ("client-metrics",)
    k, _ = _run(tools, both, *cm, "--alter", "--name", full, "--metrics",
                "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator", "--interval", "1000",
                "--match", "client_id=abc,client_software_name=Java")
    assert k.stdout.strip() == f"Altered client metrics config for {full}."
    _run(tools, both, *cm, "--alter", "--name", short, "--interval", "5000")
    for b in both:
        wait_subscription(b, short, {"interval.ms": "5000"})
    k, _ = _run(tools, both, *cm, "--list", only=(full, short))
    assert sorted(_ours(k.stdout, full, short)) == sorted([full, short])
    k, _ = _run(tools, both, *cm, "--describe", "--name", full)
    assert k.stdout.splitlines() == [f"Client metrics configs for {full} are:", "  interval.ms=1000",
                                     "  match=client_id=abc,client_software_name=Java",
                                     "  metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator"]
    k, _ = _run(tools, both, *cm, "--describe", also=_subscriptions_of(full, short))
    assert f"Client metrics configs for {short} are:\n  interval.ms=5000\n  match=\n  metrics=" in k.stdout
    k, _ = _run(tools, both, *cm, "--describe", "--name", absent)
    assert k.stdout.strip() == f"The client metric resource {absent} doesn't exist and doesn't have dynamic config."

    for args, error in (
            (("--interval", "50"), "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
            (("--match", "foo=bar"), "Illegal client matching pattern: foo=bar"),
            (("--match", "client_id=a=b"), "Illegal client matching pattern: client_id=a=b")):
        k, _ = _run(tools, both, *cm, "--alter", "--name", short, *args, expect_code=1)
        assert k.stdout.strip() == f"Error while executing client metrics command : {error}"
    k, _ = _run(tools, both, *cm, "--alter", "--name", short, "--interval", "", "--metrics", "x.,x.")
    for b in both:
        wait_subscription(b, short, {"metrics": "x."})  # a repeated prefix is dropped
    k, _ = _run(tools, both, *cm, "--alter", "--name", short, "--metrics", "")  # its last config: it goes
    for b in both:
        wait_subscription(b, short, {})
    k, _ = _run(tools, both, *cm, "--describe", "--name", short)
    assert "doesn't exist" in k.stdout
    k, _ = _run(tools, both, *cm, "--delete", "--name", full)
    assert k.stdout.strip() == f"Deleted client metrics config for {full}."
    for b in both:
        wait_subscription(b, full, {})
    k, _ = _run(tools, both, *cm, "--list", only=(full, short))
    assert _ours(k.stdout, full, short) == []
    k, _ = _run(tools, both, *cm, "--delete", "--name", absent)  # the defaults deleted: nothing to do
    assert k.stdout.strip() == f"Deleted client metrics config for {absent}."


def test_configs_tool_on_client_metrics(tools, both):
    name = f"cm-configs-{uuid.uuid4().hex[:8]}"
    entity = ("configs", "--entity-type", "client-metrics", "--entity-name", name)
    k, _ = _run(tools, both, *entity, "--alter", "--add-config", "interval.ms=2000,metrics=[a.,b.]")
    assert k.stdout.strip() == f"Completed updating config for client-metric {name}."
    for b in both:
        wait_subscription(b, name, {"interval.ms": "2000", "metrics": "a.,b."})
    k, _ = _run(tools, both, *entity, "--describe")
    assert normalise(k.stdout).splitlines() == [
        f"Dynamic configs for client-metric {name} are:",
        "interval.ms=2000 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=2000}",
        "metrics=a.,b. sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:metrics=a.,b.}"]
    k, _ = _run(tools, both, *entity, "--describe", "--all")
    assert "match= sensitive=false synonyms={}" in normalise(k.stdout)  # a default has no synonym
    _run(tools, both, *entity, "--alter", "--delete-config", "interval.ms,metrics")
    for b in both:
        wait_subscription(b, name, {})
    k, _ = _run(tools, both, *entity, "--alter", "--add-config", "push.interval=1", expect_code=1)
    assert "InvalidRequestException: Unknown client metrics configuration: push.interval" in k.stderr


def _finalized(bootstrap: str) -> dict:
    from kcoord.protocol_client import Connection

    with Connection.to(bootstrap) as conn:
        r = conn.call(18, 4, {"client_software_name": "kcoord-test", "client_software_version": "1"})
    return {f.name: f.max_version_level for f in r.finalized_features}


@pytest.mark.parametrize("feature,lower,default", [("transaction.version", 1, 2), ("streams.version", 0, 1),
                                                   ("share.version", 0, 1)])
def test_features_downgrade_and_upgrade_move_the_features_served_at_several_levels(tools, both, feature, lower,
                                                                                    default):
    """A feature at 0 is off and leaves the finalized list (streams.version 0: no streams groups;
    share.version 0: no share groups)."""
    try:
        _run(tools, both, "features", "downgrade", "--feature", f"{feature}={lower}")
        assert [_finalized(b).get(feature, 0) for b in both] == [lower, lower]
        _run(tools, both, "features", "upgrade", "--feature", f"{feature}={default}")
        assert [_finalized(b).get(feature, 0) for b in both] == [default, default]
    finally:
        for bootstrap in both:   # the session's Kafka serves other tests after this one
            if _finalized(bootstrap).get(feature) != default:
                tools.run("features", bootstrap, "upgrade", "--feature", f"{feature}={default}")


def test_features_refuses_a_level_outside_the_supported_range_as_kafka(tools, both):
    k, ref = (tools.run("features", b, "upgrade", "--feature", "transaction.version=3") for b in both)
    assert (k.code, ref.code) == (1, 1)
    assert normalise(k.stdout) == normalise(ref.stdout), (k, ref)
