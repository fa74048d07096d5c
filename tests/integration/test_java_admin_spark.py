"""The Java AdminClient, and Spark's two Kafka-source access patterns, run through the Java client.

Fast checks of the Java client calls Spark's Kafka source makes (AdminClient on the driver,
assign/seek/poll on executors, or a subscribing driver consumer in useDeprecatedOffsetFetching
mode), with more records and rebalancing drivers than a Spark run affords. The real connector
runs in test_spark_kafka_source.py.
"""
import uuid

import pytest

from kcoord.testing.brokers import create_topic, describe, end_offsets, wait_group
from kcoord.testing.plugin import start_server
from kcoord.conformance import javaclient
from tests.integration.clients import consume, produce
from kcoord.conformance.members import Member, assignments

JAVA = list(javaclient.CLIENT_VERSIONS)  # kafka-clients 3.9.1 and 4.3.1


@pytest.fixture
def server():
    s = start_server(default_partitions=6)
    yield s
    s.stop()


def _unique(broker, stem: str, partitions: int = 6) -> tuple[str, str]:
    # The reference Kafka lives for the whole session: every test names its own topic and group.
    suffix = uuid.uuid4().hex[:8]
    create_topic(broker.bootstrap, f"{stem}-{suffix}", partitions)
    return f"{stem}-{suffix}", f"{stem}-group-{suffix}"


@pytest.mark.parametrize("client", JAVA)
def test_admin_lists_describes_offsets_and_deletes_groups(broker_any, client):
    b, version = broker_any.bootstrap, javaclient.CLIENT_VERSIONS[client]
    admin = lambda *args: javaclient.run("admin", "--bootstrap", b, *args, version=version)  # noqa: E731
    topic, group = _unique(broker_any, "adm")
    produce(client, b, topic, 60)
    consume(client, b, topic, group, 60)  # commits, then leaves: the group is Empty
    groups = {g["group"]: g["state"] for g in admin("--action", "list-groups")}
    assert groups[group] == "Empty"
    if broker_any.kind == "kcoord":  # a fresh server: nothing else there
        assert groups == {group: "Empty"}
    [desc] = admin("--action", "describe-group", "--group", group)
    assert (desc["state"], desc["members"]) == ("Empty", 0)
    offsets = admin("--action", "list-offsets", "--group", group)
    ends = end_offsets(b, topic)
    assert {(o["partition"], o["offset"]) for o in offsets} == {(p, e) for p, e in ends.items() if e}
    assert admin("--action", "delete-group", "--group", group)
    assert group not in {g["group"] for g in admin("--action", "list-groups")}
    if broker_any.kind == "kcoord":
        assert admin("--action", "list-groups") == []


@pytest.mark.parametrize("client", JAVA)
def test_admin_describes_a_live_group(broker_any, client):
    topic, group = _unique(broker_any, "live")
    produce(client, broker_any.bootstrap, topic, 10)
    member = Member(client, broker_any.bootstrap, topic, group)
    try:
        wait_group(broker_any.bootstrap, group, state="Stable", members=1, timeout=60)
        [desc] = javaclient.run("admin", "--bootstrap", broker_any.bootstrap, "--action", "describe-group",
                                "--group", group, version=javaclient.CLIENT_VERSIONS[client])
        assert (desc["state"], desc["members"], desc["assignor"]) == ("Stable", 1, "range")
    finally:
        member.stop()


@pytest.mark.parametrize("client", JAVA)
def test_spark_default_pattern_reads_every_record(broker_any, client):
    b, version = broker_any.bootstrap, javaclient.CLIENT_VERSIONS[client]
    topic, group = _unique(broker_any, "spark-a")
    # multi-record batches: linger lets the producer batch
    produce(client, b, topic, 2000)
    if broker_any.kind == "kcoord":
        assert any(batch.last_offset > batch.base_offset
                   for p in broker_any.app.broker.topics.get(topic).partitions for batch in p.batches)
    [done] = javaclient.run("assign", "--bootstrap", b, "--topic", topic, "--count", "2000", "--group", group,
                            "--max-seconds", "60", version=version)
    assert done["total"] == 2000
    assert describe(b, group).state == "Dead"  # never joined, nothing committed: no group at all


def test_spark_deprecated_offset_fetching_drivers_rebalance(server):
    produce("java", server.bootstrap, "spark-b", 100)
    kw = dict(session_ms=45000)
    first = Member("java", server.bootstrap, "spark-b", "spark-driver", **kw)
    second = None
    try:
        server.call(lambda: server.app.coordinator.wait_for("spark-driver", state="Stable", members=1, timeout=60),
                    timeout=70)
        assert sorted(p for ps in assignments(server.app, "spark-driver").values() for p in ps) == list(range(6))
        group = server.app.coordinator.runtime.group("spark-driver")
        assert [m.rebalance_timeout_ms for m in group.members.values()] == [300000]
        assert [m.session_timeout_ms for m in group.members.values()] == [45000]
        second = Member("java", server.bootstrap, "spark-b", "spark-driver", **kw)
        server.call(lambda: server.app.coordinator.wait_for("spark-driver", state="Stable", members=2,
                                                            generation_at_least=2, timeout=90), timeout=100)
        parts = assignments(server.app, "spark-driver")
        assert sorted(len(p) for p in parts.values()) == [3, 3]
        assert sorted(p for ps in parts.values() for p in ps) == list(range(6))
    finally:
        first.stop()
        if second:
            second.stop()
