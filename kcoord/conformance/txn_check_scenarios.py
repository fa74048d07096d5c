"""Raw-protocol scenarios of transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn, transactional Produce and read_committed Fetch, byte for byte through
`wire/`.

They join `kcoord check`'s raw rows under names starting "txn-". They speak the request versions
of Kafka's first transaction flow (InitProducerId, AddPartitionsToTxn, EndTxn v3: the client adds
partitions itself and the epoch stays across transactions), which every broker since 2.5 serves,
Kafka 4 too whatever its transaction.version. Every expectation is what Apache Kafka 4.3.1 answers
(tests/conformance/test_check_kcoord.py runs them against it). A broker that does not advertise
those versions gets the rows as skipped.
"""
from __future__ import annotations

import asyncio
import time

from kcoord.conformance.raw_scenarios import Broker, Outcome, Unsupported, _create_topic, _gid, _name
from kcoord.conformance.rawclient import RawConnection
from wire import records as R
from wire.errors import ErrorCode as E

PRODUCE, FETCH, METADATA, OFFSET_FETCH, FIND = 0, 1, 3, 9, 10
INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT, DESCRIBE_CONFIGS = 22, 24, 25, 26, 28, 32
# InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit v3 are the
# versions with PRODUCER_FENCED and without KIP-890's server-side partition adding; Produce v9
# and Fetch v12 the last ones naming topics; OffsetFetch v7 the first with require_stable.
VERSIONS = {INIT_PRODUCER_ID: 3, ADD_PARTITIONS: 3, ADD_OFFSETS: 3, END_TXN: 3, TXN_OFFSET_COMMIT: 3,
            PRODUCE: 9, FETCH: 12, METADATA: 9, OFFSET_FETCH: 7, DESCRIBE_CONFIGS: 1}
TXN_TIMEOUT_MS = 60000
# The broker's timed-out transactions are aborted by a task every
# transaction.abort.timed.out.transaction.cleanup.interval.ms (Kafka's default 10 s).
CLEANUP_INTERVAL = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
DEFAULT_CLEANUP_INTERVAL_MS = 10000
SHORT_TIMEOUT_MS = 1000
# What the timeout row waits at most, whatever the broker's interval: a broker whose wait would
# be longer gets the row skipped (check.SCENARIO_TIMEOUT is 120 s).
LONGEST_WAIT_S = 90.0
# EndTxn answers before the markers are in the partitions: how long the check waits for them.
MARKERS_S = 30.0


def _version(b: Broker, api: int) -> int:
    low, high = b.versions.get(api, (0, -1))
    want = VERSIONS[api]
    if not low <= want <= high:
        raise Unsupported(f"api {api} v{want} not advertised (broker: {low}-{high})")
    return want


_RETRIABLE = (E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE)


