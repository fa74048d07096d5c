"""One consumer-group member in its own process, for scenarios that restart or kill members.

    python -m kcoord.conformance.member --client kafka-python --bootstrap B --topic T --group G
        [--instance-id I] [--session-ms 6000] [--assignor range|roundrobin|cooperative-sticky]
        [--group-protocol classic|consumer] [--remote-assignor uniform|range] [--commit] [--hold]

Prints JSON lines: {"event": "assigned"|"revoked", "partitions": [...]}, {"event": "fenced"},
and polls until SIGTERM (clean close: LeaveGroup) or SIGKILL (no goodbye).

--group-protocol consumer (KIP-848) is confluent-kafka's only (librdkafka >= 2.10): it sets
group.protocol=consumer (and group.remote.assignor) and leaves out the classic-only configs
(session.timeout.ms, heartbeat.interval.ms, partition.assignment.strategy). A --topic starting
with "^" is a regex subscription (librdkafka's convention). --commit commits synchronously
after every message (confluent-kafka only). --hold loads the client, prints {"event": "ready"}
and waits for a line on stdin before it joins (as the Java driver's --hold).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import threading
import time

stop = threading.Event()
JOIN_POLL_MS = 5000


def emit(**event):
    print(json.dumps(event), flush=True)


def subscribe_kafka_python(consumer, topics, listener=None, timeout_ms: int = 10000) -> None:
    """subscribe(), then wait for the metadata answer that follows it, as the Java client does.

    kafka-python (3.0.12) waits for fresh metadata before its first join only for pattern
    subscriptions. Otherwise a leader assigns from an empty snapshot, sees the topic's
    partitions a moment later and rejoins by itself (a generation more, on Kafka as on
    kcoord). And if poll()'s timeout ends while that rejoin's JoinGroup/SyncGroup is in
    flight, the member never takes its result: need_rejoin() has turned false, so the next
    poll does not look at the finished join again, and the member neither heartbeats nor
    gets partitions until its session expires (seen with DEBUG logs: SyncGroup answered,
    then only "need_rejoin: False"). Tests of the broker must not depend on that client race."""
    consumer.subscribe(topics, listener=listener)
    coordinator = consumer._coordinator
    cluster = coordinator._cluster
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        # An answer requested before the subscription may not name the topics: wait for
        # it, then for one requested now. A topic just auto-created can come back without
        # partitions (LEADER_NOT_AVAILABLE on Kafka): ask again until it has them.
        if cluster.metadata_refresh_in_progress:
            coordinator._net.run(coordinator._manager.wait_for, cluster.request_update(), timeout_ms)
        coordinator._net.run(coordinator._manager.wait_for, cluster.request_update(), timeout_ms)
        if all(cluster.partitions_for_topic(t) for t in topics) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def poll_kafka_python(consumer):
    """One poll() of a member's loop. A (re)join gets a poll of its own with time to finish:
    kafka-python (3.0.12) keeps a JoinGroup/SyncGroup that outlives poll()'s timeout in flight,
    but if it ends before the next poll() looks at it, that poll throws the finished result away
    and joins again, one JoinGroup/SyncGroup more (a CI run of 2026-11-27 saw it when the first
    poll's 200 ms were mostly spent finding the coordinator)."""
    return consumer.poll(timeout_ms=JOIN_POLL_MS if consumer._coordinator.need_rejoin() else 200)


def run_kafka_python(a):
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                 "sticky": StickyPartitionAssignor}
    kw = {"group_instance_id": a.instance_id} if a.instance_id else {}
    c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, session_timeout_ms=a.session_ms,
                      heartbeat_interval_ms=min(1000, a.session_ms // 3), auto_offset_reset="earliest",
                      partition_assignment_strategy=[assignors[a.assignor]], **kw)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit(event="revoked", partitions=sorted(p.partition for p in revoked))

        def on_partitions_assigned(self, assigned):
            emit(event="assigned", partitions=sorted(p.partition for p in assigned))

    subscribe_kafka_python(c, [a.topic], listener=Listener())
    try:
        while not stop.is_set():
            poll_kafka_python(c)
    except Exception as exc:
        emit(event="error", error=type(exc).__name__, message=str(exc))
        if "Fenced" in type(exc).__name__:
            emit(event="fenced")
        return
    c.close()


