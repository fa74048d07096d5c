"""Example static group member with aiokafka (see examples/README.md)."""
from __future__ import annotations

import asyncio
import os
import signal

from aiokafka import AIOKafkaConsumer


async def main() -> None:
    stop = asyncio.Event()
    # PID 1 in a container ignores SIGTERM unless a handler is installed.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    consumer = AIOKafkaConsumer(
        os.environ.get("TOPIC", "example-events"),
        bootstrap_servers=os.environ.get("BOOTSTRAP", "kcoord:9092"),
        group_id=os.environ.get("GROUP", "example-static"),
        group_instance_id=os.environ["INSTANCE_ID"],
        client_id=os.environ.get("CLIENT_ID", "example-aiokafka"),
        session_timeout_ms=int(os.environ.get("SESSION_MS", "45000")),
        heartbeat_interval_ms=3000,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    print(f"aiokafka consumer {os.environ['INSTANCE_ID']} started", flush=True)
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=1000)
            for tp, records in batches.items():
                for r in records:
                    print(f"{tp.topic}[{tp.partition}]@{r.offset}: {r.value!r}", flush=True)
    finally:
        await consumer.stop()  # static member: commits, no LeaveGroup
        print("closed", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