class Producer:
    """One transactional producer: a connection to its transaction coordinator, one to the
    leader of the partition it writes, its producer id, epoch and next sequence."""

    def __init__(self, b: Broker, transactional_id: str, timeout_ms: int = TXN_TIMEOUT_MS):
        self.b, self.transactional_id, self.timeout_ms = b, transactional_id, timeout_ms
        self.coordinator: RawConnection | None = None
        self.coordinator_node = -1
        self.leader: RawConnection | None = None
        self.producer_id, self.epoch, self.sequence = -1, -1, 0

    async def open(self) -> "Producer":
        async with RawConnection(self.b.host, self.b.port) as c:
            for _ in range(60):
                r = await c.call(FIND, 3, {"key": self.transactional_id, "key_type": 1})
                if r.error_code == 0:
                    break
                await asyncio.sleep(0.5)  # COORDINATOR_NOT_AVAILABLE while __transaction_state is created
            else:
                raise AssertionError(f"FindCoordinator({self.transactional_id}, transaction) kept failing: "
                                     f"{_name(r.error_code)}")
        self.coordinator_node = r.node_id
        self.coordinator = await RawConnection(r.host, r.port).open()
        return self

    async def close(self) -> None:
        for conn in (self.coordinator, self.leader):
            if conn is not None:
                await conn.close()

    async def _retry(self, api: int, body: dict, error=lambda r: r.error_code):
        """`api` asked again while the coordinator is not ready (__transaction_state just
        created, its partition loading: found again, as clients do) or the previous transaction's
        markers are on their way: clients retry these, so does the check. -> (answer, its error)."""
        deadline = time.monotonic() + MARKERS_S
        while True:
            r = await self.coordinator.call(api, _version(self.b, api), body)
            code = error(r)
            if code not in _RETRIABLE or time.monotonic() > deadline:
                return r, code
            await asyncio.sleep(0.1)
            if code in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE):
                await self.coordinator.close()
                await self.open()

    async def init(self) -> int:
        r, code = await self._retry(INIT_PRODUCER_ID, {"transactional_id": self.transactional_id,
                                                        "transaction_timeout_ms": self.timeout_ms,
                                                        "producer_id": -1, "producer_epoch": -1})
        if code == 0:
            self.producer_id, self.epoch, self.sequence = r.producer_id, r.producer_epoch, 0
        return code

    async def add_partition(self, topic: str, epoch: int | None = None) -> int:
        _, code = await self._retry(ADD_PARTITIONS, {
            "v3_and_below_transactional_id": self.transactional_id, "v3_and_below_producer_id": self.producer_id,
            "v3_and_below_producer_epoch": self.epoch if epoch is None else epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": [0]}]},
            lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
        return code

    async def produce(self, topic: str, *values: bytes) -> int:
        if self.leader is None:
            self.leader = await _leader(self.b, topic)
        batch = R.build_batch([(None, v, int(time.time() * 1000)) for v in values], producer_id=self.producer_id,
                              producer_epoch=self.epoch, base_sequence=self.sequence, transactional=True)
        self.sequence += len(values)
        r = await self.leader.call(PRODUCE, _version(self.b, PRODUCE), {
            "transactional_id": self.transactional_id, "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
        return r.responses[0].partition_responses[0].error_code

    async def end(self, commit: bool, epoch: int | None = None) -> int:
        _, code = await self._retry(END_TXN, {"transactional_id": self.transactional_id,
                                              "producer_id": self.producer_id,
                                              "producer_epoch": self.epoch if epoch is None else epoch,
                                              "committed": commit})
        return code


async def _leader(b: Broker, topic: str) -> RawConnection:
    async with RawConnection(b.host, b.port) as c:
        r = await c.call(METADATA, _version(b, METADATA), {
            "topics": [{"name": topic}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False})
    leader = r.topics[0].partitions[0].leader_id
    node = next(n for n in r.brokers if n.node_id == leader)
    return await RawConnection(node.host, node.port).open()


class Log:
    """What a read_committed Fetch of partition 0 from offset 0 shows; the producer `own` is
    named so in its aborted transactions (producer ids differ from broker to broker)."""

    def __init__(self, answer, own: int):
        p = answer.responses[0].partitions[0]
        self.error, self.high_watermark, self.last_stable = p.error_code, p.high_watermark, p.last_stable_offset
        self.aborted = sorted(("own" if a.producer_id == own else a.producer_id, a.first_offset)
                              for a in (p.aborted_transactions or []))
        batches = list(R.iter_batches(bytes(p.records or b"")))
        self.data = [r.value for b in batches if not b.is_control for r in R.decode_records(b)]
        self.markers = ["commit" if R.parse_marker(b)[0] else "abort" for b in batches if b.is_control]

    def __str__(self) -> str:
        return (f"LSO {self.last_stable} HW {self.high_watermark}, markers {','.join(self.markers) or '-'}, "
                f"aborted_transactions {self.aborted or '-'}")


async def _read_committed(b: Broker, leader: RawConnection, topic: str, own: int) -> Log:
    r = await leader.call(FETCH, _version(b, FETCH), {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 1,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                     "last_fetched_epoch": -1, "log_start_offset": -1,
                                                     "partition_max_bytes": 1 << 20}]}]})
    return Log(r, own)


async def _settled(b: Broker, leader: RawConnection, topic: str, own: int, markers: int) -> Log:
    """The log once `markers` markers are in it and nothing is open (EndTxn answers first)."""
    deadline = time.monotonic() + MARKERS_S
    while True:
        log = await _read_committed(b, leader, topic, own)
        if (len(log.markers) >= markers and log.last_stable == log.high_watermark) or time.monotonic() > deadline:
            return log
        await asyncio.sleep(0.1)


async def _setup(b: Broker, name: str, timeout_ms: int = TXN_TIMEOUT_MS) -> tuple[str, Producer]:
    topic = _gid(f"{name}-topic")
    await _create_topic(b, topic)
    p = await Producer(b, _gid(name), timeout_ms).open()
    code = await p.init()
    if code != 0:
        await p.close()
        raise AssertionError(f"InitProducerId({p.transactional_id}) -> {_name(code)}")
    return topic, p


async def init_producer_id_fencing(b: Broker) -> Outcome:
    """InitProducerId for a transactional id a second time keeps the producer id and bumps the
    epoch; the first producer's epoch is then fenced, in AddPartitionsToTxn and in EndTxn."""
    topic, first = await _setup(b, "txn-fence")
    second = await Producer(b, first.transactional_id).open()
    try:
        seen = {"init again": _name(await second.init()),
                "same producer id": second.producer_id == first.producer_id,
                "epoch": f"+{second.epoch - first.epoch}",
                "old epoch adds": _name(await first.add_partition(topic)),
                "old epoch ends": _name(await first.end(True)),
                "new epoch adds": _name(await second.add_partition(topic)),
                "new epoch commits": _name(await second.end(True))}
        want = {"init again": "NONE", "same producer id": True, "epoch": "+1", "old epoch adds": "PRODUCER_FENCED",
                "old epoch ends": "PRODUCER_FENCED", "new epoch adds": "NONE", "new epoch commits": "NONE"}
        return Outcome(seen == want, _said(seen), _said(want))
    finally:
        await _close(first, second)


async def commit_abort_read_committed(b: Broker) -> Outcome:
    """A committed transaction then an aborted one on one partition: while the first is open a
    read_committed Fetch stops at it (LSO 0); afterwards it gets both transactions' records, a
    commit and an abort marker, and the aborted one in aborted_transactions."""
    topic, p = await _setup(b, "txn-commit-abort")
    try:
        if await p.add_partition(topic) or await p.produce(topic, b"c0", b"c1"):
            raise AssertionError("the first transaction's AddPartitionsToTxn or Produce failed")
        p.leader = p.leader or await _leader(b, topic)
        open_log = await _read_committed(b, p.leader, topic, p.producer_id)
        committed = _name(await p.end(True))
        if await p.add_partition(topic) or await p.produce(topic, b"a0"):
            raise AssertionError("the second transaction's AddPartitionsToTxn or Produce failed")
        aborted = _name(await p.end(False))
        log = await _settled(b, p.leader, topic, p.producer_id, markers=2)
        seen = {"while open": f"LSO {open_log.last_stable} HW {open_log.high_watermark}", "commit": committed,
                "abort": aborted, "after": str(log), "records": b",".join(log.data).decode()}
        want = {"while open": "LSO 0 HW 2", "commit": "NONE", "abort": "NONE",
                "after": "LSO 5 HW 5, markers commit,abort, aborted_transactions [('own', 3)]",
                "records": "c0,c1,a0"}
        return Outcome(seen == want, _said(seen), _said(want))
    finally:
        await _close(p)


async def txn_offset_commit_pending(b: Broker) -> Outcome:
    """Offsets committed in a transaction (AddOffsetsToTxn, then TxnOffsetCommit to the group's
    coordinator) are pending: OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT, one
    without it the offset before; after the commit both answer the transaction's offset."""
    topic, p = await _setup(b, "txn-offsets")
    group = _gid("txn-offsets-group")
    gc = await b.connect(group)
    try:
        _, added = await p._retry(ADD_OFFSETS, {"transactional_id": p.transactional_id,
                                                "producer_id": p.producer_id, "producer_epoch": p.epoch,
                                                "group_id": group})
        if added:
            raise AssertionError(f"AddOffsetsToTxn -> {_name(added)}")
        c = await gc.call(TXN_OFFSET_COMMIT, _version(b, TXN_OFFSET_COMMIT), {
            "transactional_id": p.transactional_id, "group_id": group, "producer_id": p.producer_id,
            "producer_epoch": p.epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 10,
                                                       "committed_leader_epoch": -1, "committed_metadata": ""}]}]})

        async def fetch(stable: bool) -> str:
            r = await gc.call(OFFSET_FETCH, _version(b, OFFSET_FETCH), {
                "group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}], "require_stable": stable})
            part = r.topics[0].partitions[0]
            return f"{_name(r.error_code or part.error_code)} {part.committed_offset}"

        seen = {"txn commit": _name(c.topics[0].partitions[0].error_code), "stable fetch": await fetch(True),
                "plain fetch": await fetch(False), "end": _name(await p.end(True))}
        deadline = time.monotonic() + MARKERS_S
        while (after := await fetch(True)) != "NONE 10" and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # the group's marker lands after EndTxn's answer
        seen["stable fetch after commit"] = after
        want = {"txn commit": "NONE", "stable fetch": "UNSTABLE_OFFSET_COMMIT -1", "plain fetch": "NONE -1",
                "end": "NONE", "stable fetch after commit": "NONE 10"}
        return Outcome(seen == want, _said(seen), _said(want))
    finally:
        await gc.close()
        await _close(p)


async def unknown_transactional_id(b: Broker) -> Outcome:
    """EndTxn and AddPartitionsToTxn (of a topic that exists) for a transactional id the broker
    never initialised."""
    topic = _gid("txn-unknown-topic")
    await _create_topic(b, topic)
    p = await Producer(b, _gid("txn-unknown")).open()
    try:
        p.producer_id, p.epoch = 4242, 0
        seen = {"end": _name(await p.end(True)), "add": _name(await p.add_partition(topic))}
        want = {"end": "INVALID_PRODUCER_ID_MAPPING", "add": "INVALID_PRODUCER_ID_MAPPING"}
        return Outcome(seen == want, _said(seen), _said(want))
    finally:
        await _close(p)


async def cleanup_interval_ms(p: Producer) -> int:
    """The transaction coordinator's cleanup interval, as it describes its own config (Kafka's
    default when it does not)."""
    try:
        r = await p.coordinator.call(DESCRIBE_CONFIGS, _version(p.b, DESCRIBE_CONFIGS), {
            "resources": [{"resource_type": 4, "resource_name": str(p.coordinator_node),
                           "configuration_keys": [CLEANUP_INTERVAL]}], "include_synonyms": False})
        entry = next(c for c in r.results[0].configs if c.name == CLEANUP_INTERVAL)
        return int(entry.value)
    except (Unsupported, StopIteration, IndexError, TypeError, ValueError):
        return DEFAULT_CLEANUP_INTERVAL_MS


async def timeout_abort(b: Broker) -> Outcome:
    """A transaction left open past its transaction.timeout.ms (1 s) is aborted by the broker:
    the abort marker reaches the partition, the records stay unread by read_committed, and the
    producer's epoch is fenced. The check waits for it at most the timeout plus twice the
    broker's transaction.abort.timed.out.transaction.cleanup.interval.ms."""
    topic, p = await _setup(b, "txn-timeout", timeout_ms=SHORT_TIMEOUT_MS)
    try:
        interval = await cleanup_interval_ms(p)
        bound = (SHORT_TIMEOUT_MS + 2 * interval) / 1000 + 2
        waited_for = f"the abort, up to {bound:.0f} s (timeout {SHORT_TIMEOUT_MS} ms + 2 x cleanup interval " \
                     f"{interval} ms)"
        if bound > LONGEST_WAIT_S:
            return Outcome(True, f"the broker's cleanup interval is {interval} ms: {waited_for} is over the "
                                 f"check's {LONGEST_WAIT_S:.0f} s", "", skipped=True)
        if await p.add_partition(topic) or await p.produce(topic, b"t0"):
            raise AssertionError("AddPartitionsToTxn or Produce failed")
        began = time.monotonic()
        deadline = began + bound
        while True:
            log = await _read_committed(b, p.leader, topic, p.producer_id)
            if log.markers or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        seen = {"marker": ",".join(log.markers) or f"none within {bound:.0f} s", "log": str(log),
                "records": b",".join(log.data).decode(), "end with the old epoch": _name(await p.end(True))}
        want = {"marker": "abort", "log": "LSO 2 HW 2, markers abort, aborted_transactions [('own', 0)]",
                "records": "t0", "end with the old epoch": "PRODUCER_FENCED"}
        return Outcome(seen == want, f"waited {time.monotonic() - began:.1f} s for {waited_for}; {_said(seen)}",
                       _said(want))
    finally:
        await _close(p)


def _said(seen: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in seen.items())


async def _close(*producers: Producer) -> None:
    for p in producers:
        await p.close()


SCENARIOS = {
    "txn-init-producer-id-fencing": init_producer_id_fencing,
    "txn-commit-abort-read-committed": commit_abort_read_committed,
    "txn-offset-commit-pending": txn_offset_commit_pending,
    "txn-unknown-transactional-id": unknown_transactional_id,
    "txn-timeout-abort": timeout_abort,
}
