"""The transactional side of the three Python clients behind one small interface, for tests
that run the same scenario with each (tests/integration/clients.py has their plain side).

    with txn_session("confluent") as s:
        p = s.producer(bootstrap, "tx-1")              # init_transactions done
        p.begin(); p.send(topic, 0, b"v"); p.commit()
        s.read(bootstrap, topic, READ_COMMITTED)       # partition -> [value, ...] up to the end

The broker-neutral waits (wait_stable, stable_committed) speak the protocol: a commit or an
abort returns once the coordinator has decided, before its markers are in the partitions,
so a reader first waits for the partitions, and an offsets check for the group, to settle.
"""
from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager

from kcoord.testing.brokers import end_offsets

TXN_CLIENTS = ["confluent", "kafka-python", "aiokafka"]
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
UNSTABLE_OFFSET_COMMIT = 88
WAIT = 60.0


# ---- protocol-level waits ------------------------------------------------------------------

def latest_offsets(bootstrap: str, topic: str, partitions: list[int], isolation: int) -> dict[int, int]:
    """ListOffsets LATEST per partition (-1 where it errs): the high watermark with isolation
    level 0, the last stable offset with 1 (read_committed)."""
    from kcoord.protocol_client import Connection

    with Connection.to(bootstrap) as conn:
        answer = conn.call(2, conn.version(2, 7, 2), {"replica_id": -1, "isolation_level": isolation, "topics": [
            {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in partitions]}]})
    return {p.partition_index: (p.offset if p.error_code == 0 else -1) for t in answer.topics for p in t.partitions}


def wait_stable(bootstrap: str, topic: str, partitions: list[int], timeout: float = WAIT) -> dict[int, int]:
    """Until no partition has an open transaction (ListOffsets' read_committed end, the last
    stable offset, equals its read_uncommitted end); returns those ends."""
    deadline = time.monotonic() + timeout
    while True:
        stable = latest_offsets(bootstrap, topic, partitions, 1)
        high = latest_offsets(bootstrap, topic, partitions, 0)
        if stable == high and -1 not in high.values():
            return high
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}: last stable offsets {stable} never reached the ends {high}")
        time.sleep(0.05)


def stable_committed(bootstrap: str, group: str, topic: str, partitions: list[int],
                     timeout: float = WAIT) -> dict[int, int]:
    """The group's committed offsets of the topic's partitions once none is pending in a
    transaction: OffsetFetch with require_stable (KIP-447) until no UNSTABLE_OFFSET_COMMIT."""
    from kcoord.protocol_client import Admin, ProtocolError
    from wire.errors import ErrorCode

    deadline = time.monotonic() + timeout
    while True:
        with Admin(bootstrap) as admin:
            conn = admin.coordinator(group)
            answer = conn.call(9, 7, {"group_id": group, "require_stable": True,
                                      "topics": [{"name": topic, "partition_indexes": partitions}]})
        parts = {p.partition_index: p for t in answer.topics for p in t.partitions}
        errors = {p.error_code for p in parts.values()} | {answer.error_code}
        if errors == {0}:
            return {i: p.committed_offset for i, p in parts.items()}
        if errors - {0, UNSTABLE_OFFSET_COMMIT}:
            raise ProtocolError(f"OffsetFetch {group}: {[ErrorCode(e).name for e in errors]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"group {group}: offsets of {topic} still pending after {timeout:g}s")
        time.sleep(0.05)


def write_transactions(producer, topic: str, partitions: list[int], plan) -> list[tuple[int, int, bytes, bool]]:
    """One transaction per (commit?, records per partition) of `plan`, over `partitions` of a new
    topic that only this producer writes; returns (partition, offset, value, committed) of each
    data record, at the offsets it gets there (each transaction ends with one marker)."""
    written, nxt = [], {p: 0 for p in partitions}
    for txn, (commit, count) in enumerate(plan):
        producer.begin()
        for i in range(count):
            for partition in partitions:
                value = b"t%d-p%d-%d" % (txn, partition, i)
                producer.send(topic, partition, value)
                written.append((partition, nxt[partition], value, commit))
                nxt[partition] += 1
        # An abort drops what the client has not sent yet (librdkafka purges its queue): the
        # aborted records go to the partitions first, as a reader must skip them.
        producer.flush()
        producer.commit() if commit else producer.abort()
        nxt = {p: offset + 1 for p, offset in nxt.items()}
    return written


# ---- the clients ---------------------------------------------------------------------------

class _Reader:
    """Reads each partition from its start until its position reaches the end (past any control
    batch, as the Java consumer's is), so a record the isolation level should hide would be read."""

    def read(self, bootstrap: str, topic: str, isolation: str) -> dict[int, list[bytes]]:
        ends = wait_stable(bootstrap, topic, sorted(end_offsets(bootstrap, topic)))
        got: dict[int, list[bytes]] = {p: [] for p in ends}
        self._read(bootstrap, topic, isolation, ends, got)
        return got


class ConfluentSession(_Reader):
    def producer(self, bootstrap: str, transactional_id: str, **config) -> "ConfluentProducer":
        return ConfluentProducer(bootstrap, transactional_id, config)

    def consumer(self, bootstrap: str, topic: str, group: str) -> "ConfluentConsumer":
        return ConfluentConsumer(bootstrap, topic, group)

    @staticmethod
    def _read(bootstrap, topic, isolation, ends, got):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

        # librdkafka's position does not count the control batch that ends a partition:
        # its end-of-partition event, raised where the fetch reaches the end, marks the end.
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-reader", "isolation.level": isolation,
                      "enable.auto.commit": False, "enable.partition.eof": True})
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        pending = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + WAIT
        try:
            while pending and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    pending.discard(m.partition())
                else:
                    got[m.partition()].append(m.value())
        finally:
            c.close()
        assert not pending, f"partitions {sorted(pending)} of {topic} not read to their end"


