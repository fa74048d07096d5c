"""Stock clients end to end against kcoord: produce, consume in a group, resume from commits."""
import pytest

from kcoord.testing.plugin import start_server
from tests.integration.clients import CLIENTS, consume, produce


@pytest.fixture
def server():
    s = start_server(default_partitions=12)
    yield s
    s.stop()


@pytest.mark.parametrize("client", CLIENTS)
def test_produce_1000_then_consume_all_in_a_group(server, client):
    produce(client, server.bootstrap, "matrix", 1000)
    topic = server.app.broker.topics.get("matrix")
    assert len(topic.partitions) == 12
    assert sum(p.high_watermark for p in topic.partitions) == 1000
    got = consume(client, server.bootstrap, "matrix", f"g-{client}", 1000)
    assert len(got) == 1000 and len(set(got)) == 1000
    assert {p for p, _ in got} == set(range(12))


@pytest.mark.parametrize("client", CLIENTS)
def test_new_consumer_resumes_at_committed_offsets(server, client):
    produce(client, server.bootstrap, "resume", 300)
    first = consume(client, server.bootstrap, "resume", "resumers", 300)
    assert len(set(first)) == 300
    server.call(lambda: server.app.coordinator.wait_for("resumers", state="Empty", timeout=30))
    produce(client, server.bootstrap, "resume", 120)
    second = consume(client, server.bootstrap, "resume", "resumers", 120)
    assert len(second) == 120 and not set(second) & set(first)
    ends = {i: p.high_watermark for i, p in enumerate(server.app.broker.topics.get("resume").partitions)}
    assert max(o for _, o in second) < max(ends.values())
    err, offsets = server.call(lambda: server.app.coordinator.fetch_offsets("resumers", None))
    assert {(f.partition, f.offset) for f in offsets} == {(i, e) for i, e in ends.items() if e > 0}
