"""A consumer-group member that reports what it does as Kafka's VerifiableConsumer reports it,
for the Python clients: the failover scenarios watch every client through one vocabulary.

    python -m kcoord.conformance.verifiable_member --client kafka-python|aiokafka|confluent
        --bootstrap B --topic T --group G [--instance-id I] [--session-ms 10000]
        [--group-protocol classic|consumer]

JSON lines, as kafka-tools' VerifiableConsumer prints them (auto-commit off: it commits
synchronously after each batch it consumed): startup_complete, partitions_assigned,
partitions_revoked, records_consumed {count, partitions: [{topic, partition, count,
minOffset, maxOffset}]}, offsets_committed {offsets: [{topic, partition, offset}], success,
error}, shutdown_complete; and kcoord's own: poll_error {error} (a retriable error out of
kafka-python's poll, which it then calls again), group_member {member_id, generation}, after
each assignment (the generation where the client tells it). SIGTERM closes the consumer
(a dynamic member leaves its group); SIGKILL leaves without a word.
"""
from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading

from kcoord.conformance.member import member_arguments, subscribe_kafka_python

stop = threading.Event()


def emit(name: str, **fields) -> None:
    print(json.dumps({"name": name, **fields}), flush=True)


def _tps(parts) -> list[dict]:
    return [{"topic": t, "partition": p} for t, p in sorted(parts)]


def _consumed(batch: dict) -> dict:
    """Report `batch` ((topic, partition) -> offsets consumed, in order); what to commit after it
    ((topic, partition) -> the next offset), empty when nothing was consumed."""
    parts = [{"topic": t, "partition": p, "count": len(offs), "minOffset": offs[0], "maxOffset": offs[-1]}
             for (t, p), offs in sorted(batch.items()) if offs]
    if parts:
        emit("records_consumed", count=sum(p["count"] for p in parts), partitions=parts)
    return {(p["topic"], p["partition"]): p["maxOffset"] + 1 for p in parts}


def _batch(records: dict) -> dict:
    """kafka-python's and aiokafka's poll results as (topic, partition) -> offsets."""
    return {(tp.topic, tp.partition): [r.offset for r in rs] for tp, rs in records.items()}


def _committed(offsets: dict, error: BaseException | str | None = None) -> None:
    emit("offsets_committed", offsets=[{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(offsets.items())],
         success=error is None, **({"error": f"{type(error).__name__}: {error}" if isinstance(error, BaseException)
                                     else str(error)} if error is not None else {}))


def run_kafka_python(a) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.errors import KafkaError
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    kw = {"group_instance_id": a.instance_id} if a.instance_id else {}
    # reconnect_backoff_max_ms as Java's reconnect.backoff.max.ms (1 s): kafka-python's own 30 s
    # let a member whose coordinator's broker was bounced wait so long to reconnect that, in a
    # rolling bounce, the group had moved back to that broker by then and the member never
    # looked for its coordinator (seen in two full runs of 2026-11-26).
    c = KafkaConsumer(bootstrap_servers=a.bootstrap.split(","), group_id=a.group, session_timeout_ms=a.session_ms,
                      heartbeat_interval_ms=min(3000, a.session_ms // 3), auto_offset_reset="earliest",
                      enable_auto_commit=False, reconnect_backoff_max_ms=1000, **kw)

    def member() -> None:
        generation = c._coordinator._generation
        emit("group_member", member_id=generation.member_id, generation=generation.generation_id)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit("partitions_revoked", partitions=_tps((p.topic, p.partition) for p in revoked))

        def on_partitions_assigned(self, assigned):
            emit("partitions_assigned", partitions=_tps((p.topic, p.partition) for p in assigned))
            member()

    subscribe_kafka_python(c, [a.topic], listener=Listener())
    emit("startup_complete")
    while not stop.is_set():
        try:
            records = c.poll(timeout_ms=200)
        except KafkaError as err:
            # kafka-python 3.0 lets a refused connect to a broker that just went down out of
            # poll() (seen after its coordinator's broker stopped); Java's poll() retries such
            # errors inside, so the member reports it and polls again, as an application would.
            if not err.retriable:
                raise
            emit("poll_error", error=type(err).__name__)
            continue
        offsets = _consumed(_batch(records))
        if not offsets:
            continue
        try:
            c.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
            _committed(offsets)
        except Exception as err:
            _committed(offsets, err)
    c.close()


def run_aiokafka(a) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    async def go():
        kw = {"group_instance_id": a.instance_id} if a.instance_id else {}
        c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap.split(","), group_id=a.group,
                             session_timeout_ms=a.session_ms, heartbeat_interval_ms=min(3000, a.session_ms // 3),
                             auto_offset_reset="earliest", enable_auto_commit=False, **kw)

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                emit("partitions_revoked", partitions=_tps((p.topic, p.partition) for p in revoked))

            async def on_partitions_assigned(self, assigned):
                emit("partitions_assigned", partitions=_tps((p.topic, p.partition) for p in assigned))
                emit("group_member", member_id=c._coordinator.member_id, generation=c._coordinator.generation)

        await c.start()
        c.subscribe([a.topic], listener=Listener())
        emit("startup_complete")
        while not stop.is_set():
            offsets = _consumed(_batch(await c.getmany(timeout_ms=200)))
            if not offsets:
                continue
            try:
                await c.commit({TopicPartition(t, p): OffsetAndMetadata(o, "") for (t, p), o in offsets.items()})
                _committed(offsets)
            except Exception as err:
                _committed(offsets, err)
        await c.stop()

    asyncio.run(go())


def run_confluent(a) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    conf = {"bootstrap.servers": a.bootstrap, "group.id": a.group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    if a.group_protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": a.session_ms, "heartbeat.interval.ms": min(3000, a.session_ms // 3)})
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    c = Consumer(conf)

    def on_assign(consumer, parts):
        emit("partitions_assigned", partitions=_tps((p.topic, p.partition) for p in parts))
        emit("group_member", member_id=consumer.memberid(), generation=None)

    def on_revoke(consumer, parts):
        emit("partitions_revoked", partitions=_tps((p.topic, p.partition) for p in parts))

    c.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    emit("startup_complete")
    while not stop.is_set():
        messages = c.consume(num_messages=500, timeout=0.2)
        batch: dict = {}
        for m in messages:
            if m.error() is None:
                batch.setdefault((m.topic(), m.partition()), []).append(m.offset())
        offsets = _consumed(batch)
        if not offsets:
            continue
        try:
            c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
            _committed(offsets)
        except KafkaException as err:
            _committed(offsets, str(err.args[0]) if err.args else err)
    c.close()


RUNNERS = {"kafka-python": run_kafka_python, "aiokafka": run_aiokafka, "confluent": run_confluent}


def main() -> int:
    ap = member_arguments(RUNNERS, 10000)
    a = ap.parse_args()
    if a.group_protocol == "consumer" and a.client != "confluent":
        ap.error(f"{a.client} has no consumer group protocol (KIP-848); confluent has")
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    RUNNERS[a.client](a)
    emit("shutdown_complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
