"""TxnOffsetCommit over a real socket (kcoord.api.txn_offset_commit): a transactional producer's
offsets stay pending (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT) until
EndTxn commits them or aborts them, in both of Kafka's flows: AddOffsetsToTxn then TxnOffsetCommit
v3 (transaction version 0/1), and TxnOffsetCommit v5 adding the group's partition itself with
EndTxn v5 bumping the epoch (transaction version 2). The group's __consumer_offsets partition
holds the offsets as a transactional batch followed by the marker."""
from __future__ import annotations

import time
import uuid

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import read_batches
from wire import records as R
from wire.errors import ErrorCode

OFFSET_FETCH, FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 9, 10, 22, 25, 26, 28


async def _on_loop(fn):
    return fn()


def _topic(server) -> str:
    name = f"txn-offsets-{uuid.uuid4().hex[:8]}"
    server.call(lambda: _on_loop(lambda: server.app.broker.topics.create(name, 2)))
    return name


def _init(conn, transactional_id: str, version: int) -> tuple[int, int]:
    found = conn.call(FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1})
    assert found.error_code == ErrorCode.NONE, found
    answer = conn.call(INIT_PRODUCER_ID, version, {"transactional_id": transactional_id,
                                                   "transaction_timeout_ms": 60000,
                                                   "producer_id": -1, "producer_epoch": -1})
    assert answer.error_code == ErrorCode.NONE, answer
    return answer.producer_id, answer.producer_epoch


def _commit(conn, version, txn_id, group, pid, epoch, topic, offsets) -> list[tuple[int, int]]:
    answer = conn.call(TXN_OFFSET_COMMIT, version, {
        "transactional_id": txn_id, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": p, "committed_offset": o,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}
                                                  for p, o in offsets]}]})
    return sorted((p.partition_index, p.error_code) for t in answer.topics for p in t.partitions)


def _fetch(conn, group, topic, stable: bool, version: int = 8) -> list[tuple[int, int, int]]:
    answer = conn.call(OFFSET_FETCH, version, {"groups": [{"group_id": group, "topics": [
        {"name": topic, "partition_indexes": [0, 1]}]}], "require_stable": stable})
    g, = answer.groups
    assert g.error_code == ErrorCode.NONE
    return [(p.partition_index, p.committed_offset, p.error_code) for t in g.topics for p in t.partitions]


def _end(conn, version, txn_id, pid, epoch, commit: bool):
    deadline = time.monotonic() + 30
    while True:
        answer = conn.call(END_TXN, version, {"transactional_id": txn_id, "producer_id": pid,
                                              "producer_epoch": epoch, "committed": commit})
        # The previous transaction's markers may still be on their way (Kafka's answer then).
        if answer.error_code != ErrorCode.CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
            assert answer.error_code == ErrorCode.NONE, answer
            return answer
        time.sleep(0.05)


def _settled(conn, group, topic, expected):
    """The stable offsets once the markers are written (EndTxn answers before they land)."""
    deadline = time.monotonic() + 30
    seen = None
    while time.monotonic() < deadline:
        seen = _fetch(conn, group, topic, stable=True)
        if seen == expected:
            return
        time.sleep(0.05)
    raise AssertionError(f"stable offsets {seen}, expected {expected}")


UNSTABLE = ErrorCode.UNSTABLE_OFFSET_COMMIT