def run_aiokafka(a):
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            emit(event="revoked", partitions=sorted(p.partition for p in revoked))

        async def on_partitions_assigned(self, assigned):
            emit(event="assigned", partitions=sorted(p.partition for p in assigned))

    async def go():
        kw = {"group_instance_id": a.instance_id} if a.instance_id else {}
        c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, session_timeout_ms=a.session_ms,
                             heartbeat_interval_ms=min(1000, a.session_ms // 3), auto_offset_reset="earliest",
                             partition_assignment_strategy=[assignors[a.assignor]], **kw)
        await c.start()
        c.subscribe([a.topic], listener=Listener())
        try:
            while not stop.is_set():
                await c.getmany(timeout_ms=200)
        except Exception as exc:
            emit(event="error", error=type(exc).__name__, message=str(exc))
            if "Fenced" in type(exc).__name__:
                emit(event="fenced")
            return
        await c.stop()

    asyncio.run(go())


def run_confluent(a):
    from confluent_kafka import Consumer, KafkaError

    conf = {"bootstrap.servers": a.bootstrap, "group.id": a.group, "auto.offset.reset": "earliest"}
    if a.group_protocol == "consumer":
        conf["group.protocol"] = "consumer"
        if a.remote_assignor:
            conf["group.remote.assignor"] = a.remote_assignor
    else:
        conf.update({"session.timeout.ms": a.session_ms, "heartbeat.interval.ms": min(1000, a.session_ms // 3),
                     "partition.assignment.strategy": a.assignor})
    if a.commit:
        conf["enable.auto.commit"] = False
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    c = Consumer(conf)
    owned: set[tuple[str, int]] = set()

    def pairs(parts):  # [topic, partition]: Member keeps the partitions and, for regexes, the topics
        return sorted([p.topic, p.partition] for p in parts)

    def on_assign(consumer, parts):
        owned.update((p.topic, p.partition) for p in parts)
        emit(event="assigned", partitions=pairs(parts), owned=sorted(map(list, owned)))

    def on_revoke(consumer, parts):
        owned.difference_update((p.topic, p.partition) for p in parts)
        emit(event="revoked", partitions=pairs(parts), owned=sorted(map(list, owned)))

    def on_lost(consumer, parts):
        emit(event="lost", partitions=pairs(parts))
        on_revoke(consumer, parts)

    c.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not stop.is_set():
        m = c.poll(0.2)
        if m is not None and m.error() is None and a.commit:
            c.commit(message=m, asynchronous=False)
            emit(event="committed", partition=[m.topic(), m.partition()], offset=m.offset() + 1)
        if m is not None and m.error() is not None:
            # librdkafka turns FENCED_INSTANCE_ID into a fatal error (_FATAL), or _FENCED.
            if m.error().code() in (KafkaError._FENCED, KafkaError._FATAL) and "fenced" in str(m.error()).lower():
                emit(event="fenced")
                return
            emit(event="error", error=str(m.error()))
    c.close()


RUNNERS = {"kafka-python": run_kafka_python, "aiokafka": run_aiokafka, "confluent": run_confluent}


def member_arguments(clients, session_ms: int) -> argparse.ArgumentParser:
    """The arguments every member driver takes (this one, verifiable_member)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True, choices=sorted(clients))
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--instance-id")
    ap.add_argument("--session-ms", type=int, default=session_ms)
    ap.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    return ap


def main():
    ap = member_arguments(RUNNERS, 6000)
    ap.add_argument("--assignor", default="range")
    ap.add_argument("--remote-assignor")
    ap.add_argument("--commit", action="store_true")
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    if a.client != "confluent" and (a.group_protocol != "classic" or a.commit):
        ap.error(f"--group-protocol consumer and --commit are confluent's only, not {a.client}'s")
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    emit(event="started")
    if a.hold:
        __import__({"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent": "confluent_kafka"}[a.client])
        emit(event="ready")
        sys.stdin.readline()
    RUNNERS[a.client](a)
    emit(event="closed")


if __name__ == "__main__":
    sys.exit(main())
