"""`__consumer_offsets` on kcoord as on the reference Kafka: the same group scenario on both,
its records read back with Kafka's own console consumer and formatters (and with kcoord's
decoder), the topic's metadata, configs and refusals.

kcoord runs with node id 1, the reference Kafka's node.id. The reference Kafka is shared by
the session: names are unique and only the scenario's group's records are compared.
"""
from __future__ import annotations

import difflib
import json
import re
import time
import uuid

import pytest

from kcoord.conformance.member import subscribe_kafka_python
from kcoord.log import consumer_offsets as co
from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, wait_group
from kcoord.testing.kafka_tools import ToolSession
from wire import records as R

pytestmark = pytest.mark.kcoord(node_id=1)

FORMATTERS = ("org.apache.kafka.tools.consumer.OffsetsMessageFormatter",
              "org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter")


@pytest.fixture(scope="module")
def tools():
    with ToolSession() as session:
        yield session


def _scenario(bootstrap: str, topic: str, group: str, simple: str) -> None:
    """A kafka-python group joins, consumes, commits and leaves; one of its offsets is then
    deleted; a simple group commits and is deleted."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    create_topic(bootstrap, topic, 2)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(6):
        producer.send(topic, b"v%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, client_id="offsets-topic",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    # Not consumer.subscribe(): its leader can assign from an empty snapshot and rejoin, one
    # generation more on whichever broker that happens (seen on Kafka).
    subscribe_kafka_python(consumer, [topic])
    seen, deadline = 0, time.monotonic() + 60
    while seen < 6 and time.monotonic() < deadline:
        seen += sum(len(batch) for batch in consumer.poll(1000).values())
    assert seen == 6
    consumer.commit()
    consumer.close()
    wait_group(bootstrap, group, state="Empty", timeout=30)
    with Connection.to(bootstrap) as conn:
        answer = conn.call(47, 0, {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 1}]}]})
        assert answer.error_code == 0 and answer.topics[0].partitions[0].error_code == 0
    simple_consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=simple, enable_auto_commit=False)
    simple_consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(2, "note", -1)})
    simple_consumer.close()
    with Connection.to(bootstrap) as conn:
        answer = conn.call(42, 2, {"groups_names": [simple]})
        assert answer.results[0].error_code == 0


def _formatted(tools, bootstrap: str, formatter: str) -> list[dict]:
    result = tools.run("console-consumer", bootstrap, "--topic", co.TOPIC, "--from-beginning",
                       "--formatter", formatter, "--timeout-ms", "4000", timeout=90)
    # The formatters print one JSON object per record with no separator between them.
    decoder, text, pos, out = json.JSONDecoder(), result.stdout.strip(), 0, []
    while pos < len(text):
        obj, end = decoder.raw_decode(text, pos)
        out.append(obj)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    assert "Processed a total of" in result.stderr, result.stderr
    return out


def _records(tools, bootstrap: str, groups: set[str]) -> list[dict]:
    """Both formatters' output for `groups`, in log order (each formatter prints only its kind)."""
    offsets, metadata = (_formatted(tools, bootstrap, f) for f in FORMATTERS)
    assert all(r["key"]["type"] == 1 for r in offsets) and all(r["key"]["type"] == 2 for r in metadata)
    return [r for r in offsets + metadata if r["key"]["data"]["group"] in groups]


_MEMBER = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _commit_order(records: list[dict]) -> list[dict]:
    """The offsets of one commit (one commit timestamp) sorted by partition: a client's
    commit lists them in its own dict order, which differs from run to run."""
    out, run = [], []
    for r in records + [None]:
        stamp = r and r["key"]["type"] == 1 and r["value"] and r["value"]["data"]["commitTimestamp"]
        if run and stamp != run[0]["value"]["data"]["commitTimestamp"]:
            out += sorted(run, key=lambda x: (x["key"]["data"]["topic"], x["key"]["data"]["partition"]))
            run = []
        if stamp:
            run.append(r)
        elif r is not None:
            out.append(r)
    return out


