"""Capture real clients' traffic against kcoord for the golden decode tests.

    .venv/bin/python -m tests.golden.capture [client ...]

Each client (kafka-python, aiokafka, confluent-kafka, Java) produces a few
records and then runs a group consumer; every request frame and its response
are written to tests/golden/captures/<client>.jsonl as hex, in order. Rerun it
when a client version changes; the golden tests then say what moved.
"""
from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

from kcoord.testing.plugin import start_server

OUT = Path(__file__).with_name("captures")
MAX_REQUESTS = 40
TOPIC, GROUP, RECORDS = "golden", "golden-group", 20


class Recorder:
    def __init__(self):
        self.frames: list[dict] = []
        self.requests = 0
        self.lock = threading.Lock()

    def __call__(self, conn, direction, payload):
        with self.lock:
            if direction == "request":
                if self.requests >= MAX_REQUESTS:
                    return
                self.requests += 1
            elif not any(f["conn"] == conn.id and f["dir"] == "request" for f in self.frames):
                return
            if direction == "response" and len(payload) > 65536:
                return
            self.frames.append({"dir": direction, "conn": conn.id, "hex": payload.hex()})


def kafka_python(bootstrap):
    from kafka import KafkaConsumer, KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="golden-kafka-python")
    for i in range(RECORDS):
        p.send(TOPIC, key=b"k%d" % i, value=b"v%d" % i)
    p.flush()
    p.close()
    c = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, client_id="golden-kafka-python",
                      auto_offset_reset="earliest", consumer_timeout_ms=4000)
    for _ in c:
        pass
    c.close()


def aiokafka(bootstrap):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="golden-aiokafka")
        await p.start()
        for i in range(RECORDS):
            await p.send(TOPIC, key=b"k%d" % i, value=b"v%d" % i)
        await p.stop()
        c = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, client_id="golden-aiokafka",
                             auto_offset_reset="earliest")
        await c.start()
        try:
            await c.getmany(timeout_ms=4000)
        finally:
            await c.stop()

    asyncio.run(go())


def confluent(bootstrap):
    from confluent_kafka import Consumer, Producer

    p = Producer({"bootstrap.servers": bootstrap, "client.id": "golden-confluent"})
    for i in range(RECORDS):
        p.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i)
    p.flush(10)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": "golden-confluent",
                  "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    end = time.time() + 4
    while time.time() < end:
        c.poll(0.2)
    c.close()


def java(bootstrap):
    from kcoord.conformance import javaclient

    javaclient.run("produce", "--bootstrap", bootstrap, "--topic", TOPIC, "--count", str(RECORDS))
    javaclient.run("consume", "--bootstrap", bootstrap, "--topic", TOPIC, "--group", GROUP,
                   "--max-seconds", "4", "--count", str(RECORDS))


CLIENTS = {"kafka-python": kafka_python, "aiokafka": aiokafka, "confluent": confluent, "java": java}


def capture(name: str) -> Path:
    server = start_server(default_partitions=3)
    recorder = Recorder()
    server.app.server.frame_observers.append(recorder)
    try:
        CLIENTS[name](server.bootstrap)
    finally:
        server.stop()
    path = OUT / f"{name}.jsonl"
    OUT.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(f) + "\n" for f in recorder.frames))
    return path


if __name__ == "__main__":
    for client in sys.argv[1:] or CLIENTS:
        print(client, capture(client))
