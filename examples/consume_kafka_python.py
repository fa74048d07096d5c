"""Example static group member with kafka-python (see examples/README.md)."""
from __future__ import annotations

import os
import signal

from kafka import KafkaConsumer


def main() -> None:
    stopping = []
    # PID 1 in a container ignores SIGTERM unless a handler is installed.
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = KafkaConsumer(
        os.environ.get("TOPIC", "example-events"),
        bootstrap_servers=os.environ.get("BOOTSTRAP", "kcoord:9092"),
        group_id=os.environ.get("GROUP", "example-static"),
        group_instance_id=os.environ["INSTANCE_ID"],
        client_id=os.environ.get("CLIENT_ID", "example-kafka-python"),
        session_timeout_ms=int(os.environ.get("SESSION_MS", "45000")),
        heartbeat_interval_ms=3000,
        auto_offset_reset="earliest",
    )
    print(f"kafka-python consumer {os.environ['INSTANCE_ID']} started", flush=True)
    while not stopping:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            for r in records:
                print(f"{tp.topic}[{tp.partition}]@{r.offset}: {r.value!r}", flush=True)
    consumer.close()  # static member: commits, no LeaveGroup
    print("closed", flush=True)


if __name__ == "__main__":
    main()