def _normalised(records: list[dict], names: dict[str, str]) -> list[dict]:
    """Member ids, timestamps, hosts and topic ids replaced; names mapped to placeholders."""
    members: dict[str, str] = {}
    records = _commit_order(records)

    def member(text):
        if text is None:
            return None
        return members.setdefault(text, f"m{len(members) + 1}") if _MEMBER.search(text) else text

    out = []
    for r in records:
        r = json.loads(json.dumps(r))
        key = r["key"]["data"]
        key["group"] = names.get(key["group"], key["group"])
        if "topic" in key:
            key["topic"] = names.get(key["topic"], key["topic"])
        value = r["value"] and r["value"]["data"]
        if value is not None:
            for field in ("commitTimestamp", "currentStateTimestamp", "expireTimestamp"):
                if field in value:
                    value[field] = "<ms>" if value[field] >= 0 else value[field]
            if "topicId" in value:
                value["topicId"] = "<topic-id>"
            if "leader" in value:
                value["leader"] = member(value["leader"])
            for m in value.get("members", []):
                m["memberId"] = member(m["memberId"])
                m["clientHost"] = "<host>"
        out.append(r)
    return out


def test_the_scenario_leaves_the_same_records_as_on_kafka(tools, kcoord_server, reference_kafka):
    suffix = uuid.uuid4().hex[:8]
    topic, group, simple = f"ot-{suffix}", f"ot-group-{suffix}", f"ot-simple-{suffix}"
    names = {topic: "<topic>", group: "<group>", simple: "<simple>"}
    brokers = (kcoord_server.bootstrap, reference_kafka.bootstrap)
    for bootstrap in brokers:
        _scenario(bootstrap, topic, group, simple)
    # A console consumer ends after 4 s without a record: under a loaded machine one read of the
    # 50-partition topic has ended early once. A difference must then survive a second read.
    for attempt in range(2):
        ours, theirs = (_records(tools, bootstrap, {group, simple}) for bootstrap in brokers)
        differences = [_difference(kind, ours, theirs, names) for kind in (1, 2)]
        if not any(differences):
            break
    assert not any(differences), "\n".join(filter(None, differences))
    assert len(ours) >= 8


def _difference(kind: int, ours: list[dict], theirs: list[dict], names: dict[str, str]) -> str:
    """"" when kcoord's records of `kind` equal the reference Kafka's, else a diff of them."""
    # Each formatter lists its kind in log order; the two kinds interleave in the log, so the
    # comparison is per kind. The two groups hash to different partitions, which the console
    # consumer reads in whatever order its fetches return: per group, then, in log order (a
    # stable sort keeps each group's records in the order they were written).
    def lines(records):
        records = _normalised([r for r in records if r["key"]["type"] == kind], names)
        records.sort(key=lambda r: r["key"]["data"]["group"])
        return [json.dumps(r, sort_keys=True) for r in records]

    k, ref = lines(ours), lines(theirs)
    if k == ref:
        return ""
    return f"record type {kind}, kcoord (-) vs kafka (+):\n" + "\n".join(
        difflib.unified_diff(k, ref, "kcoord", "kafka", lineterm="", n=len(k) + len(ref)))


def test_kcoords_decoder_reads_what_kafkas_formatters_print(tools, kcoord_server):
    suffix = uuid.uuid4().hex[:8]
    topic, group, simple = f"od-{suffix}", f"od-group-{suffix}", f"od-simple-{suffix}"
    _scenario(kcoord_server.bootstrap, topic, group, simple)
    formatted = _records(tools, kcoord_server.bootstrap, {group, simple})
    from kafka import KafkaConsumer, TopicPartition

    reader = KafkaConsumer(bootstrap_servers=kcoord_server.bootstrap, enable_auto_commit=False,
                           auto_offset_reset="earliest", consumer_timeout_ms=3000)
    partitions = [TopicPartition(co.TOPIC, p) for p in reader.partitions_for_topic(co.TOPIC)]
    reader.assign(partitions)
    decoded = [co.decode(m.key, m.value) for m in reader]
    reader.close()
    decoded = [r for r in decoded if r["key"]["data"]["group"] in {group, simple}]
    # The two groups' records live in different partitions: compared group by group, kind by kind.
    for g in (group, simple):
        for kind in (1, 2):
            pick = lambda records: [r for r in records  # noqa: E731
                                    if r["key"]["type"] == kind and r["key"]["data"]["group"] == g]
            assert pick(decoded) == pick(formatted), (g, kind)
    assert any(r["value"] is None for r in decoded)  # the deletions' tombstones


