"""confluent-kafka with group.protocol=consumer (KIP-848) on kcoord and on the reference Kafka:
a member consumes everything, a second one takes half the partitions, commits land, and the
group is Empty once both closed."""
import time
import uuid

from confluent_kafka import Consumer, Producer

from kcoord.protocol_client import Admin, Connection
from kcoord.testing.brokers import committed, create_topic

DESCRIBE = 69


def _consumer(bootstrap, group, topic, name):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "client.id": name})
    c.subscribe([topic])
    return c


def _describe(bootstrap, group):
    with Connection.to(bootstrap, 10.0) as conn:
        return conn.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}).groups[0]


def test_two_consumer_protocol_members_share_a_topic(broker_any):
    bootstrap = broker_any.bootstrap
    topic, group = f"kip848-{uuid.uuid4().hex[:8]}", f"g848-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 4)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 4)
    producer.flush(30)

    c1 = _consumer(bootstrap, group, topic, "c1")
    c2 = None
    try:
        got, deadline = 0, time.monotonic() + 60
        while got < 40 and time.monotonic() < deadline:
            m = c1.poll(0.5)
            if m is not None and not m.error():
                got += 1
        assert got == 40
        assert sorted(tp.partition for tp in c1.assignment()) == [0, 1, 2, 3]

        c2 = _consumer(bootstrap, group, topic, "c2")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            c1.poll(0.2)
            c2.poll(0.2)
            if len(c1.assignment()) == 2 and len(c2.assignment()) == 2:
                break
        a1, a2 = {tp.partition for tp in c1.assignment()}, {tp.partition for tp in c2.assignment()}
        assert len(a1) == len(a2) == 2 and a1 | a2 == {0, 1, 2, 3}

        d = _describe(bootstrap, group)
        assert (d.error_code, d.group_state, len(d.members)) == (0, "Stable", 2)
        assert {m.member_epoch for m in d.members} == {d.assignment_epoch}
        # What `kcoord groups --describe` and `kcoord wait` read: ConsumerGroupDescribe behind DescribeGroups.
        with Admin(bootstrap) as admin:
            view = admin.describe_group(group)
        assert (view.group_state, len(view.members)) == ("Stable", 2)
        assert sorted(tp for m in view.members for tp in m.partitions) == [(topic, p) for p in range(4)]
        # Auto-commit (and the commit before a revocation) with member epochs (OffsetCommit v9+).
        deadline = time.monotonic() + 30
        while committed(bootstrap, group) != {(topic, p): 10 for p in range(4)} and time.monotonic() < deadline:
            c1.poll(0.2)
            c2.poll(0.2)
        assert committed(bootstrap, group) == {(topic, p): 10 for p in range(4)}
    finally:
        for c in (c1, c2):
            if c is not None:
                c.close()
    d = _describe(bootstrap, group)
    assert (d.error_code, d.group_state, len(d.members)) == (0, "Empty", 0)


def test_java_console_consumer_with_the_consumer_protocol(broker_any):
    """Kafka 4.3.1's own console consumer (the Java client) with group.protocol=consumer: it
    reads everything, commits, leaves; kafka-consumer-groups then shows the offsets."""
    from kcoord.testing.kafka_tools import run_tool

    bootstrap = broker_any.bootstrap
    topic, group = f"kip848j-{uuid.uuid4().hex[:8]}", f"g848j-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 3)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(12):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 3)
    producer.flush(30)
    code, out, err = run_tool("console-consumer", bootstrap, "--topic", topic, "--group", group, "--from-beginning",
                      "--max-messages", "12", "--timeout-ms", "60000",
                      "--command-property", "group.protocol=consumer")
    assert code == 0 and sorted(out.split()) == sorted(f"v{i}" for i in range(12)), err[-2000:]
    assert committed(bootstrap, group) == {(topic, p): 4 for p in range(3)}
    d = _describe(bootstrap, group)
    assert (d.error_code, d.group_state, len(d.members)) == (0, "Empty", 0)
