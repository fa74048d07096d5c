"""Stock clients end to end: produce, consume in a group, resume from commits. Each case runs
on kcoord and on the reference Apache Kafka (broker_any), observed only over the protocol."""
import uuid

import pytest

from kcoord.testing.brokers import committed, create_topic, end_offsets, wait_group
from tests.integration.clients import CLIENTS, consume, produce

PARTITIONS = 12


def _topic(broker, stem: str, client: str) -> tuple[str, str]:
    """A topic with PARTITIONS partitions and a group name, both unique: the Kafka is shared by the session."""
    suffix = f"{client}-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, f"{stem}-{suffix}", PARTITIONS)
    return f"{stem}-{suffix}", f"g-{stem}-{suffix}"


@pytest.mark.parametrize("client", CLIENTS)
def test_produce_1000_then_consume_all_in_a_group(broker_any, client):
    b = broker_any.bootstrap
    topic, group = _topic(broker_any, "matrix", client)
    produce(client, b, topic, 1000)
    ends = end_offsets(b, topic)
    assert len(ends) == PARTITIONS and sum(ends.values()) == 1000
    got = consume(client, b, topic, group, 1000)
    assert len(got) == 1000 and len(set(got)) == 1000
    assert {p for p, _ in got} == set(range(PARTITIONS))


@pytest.mark.parametrize("client", CLIENTS)
def test_new_consumer_resumes_at_committed_offsets(broker_any, client):
    b = broker_any.bootstrap
    topic, group = _topic(broker_any, "resume", client)
    produce(client, b, topic, 300)
    first = consume(client, b, topic, group, 300)
    assert len(set(first)) == 300
    wait_group(b, group, state="Empty", members=0, timeout=30)
    produce(client, b, topic, 120)
    second = consume(client, b, topic, group, 120)
    assert len(second) == 120 and not set(second) & set(first)
    ends = end_offsets(b, topic)
    assert max(o for _, o in second) < max(ends.values())
    assert committed(b, group) == {(topic, i): e for i, e in ends.items() if e > 0}