class _Transactional:
    """What every client's producer does with its begin/send/flush/commit/abort."""

    def transact(self, topic: str, partition: int, *values: bytes, end: str | None = "commit") -> None:
        """One transaction of `values` to the partition, sent, then ended by "commit" or "abort",
        or (None) left open."""
        self.begin()
        for value in values:
            self.send(topic, partition, value)
        self.flush()
        if end is not None:
            {"commit": self.commit, "abort": self.abort}[end]()


class ConfluentProducer(_Transactional):
    def __init__(self, bootstrap: str, transactional_id: str, config: dict):
        from confluent_kafka import Producer

        self.p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, **config})
        self.p.init_transactions(WAIT)

    def begin(self):
        self.p.begin_transaction()

    def send(self, topic: str, partition: int, value: bytes):
        self.p.produce(topic, value=value, partition=partition)

    def flush(self):
        assert self.p.flush(WAIT) == 0

    def send_offsets(self, offsets: dict[tuple[str, int], int], consumer: "ConfluentConsumer"):
        from confluent_kafka import TopicPartition

        self.p.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                           consumer.c.consumer_group_metadata(), WAIT)

    def commit(self):
        self.p.commit_transaction(WAIT)

    def abort(self):
        self.p.abort_transaction(WAIT)

    def close(self):
        self.p.flush(0)


class ConfluentConsumer:
    def __init__(self, bootstrap: str, topic: str, group: str):
        from confluent_kafka import Consumer

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": READ_COMMITTED,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.c.subscribe([topic])

    def poll(self) -> list[tuple[int, int, bytes]]:
        return [(m.partition(), m.offset(), m.value()) for m in self.c.consume(100, 0.5) if m.error() is None]

    def close(self):
        self.c.close()


class KafkaPythonSession(_Reader):
    def producer(self, bootstrap: str, transactional_id: str, **config) -> "KafkaPythonProducer":
        return KafkaPythonProducer(bootstrap, transactional_id, config)

    def consumer(self, bootstrap: str, topic: str, group: str) -> "KafkaPythonConsumer":
        return KafkaPythonConsumer(bootstrap, topic, group)

    @staticmethod
    def _read(bootstrap, topic, isolation, ends, got):
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                          auto_offset_reset="earliest")
        tps = {p: TopicPartition(topic, p) for p in ends}
        c.assign(list(tps.values()))
        c.seek_to_beginning()
        deadline = time.monotonic() + WAIT
        try:
            while any(c.position(tps[p]) < end for p, end in ends.items()) and time.monotonic() < deadline:
                for tp, records in c.poll(timeout_ms=500).items():
                    got[tp.partition] += [r.value for r in records]
            positions = {p: c.position(tp) for p, tp in tps.items()}
        finally:
            c.close()
        assert positions == ends, f"{topic}: read to {positions}, not to the ends {ends}"


class KafkaPythonProducer(_Transactional):
    def __init__(self, bootstrap: str, transactional_id: str, config: dict):
        from kafka import KafkaProducer

        self.p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id, **config)
        self.p.init_transactions()

    def begin(self):
        self.p.begin_transaction()

    def send(self, topic: str, partition: int, value: bytes):
        self.p.send(topic, value=value, partition=partition)

    def flush(self):
        self.p.flush(WAIT)

    def send_offsets(self, offsets: dict[tuple[str, int], int], consumer: "KafkaPythonConsumer"):
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        self.p.send_offsets_to_transaction({TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                            for (t, p), o in offsets.items()}, consumer.c.group_metadata())

    def commit(self):
        from kafka.errors import KafkaError

        try:
            self.p.commit_transaction()
        except KafkaError as err:
            # kafka-python 3 answers a produce refused with INVALID_PRODUCER_EPOCH (as Kafka refuses
            # a fenced producer's) by bumping its epoch (KIP-360). A commit asked for before the
            # broker answers the bump's InitProducerId fails on the client's own state machine
            # (a bare KafkaError, "Invalid transition"). The broker's answer decides the outcome:
            # the error the producer ends in once the bump is answered is the one raised.
            manager = self.p._transaction_manager
            if type(err) is not KafkaError:
                raise
            deadline = time.monotonic() + WAIT
            while manager.is_bumping_epoch() and time.monotonic() < deadline:
                time.sleep(0.02)
            if manager.has_fatal_error() and manager.last_error is not None:
                raise manager.last_error from err
            raise

    def abort(self):
        self.p.abort_transaction()

    def close(self):
        self.p.close(timeout=5)