def _metadata(bootstrap: str):
    with Connection.to(bootstrap) as conn:
        return conn.call(3, 12, {"topics": None, "allow_auto_topic_creation": False,
                                 "include_topic_authorized_operations": False})


def test_topic_metadata_configs_and_refusals(broker_any):
    bootstrap = broker_any.bootstrap
    group = f"om-group-{uuid.uuid4().hex[:8]}"
    with Connection.to(bootstrap) as conn:  # the first lookup creates the topic on both
        conn.call(10, 3, {"key": group, "key_type": 0})
    deadline = time.monotonic() + 30
    while not any(t.name == co.TOPIC for t in _metadata(bootstrap).topics) and time.monotonic() < deadline:
        time.sleep(0.2)
    entry = next(t for t in _metadata(bootstrap).topics if t.name == co.TOPIC)
    assert entry.is_internal and entry.error_code == 0 and entry.partitions
    with Connection.to(bootstrap) as conn:
        configs = conn.call(32, 4, {"resources": [{"resource_type": 2, "resource_name": co.TOPIC,
                                                   "configuration_keys": None}],
                                    "include_synonyms": False, "include_documentation": False})
        own = {c.name: c.value for c in configs.results[0].configs if c.config_source == 1}
        assert own == {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
        batch = R.build_batch([(b"k", b"v", int(time.time() * 1000))])
        produced = conn.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": co.TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
        p = produced.responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset, p.error_message) == (17, -1, None)  # INVALID_TOPIC_EXCEPTION
        created = conn.call(19, 7, {"topics": [{"name": co.TOPIC, "num_partitions": 3, "replication_factor": 1,
                                                "assignments": [], "configs": []}],
                                    "timeout_ms": 5000, "validate_only": True})
        t = created.topics[0]
        assert (t.error_code, t.error_message) == (36, f"Topic '{co.TOPIC}' already exists.")
        deleted = conn.call(21, 2, {"topics": [{"name": co.TOPIC, "partitions": [{"partition_index": 0, "offset": 0}]}],
                                    "timeout_ms": 5000})
        assert deleted.topics[0].partitions[0].error_code == 17


def test_clients_leave_the_internal_topic_out_of_pattern_subscriptions(broker_any):
    from kafka import KafkaConsumer

    bootstrap = broker_any.bootstrap
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"op-{suffix}", f"op-group-{suffix}"
    create_topic(bootstrap, topic)
    with Connection.to(bootstrap) as conn:
        conn.call(10, 3, {"key": group, "key_type": 0})
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             exclude_internal_topics=True)
    consumer.subscribe(pattern=f"^(__consumer_offsets|op-{suffix})$")
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(500)
    assert {tp.topic for tp in consumer.assignment()} == {topic}
    consumer.close()


def test_the_topic_survives_a_restart_with_a_data_dir(tmp_path):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from kcoord.coordinator.config import offsets_partition_for
    from kcoord.testing.plugin import start_server

    def records(server):
        partition = server.app.broker.topics.get(co.TOPIC).partitions[offsets_partition_for("restart-g", 50)]
        return list(co.decode_records(partition.read(0, 1 << 20))), partition.high_watermark

    server = start_server(data_dir=str(tmp_path))
    try:
        create_topic(server.bootstrap, "restart-t")
        c = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id="restart-g", enable_auto_commit=False)
        c.commit({TopicPartition("restart-t", 0): OffsetAndMetadata(7, "", -1)})
        c.close()
        before = records(server)
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        assert records(server) == before and before[1] == 1
        assert before[0][0][1]["value"]["data"]["offset"] == 7
    finally:
        server.stop()