def test_offsets_wait_for_the_transaction_added_with_add_offsets_to_txn(kcoord_server):
    topic, group, txn_id = _topic(kcoord_server), f"g-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    with Connection.to(kcoord_server.bootstrap) as conn:
        pid, epoch = _init(conn, txn_id, 3)
        # Before AddOffsetsToTxn the group's partition is not in the transaction: refused, nothing kept.
        assert _commit(conn, 3, txn_id, group, pid, epoch, topic, [(0, 5)]) == [(0, ErrorCode.INVALID_TXN_STATE)]
        assert _commit(conn, 4, txn_id, group, pid, epoch, topic, [(0, 5)]) == [(0, ErrorCode.TRANSACTION_ABORTABLE)]
        assert _fetch(conn, group, topic, stable=True) == [(0, -1, 0), (1, -1, 0)]

        add = conn.call(ADD_OFFSETS_TO_TXN, 3, {"transactional_id": txn_id, "producer_id": pid,
                                                "producer_epoch": epoch, "group_id": group})
        assert add.error_code == ErrorCode.NONE
        assert _commit(conn, 3, txn_id, group, pid, epoch, topic, [(0, 10), (1, 11)]) == [(0, 0), (1, 0)]
        assert _fetch(conn, group, topic, stable=True) == [(0, -1, UNSTABLE), (1, -1, UNSTABLE)]
        assert _fetch(conn, group, topic, stable=False) == [(0, -1, 0), (1, -1, 0)]
        # v7, one group per request: the error stays on the partitions, as Kafka 4.3 answers.
        v7 = conn.call(OFFSET_FETCH, 7, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}],
                                         "require_stable": True})
        assert v7.error_code == ErrorCode.NONE and v7.topics[0].partitions[0].error_code == UNSTABLE
        _end(conn, 3, txn_id, pid, epoch, commit=True)
        _settled(conn, group, topic, [(0, 10, 0), (1, 11, 0)])

        # The next transaction is aborted: the committed offsets stay.
        add = conn.call(ADD_OFFSETS_TO_TXN, 3, {"transactional_id": txn_id, "producer_id": pid,
                                                "producer_epoch": epoch, "group_id": group})
        assert add.error_code == ErrorCode.NONE
        assert _commit(conn, 3, txn_id, group, pid, epoch, topic, [(0, 20)]) == [(0, 0)]
        assert _fetch(conn, group, topic, stable=True) == [(0, -1, UNSTABLE), (1, 11, 0)]
        _end(conn, 3, txn_id, pid, epoch, commit=False)
        _settled(conn, group, topic, [(0, 10, 0), (1, 11, 0)])

    index = kcoord_server.app.coordinator.runtime.partition_for(group)
    batches = [b for b in read_batches(kcoord_server.bootstrap, "__consumer_offsets", index)
               if b.producer_id == pid]
    kinds = [("marker", R.parse_marker(b)[0]) if b.is_control else ("offsets", b.records_count) for b in batches]
    assert kinds == [("offsets", 2), ("marker", True), ("offsets", 1), ("marker", False)]
    assert all(b.is_transactional for b in batches)


def test_txn_offset_commit_v5_adds_the_groups_partition_itself(kcoord_server):
    topic, group, txn_id = _topic(kcoord_server), f"g-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    with Connection.to(kcoord_server.bootstrap) as conn:
        pid, epoch = _init(conn, txn_id, conn.version(INIT_PRODUCER_ID, 6))
        assert _commit(conn, 5, txn_id, group, pid, epoch, topic, [(1, 7)]) == [(1, 0)]
        assert _fetch(conn, group, topic, stable=True) == [(0, -1, 0), (1, -1, UNSTABLE)]
        ended = _end(conn, 5, txn_id, pid, epoch, commit=True)
        assert ended.producer_epoch == epoch + 1   # transaction version 2 bumps it at every end
        _settled(conn, group, topic, [(0, -1, 0), (1, 7, 0)])
        # The old epoch is fenced; the new one commits again.
        assert _commit(conn, 5, txn_id, group, pid, epoch, topic, [(1, 8)]) == [(1, ErrorCode.INVALID_PRODUCER_EPOCH)]
        assert _commit(conn, 5, txn_id, group, pid, ended.producer_epoch, topic, [(1, 9)]) == [(1, 0)]
        _end(conn, 5, txn_id, pid, ended.producer_epoch, commit=True)
        _settled(conn, group, topic, [(0, -1, 0), (1, 9, 0)])