class KafkaPythonConsumer:
    def __init__(self, bootstrap: str, topic: str, group: str):
        from kafka import KafkaConsumer

        from kcoord.conformance.member import subscribe_kafka_python

        self.c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, isolation_level=READ_COMMITTED,
                               auto_offset_reset="earliest", enable_auto_commit=False)
        subscribe_kafka_python(self.c, [topic])

    def poll(self) -> list[tuple[int, int, bytes]]:
        return [(tp.partition, r.offset, r.value) for tp, records in self.c.poll(timeout_ms=500).items()
                for r in records]

    def close(self):
        self.c.close()


class AiokafkaSession(_Reader):
    """aiokafka's objects live on the loop they started on: the session's own, which every
    call of its producers and consumers runs."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def make(self, cls, *args, **kwargs):
        """An aiokafka object, created on the session's loop (its constructors ask for the running one)."""
        async def create():
            return cls(*args, **kwargs)
        return self.run(create())

    def close(self):
        self.loop.close()

    def producer(self, bootstrap: str, transactional_id: str, **config) -> "AiokafkaProducer":
        return AiokafkaProducer(self, bootstrap, transactional_id, config)

    def consumer(self, bootstrap: str, topic: str, group: str) -> "AiokafkaConsumer":
        return AiokafkaConsumer(self, bootstrap, topic, group)

    def _read(self, bootstrap, topic, isolation, ends, got):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def go():
            c = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
            await c.start()
            tps = {p: TopicPartition(topic, p) for p in ends}
            try:
                c.assign(list(tps.values()))
                await c.seek_to_beginning()
                deadline = time.monotonic() + WAIT
                while time.monotonic() < deadline:
                    positions = {p: await c.position(tp) for p, tp in tps.items()}
                    if all(positions[p] >= end for p, end in ends.items()):
                        break
                    for tp, records in (await c.getmany(timeout_ms=500)).items():
                        got[tp.partition] += [r.value for r in records]
            finally:
                await c.stop()
            assert positions == ends, f"{topic}: read to {positions}, not to the ends {ends}"

        self.run(go())


class AiokafkaProducer(_Transactional):
    def __init__(self, session: AiokafkaSession, bootstrap: str, transactional_id: str, config: dict):
        from aiokafka import AIOKafkaProducer

        self.s = session
        self.p = session.make(AIOKafkaProducer, bootstrap_servers=bootstrap, transactional_id=transactional_id,
                              **config)
        self.s.run(self.p.start())
        # start() only sets InitProducerId going; aiokafka has no init_transactions() that waits
        # for it, and a fencing test needs the second producer's epoch in place before going on.
        self.s.run(self.p._txn_manager.wait_for_pid())

    def begin(self):
        self.s.run(self.p.begin_transaction())

    def send(self, topic: str, partition: int, value: bytes):
        self.s.run(self.p.send(topic, value=value, partition=partition))

    def flush(self):
        self.s.run(self.p.flush())

    def send_offsets(self, offsets: dict[tuple[str, int], int], consumer: "AiokafkaConsumer"):
        from aiokafka import TopicPartition

        self.s.run(self.p.send_offsets_to_transaction({TopicPartition(t, p): o for (t, p), o in offsets.items()},
                                                      consumer.group))

    def commit(self):
        self.s.run(self.p.commit_transaction())

    def abort(self):
        self.s.run(self.p.abort_transaction())

    def close(self):
        self.s.run(self.p.stop())


class AiokafkaConsumer:
    def __init__(self, session: AiokafkaSession, bootstrap: str, topic: str, group: str):
        from aiokafka import AIOKafkaConsumer

        self.s, self.group = session, group
        self.c = session.make(AIOKafkaConsumer, topic, bootstrap_servers=bootstrap, group_id=group,
                              isolation_level=READ_COMMITTED, auto_offset_reset="earliest", enable_auto_commit=False)
        self.s.run(self.c.start())

    def poll(self) -> list[tuple[int, int, bytes]]:
        batch = self.s.run(self.c.getmany(timeout_ms=500))
        return [(tp.partition, r.offset, r.value) for tp, records in batch.items() for r in records]

    def close(self):
        self.s.run(self.c.stop())


@contextmanager
def txn_session(client: str):
    session = {"confluent": ConfluentSession, "kafka-python": KafkaPythonSession, "aiokafka": AiokafkaSession}[client]()
    try:
        yield session
    finally:
        if hasattr(session, "close"):
            session.close()
