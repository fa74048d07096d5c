"""The four stock clients behind one small interface, for scenario tests.

consume(...) returns the (partition, offset) of every record it got, after
committing them (synchronously) when `commit` is set.
"""
from __future__ import annotations

import asyncio
import time

from kcoord.conformance import javaclient
from kcoord.conformance.member import subscribe_kafka_python

# "java" runs kafka-clients 3.9.1, "java4" kafka-clients 4.3.1 (kcoord.conformance.javaclient).
CLIENTS = ["kafka-python", "aiokafka", "confluent", "java", "java4"]


def produce(client: str, bootstrap: str, topic: str, count: int, idempotent: bool = False) -> None:
    """`count` records k<i>/v<i> in order; `idempotent` turns idempotence on where it is not the
    client's default (the Java producer's default since kafka-clients 3.0)."""
    if client == "kafka-python":
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                          **({"enable_idempotence": True, "acks": "all"} if idempotent else {}))
        for i in range(count):
            p.send(topic, key=b"k%d" % i, value=b"v%d" % i)
        p.flush()
        p.close()
    elif client == "aiokafka":
        from aiokafka import AIOKafkaProducer

        async def go():
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                 **({"enable_idempotence": True, "acks": "all"} if idempotent else {}))
            await p.start()
            try:
                for i in range(count):
                    await p.send(topic, key=b"k%d" % i, value=b"v%d" % i)
                await p.flush()
            finally:
                await p.stop()

        asyncio.run(go())
    elif client == "confluent":
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                      **({"enable.idempotence": True} if idempotent else {})})
        for i in range(count):
            p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
        assert p.flush(30) == 0
    else:
        javaclient.run("produce", "--bootstrap", bootstrap, "--topic", topic, "--count", str(count),
                       version=javaclient.CLIENT_VERSIONS[client])


def consume(client: str, bootstrap: str, topic: str, group: str, count: int, commit: bool = True,
            timeout: float = 60) -> list[tuple[int, int]]:
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout
    if client == "kafka-python":
        from kafka import KafkaConsumer

        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False)
        subscribe_kafka_python(c, [topic])
        try:
            while len(got) < count and time.monotonic() < deadline:
                for records in c.poll(timeout_ms=500).values():
                    got += [(r.partition, r.offset) for r in records]
            if commit:
                c.commit()
        finally:
            c.close()
    elif client == "aiokafka":
        from aiokafka import AIOKafkaConsumer

        async def go():
            c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                 auto_offset_reset="earliest", enable_auto_commit=False)
            await c.start()
            try:
                while len(got) < count and time.monotonic() < deadline:
                    for records in (await c.getmany(timeout_ms=500)).values():
                        got.extend((r.partition, r.offset) for r in records)
                if commit:
                    await c.commit()
            finally:
                await c.stop()

        asyncio.run(go())
    elif client == "confluent":
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([topic])
        try:
            while len(got) < count and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append((m.partition(), m.offset()))
            if commit and got:
                c.commit(asynchronous=False)
        finally:
            c.close()
    else:
        args = ["--bootstrap", bootstrap, "--topic", topic, "--group", group, "--count", str(count),
                "--max-seconds", str(int(timeout))]
        events = javaclient.run("consume", *args, *(["--commit"] if commit else []), timeout=timeout + 60,
                                version=javaclient.CLIENT_VERSIONS[client])
        for e in events:
            if e["event"] == "records":
                got += [tuple(x) for x in e["offsets"]]
    return got