def test_bad_requests_answer_per_partition(kcoord_server):
    topic, txn_id = _topic(kcoord_server), f"tx-{uuid.uuid4().hex[:8]}"
    with Connection.to(kcoord_server.bootstrap) as conn:
        pid, epoch = _init(conn, txn_id, 3)
        unknown = _commit(conn, 3, txn_id, "g", pid, epoch, "no-such-topic", [(0, 1)])
        assert unknown == [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert _commit(conn, 3, txn_id, "g", pid, epoch, topic, [(5, 1)]) == [(5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert _commit(conn, 3, txn_id, "", pid, epoch, topic, [(0, 1)]) == [(0, ErrorCode.INVALID_GROUP_ID)]


def _confluent_member(bootstrap: str, topic: str, group: str):
    """A confluent-kafka consumer that has joined `group` and holds both partitions of `topic`."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < 2:
        assert time.monotonic() < deadline, "the consumer never got its partitions"
        consumer.poll(0.1)
    return consumer


def test_confluent_kafka_send_offsets_to_transaction_as_a_group_member(kcoord_server):
    """librdkafka's consume-transform-produce: TxnOffsetCommit names the member and its generation
    (KIP-447); the offsets reach the group only with the commit, never with the abort."""
    from confluent_kafka import Producer, TopicPartition

    topic, group = _topic(kcoord_server), f"g-{uuid.uuid4().hex[:8]}"
    consumer = _confluent_member(kcoord_server.bootstrap, topic, group)
    producer = Producer({"bootstrap.servers": kcoord_server.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, b"out", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)],
                                             consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        committed = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], 30)
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 3), (1, 4)]

        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 9)], consumer.consumer_group_metadata(), 30)
        producer.abort_transaction(30)
        committed = consumer.committed([TopicPartition(topic, 0)], 30)
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 3)]
    finally:
        consumer.close()
    group_state = kcoord_server.app.coordinator.runtime.committed(group)
    assert {k: v.offset for k, v in group_state.items()} == {(topic, 0): 3, (topic, 1): 4}


def test_pending_and_committed_transactional_offsets_come_back_from_the_data_dir(tmp_path):
    """A restart replays __consumer_offsets from the data dir: the committed transaction's
    offsets are committed, the open one's still pending (require_stable: UNSTABLE_OFFSET_COMMIT)
    until its EndTxn, answered by the transaction coordinator that came back too."""
    from kcoord.testing.plugin import KcoordHandle, start_server

    group, done_id, open_id = f"g-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    thread = start_server(data_dir=str(tmp_path))
    try:
        server = KcoordHandle(thread)
        topic = _topic(server)
        with Connection.to(server.bootstrap) as conn:
            pid, epoch = _init(conn, done_id, conn.version(INIT_PRODUCER_ID, 6))
            assert _commit(conn, 5, done_id, group, pid, epoch, topic, [(0, 10)]) == [(0, 0)]
            _end(conn, 5, done_id, pid, epoch, commit=True)
            _settled(conn, group, topic, [(0, 10, 0), (1, -1, 0)])
            open_pid, open_epoch = _init(conn, open_id, conn.version(INIT_PRODUCER_ID, 6))
            assert _commit(conn, 5, open_id, group, open_pid, open_epoch, topic, [(1, 20)]) == [(1, 0)]
    finally:
        thread.stop()
    thread = start_server(data_dir=str(tmp_path))
    try:
        server = KcoordHandle(thread)
        with Connection.to(server.bootstrap) as conn:
            assert _fetch(conn, group, topic, stable=True) == [(0, 10, 0), (1, -1, UNSTABLE)]
            _end(conn, 5, open_id, open_pid, open_epoch, commit=True)
            _settled(conn, group, topic, [(0, 10, 0), (1, 20, 0)])
    finally:
        thread.stop()
