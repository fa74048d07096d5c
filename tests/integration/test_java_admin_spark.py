"""The Java AdminClient, and Spark's two Kafka-source access patterns, run through the Java client.

Spark's Kafka connector jar is not obtainable here; its access patterns are reproduced
with the same Java client calls it makes (AdminClient on the driver, assign/seek/poll on
executors, or a subscribing driver consumer in useDeprecatedOffsetFetching mode).
"""
import pytest

from kcoord.testing.plugin import start_server
from kcoord.conformance import javaclient
from tests.integration.clients import consume, produce
from kcoord.conformance.members import Member, assignments


@pytest.fixture
def server():
    s = start_server(default_partitions=6)
    yield s
    s.stop()


def test_admin_lists_describes_offsets_and_deletes_groups(server):
    b = server.bootstrap
    produce("java", b, "adm", 60)
    consume("java", b, "adm", "adm-group", 60)  # commits, then leaves: the group is Empty
    groups = {g["group"]: g["state"] for g in javaclient.run("admin", "--bootstrap", b, "--action", "list-groups")}
    assert groups == {"adm-group": "Empty"}
    [desc] = javaclient.run("admin", "--bootstrap", b, "--action", "describe-group", "--group", "adm-group")
    assert (desc["state"], desc["members"]) == ("Empty", 0)
    offsets = javaclient.run("admin", "--bootstrap", b, "--action", "list-offsets", "--group", "adm-group")
    ends = {i: p.high_watermark for i, p in enumerate(server.app.broker.topics.get("adm").partitions)}
    assert {(o["partition"], o["offset"]) for o in offsets} == {(p, e) for p, e in ends.items() if e}
    assert javaclient.run("admin", "--bootstrap", b, "--action", "delete-group", "--group", "adm-group")
    assert javaclient.run("admin", "--bootstrap", b, "--action", "list-groups") == []


def test_admin_describes_a_live_group(server):
    produce("java", server.bootstrap, "live", 10)
    member = Member("java", server.bootstrap, "live", "live-group")
    try:
        server.call(lambda: server.app.coordinator.wait_for("live-group", state="Stable", members=1, timeout=60),
                    timeout=70)
        [desc] = javaclient.run("admin", "--bootstrap", server.bootstrap, "--action", "describe-group",
                                "--group", "live-group")
        assert (desc["state"], desc["members"], desc["assignor"]) == ("Stable", 1, "range")
    finally:
        member.stop()


def test_spark_default_pattern_reads_every_record(server):
    # multi-record batches: linger lets the producer batch
    produce("java", server.bootstrap, "spark-a", 2000)
    assert any(b.last_offset > b.base_offset for p in server.app.broker.topics.get("spark-a").partitions
               for b in p.batches)
    [done] = javaclient.run("assign", "--bootstrap", server.bootstrap, "--topic", "spark-a", "--count", "2000",
                            "--max-seconds", "60")
    assert done["total"] == 2000
    assert server.app.coordinator.core.group("spark-kafka-source-executor") is None  # never joined


def test_spark_deprecated_offset_fetching_drivers_rebalance(server):
    produce("java", server.bootstrap, "spark-b", 100)
    kw = dict(session_ms=45000)
    first = Member("java", server.bootstrap, "spark-b", "spark-driver", **kw)
    second = None
    try:
        server.call(lambda: server.app.coordinator.wait_for("spark-driver", state="Stable", members=1, timeout=60),
                    timeout=70)
        assert sorted(p for ps in assignments(server.app, "spark-driver").values() for p in ps) == list(range(6))
        group = server.app.coordinator.core.group("spark-driver")
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
