"""Raw transactional scenarios: every transaction API and its refusals, spoken through `wire/`
over one connection, for the differential runs (kcoord.conformance.txn_differential).

A scenario is a function of a `TxnSession`: it sends its requests on `session.conn` (the
recorded connection, through a recording proxy) and prepares what it needs (topics, a
transaction coordinator that is ready, markers that have landed) on connections of its own
straight to the broker, which transcripts leave out. Each scenario asserts only that a
refused request changed nothing: the transaction's state and epoch (DescribeTransactions)
and the partitions' last stable offset stay where they were. Which answer is right is the
reference Kafka's to say: the transcripts of both brokers are compared.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from kcoord.conformance.rawclient import SETUP_CLIENT_ID
from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic
from wire import records as R
from wire.errors import ErrorCode as E

PRODUCE, LIST_OFFSETS, FIND, JOIN, SYNC, DESCRIBE_GROUPS = 0, 2, 10, 11, 14, 15
INIT_PID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, MARKERS, TXN_COMMIT = 22, 24, 25, 26, 27, 28
UPDATE_FEATURES, DESCRIBE_PRODUCERS, DESCRIBE_TXNS, LIST_TXNS = 57, 61, 65, 66
TIMEOUT_MS = 60000
SETTLED = ("Empty", "CompleteCommit", "CompleteAbort")


@dataclass
class TxnSession:
    conn: Connection                 # recorded
    upstream: str                    # the broker itself, for preparation
    problems: list[str] = field(default_factory=list)

    # ------------------------------------------------------------ preparation (not recorded)
    @staticmethod
    def name(label: str) -> str:
        """A fresh name that transcripts normalise (kcoord.conformance.transcript.CHECK_NAME)."""
        return f"kcoord-check-{label}-{uuid.uuid4().hex[:8]}"

    def topic(self, partitions: int = 2) -> str:
        name = self.name("topic")
        create_topic(self.upstream, name, partitions)
        return name

    def _setup(self) -> Connection:
        return Connection.to(self.upstream, 10.0, client_id=SETUP_CLIENT_ID)

    def coordinator_ready(self, key: str, key_type: int = 1) -> None:
        """Until FindCoordinator names one (Kafka creates __transaction_state on the first ask),
        it has loaded its partition (a describe answers without an error), and for a transaction
        the broker has producer ids to hand out (a new Kafka answers InitProducerId with
        COORDINATOR_LOAD_IN_PROGRESS until its first block of ids arrives from the controller)."""
        def loaded(c: Connection) -> bool:
            if key_type == 1:
                return (_describe(c, key).error_code in (E.NONE, E.TRANSACTIONAL_ID_NOT_FOUND)
                        and c.call(INIT_PID, 5, {"transactional_id": None, "transaction_timeout_ms": TIMEOUT_MS,
                                                 "producer_id": -1, "producer_epoch": -1}).error_code == E.NONE)
            return c.call(DESCRIBE_GROUPS, 5, {"groups": [key], "include_authorized_operations": False}
                          ).groups[0].error_code == E.NONE

        with self._setup() as c:
            deadline = time.monotonic() + 60
            while c.call(FIND, 3, {"key": key, "key_type": key_type}).error_code or not loaded(c):
                if time.monotonic() > deadline:
                    raise AssertionError(f"no coordinator for {key} within 60 s")
                time.sleep(0.1)

    def settle(self, txn_id: str) -> None:
        """Until the transaction's markers have landed: the next request then meets a settled
        transaction on both brokers, not CONCURRENT_TRANSACTIONS on the slower one."""
        with self._setup() as c:
            deadline = time.monotonic() + 30
            while _describe(c, txn_id).transaction_state not in SETTLED:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{txn_id} did not settle within 30 s")
                time.sleep(0.05)

    # ------------------------------------------------------------ recorded requests
    def call(self, api: int, version: int, body: dict):
        return self.conn.call(api, version, body)

    def init(self, txn_id: str, version: int = 5, pid: int = -1, epoch: int = -1,
             timeout_ms: int = TIMEOUT_MS):
        body = {"transactional_id": txn_id, "transaction_timeout_ms": timeout_ms}
        if version >= 3:
            body.update(producer_id=pid, producer_epoch=epoch)
        return self.call(INIT_PID, version, body)

    def add_partitions(self, txn_id: str, pid: int, epoch: int, topics: dict[str, list[int]], version: int = 3):
        topic_list = [{"name": t, "partitions": ps} for t, ps in topics.items()]
        if version <= 3:
            return self.call(ADD_PARTITIONS, version, {
                "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": topic_list})
        return self.call(ADD_PARTITIONS, version, {"transactions": [{
            "transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "verify_only": False,
            "topics": topic_list}]})

    def produce(self, txn_id: str | None, pid: int, epoch: int, topic: str, partition: int, sequence: int,
                version: int = 11, values=(b"v",)):
        batch = R.build_batch([(None, v, 0) for v in values], producer_id=pid, producer_epoch=epoch,
                              base_sequence=sequence, transactional=txn_id is not None)
        return self.call(PRODUCE, version, {"transactional_id": txn_id, "acks": -1, "timeout_ms": 10000,
                                            "topic_data": [{"name": topic, "partition_data": [
                                                {"index": partition, "records": batch}]}]})

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 4):
        return self.call(END_TXN, version, {"transactional_id": txn_id, "producer_id": pid,
                                            "producer_epoch": epoch, "committed": commit})

    def describe(self, txn_id: str):
        return _describe(self.conn, txn_id)

    def lso(self, topic: str, partition: int = 0) -> int:
        answer = self.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}]})
        return answer.topics[0].partitions[0].offset

    def snapshot(self, txn_id: str | None, topic: str | None):
        """What a refused request must leave as it was (recorded: both brokers are compared on it too)."""
        out = []
        if txn_id is not None:
            d = self.describe(txn_id)
            out.append((d.error_code, d.transaction_state, d.producer_id, d.producer_epoch,
                        sorted((t.topic, sorted(t.partitions)) for t in d.topics)))
        if topic is not None:
            out.append(self.lso(topic))
        return out

    def refused(self, what: str, send, txn_id: str | None, topic: str | None = None):
        """Send a request that should be refused and note if it changed the transaction or the LSO."""
        before = self.snapshot(txn_id, topic)
        answer = send()
        after = self.snapshot(txn_id, topic)
        if after != before:
            self.problems.append(f"{what}: half-applied: {before} -> {after}")
        return answer


def _describe(conn: Connection, txn_id: str):
    return conn.call(DESCRIBE_TXNS, 0, {"transactional_ids": [txn_id]}).transaction_states[0]


def _ok(answer, what: str):
    if answer.error_code:
        raise AssertionError(f"{what}: {E(answer.error_code).name}")
    return answer


def _begin(s: TxnSession, label: str = "txn", version: int = 5) -> tuple[str, int, int]:
    txn_id = s.name(label)
    s.coordinator_ready(txn_id)
    r = _ok(s.init(txn_id, version), f"InitProducerId {txn_id}")
    return txn_id, r.producer_id, r.producer_epoch


# ------------------------------------------------------------------ scenarios
def init_producer_id(s: TxnSession) -> None:
    """A new id, a bump, KIP-360's expected id/epoch, and every refusal of InitProducerId."""
    txn_id, pid, epoch = _begin(s)
    s.init(txn_id)                                             # same id, epoch + 1
    cur = s.describe(txn_id)
    s.init(txn_id, pid=cur.producer_id, epoch=cur.producer_epoch)   # KIP-360: the producer names itself
    cur = s.describe(txn_id)
    s.init(txn_id, pid=cur.producer_id, epoch=cur.producer_epoch - 1)  # a retry of that bump
    s.refused("wrong expected producer id (v5)", lambda: s.init(txn_id, pid=cur.producer_id + 1000, epoch=0),
              txn_id)
    s.refused("wrong expected producer id (v3)",
              lambda: s.init(txn_id, version=3, pid=cur.producer_id + 1000, epoch=0), txn_id)
    s.refused("older expected epoch (v5)", lambda: s.init(txn_id, pid=cur.producer_id, epoch=0), txn_id)
    s.refused("transaction timeout 0", lambda: s.init(txn_id, timeout_ms=0), txn_id)
    s.refused("transaction timeout over the maximum", lambda: s.init(txn_id, timeout_ms=2**31 - 1), txn_id)
    s.refused("empty transactional id", lambda: s.init("", version=5), None)
    s.init(None, version=5)                                   # idempotent: a new id at epoch 0


def add_partitions_v3(s: TxnSession) -> None:
    """AddPartitionsToTxn v3: an unknown topic, a wrong epoch, an unknown id, then the good case."""
    topic = s.topic()
    txn_id, pid, epoch = _begin(s)
    missing = s.name("missing")
    s.refused("an unknown topic beside a known one",
              lambda: s.add_partitions(txn_id, pid, epoch, {topic: [0], missing: [0]}), txn_id, topic)
    s.refused("a partition the topic does not have",
              lambda: s.add_partitions(txn_id, pid, epoch, {topic: [7]}), txn_id, topic)
    s.refused("an older epoch", lambda: s.add_partitions(txn_id, pid, epoch - 1, {topic: [0]}), txn_id, topic)
    s.refused("a newer epoch", lambda: s.add_partitions(txn_id, pid, epoch + 1, {topic: [0]}), txn_id, topic)
    s.refused("another producer id", lambda: s.add_partitions(txn_id, pid + 1000, epoch, {topic: [0]}),
              txn_id, topic)
    unknown = s.name("unknown")
    s.refused("an unknown transactional id", lambda: s.add_partitions(unknown, pid, epoch, {topic: [0]}),
              None, topic)
    s.add_partitions(txn_id, pid, epoch, {topic: [0, 1]})
    s.describe(txn_id)
    s.add_partitions(txn_id, pid, epoch, {topic: [1]})        # already in: NONE again
    s.end(txn_id, pid, epoch, commit=False)
    s.settle(txn_id)
    s.describe(txn_id)


def produce_without_add(s: TxnSession) -> None:
    """A transactional Produce whose partition was never added: refused at v11 (the broker
    verifies), added implicitly at v12 (transaction version 2)."""
    topic = s.topic()
    txn_id, pid, epoch = _begin(s)
    s.refused("Produce v11 before AddPartitionsToTxn",
              lambda: s.produce(txn_id, pid, epoch, topic, 0, 0, version=11), txn_id, topic)
    s.produce(txn_id, pid, epoch, topic, 1, 0, version=12)
    s.describe(txn_id)
    s.lso(topic, 1)
    s.refused("Produce v12 with an older epoch",
              lambda: s.produce(txn_id, pid, epoch - 1, topic, 0, 0, version=12), txn_id, topic)
    s.end(txn_id, pid, epoch, commit=True, version=5)
    s.settle(txn_id)
    s.describe(txn_id)
    s.lso(topic, 1)


def _join_group(s: TxnSession, group: str) -> tuple[str, int]:
    """One classic member in `group`, Stable (on the recorded connection: both brokers compared)."""
    s.coordinator_ready(group, key_type=0)
    body = {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None}
    r = s.call(JOIN, 5, body)
    if r.error_code == E.MEMBER_ID_REQUIRED:
        r = s.call(JOIN, 5, {**body, "member_id": r.member_id})
    _ok(r, "JoinGroup")
    _ok(s.call(SYNC, 3, {"group_id": group, "generation_id": r.generation_id, "member_id": r.member_id,
                         "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                         "assignments": [{"member_id": r.member_id, "assignment": b""}]}), "SyncGroup")
    return r.member_id, r.generation_id


def _txn_commit(s: TxnSession, version: int, txn_id: str, group: str, pid: int, epoch: int, topic: str,
                offset: int, member: str = "", generation: int = -1):
    return s.call(TXN_COMMIT, version, {
        "transactional_id": txn_id, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
        "generation_id": generation, "member_id": member, "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""}]}]})


def _fetch_offsets(s: TxnSession, group: str, topic: str):
    return s.call(9, 8, {"groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}],
                         "require_stable": True})


def txn_offset_commit(s: TxnSession) -> None:
    """AddOffsetsToTxn and TxnOffsetCommit v3 and v5 against a group with a live member:
    a wrong generation, an unknown member, a commit before AddOffsetsToTxn."""
    topic, group = s.topic(1), s.name("group")
    member, generation = _join_group(s, group)
    txn_id, pid, epoch = _begin(s)
    s.refused("TxnOffsetCommit v3 before AddOffsetsToTxn",
              lambda: _txn_commit(s, 3, txn_id, group, pid, epoch, topic, 5, member, generation), txn_id)
    s.refused("AddOffsetsToTxn with an older epoch",
              lambda: s.call(ADD_OFFSETS, 3, {"transactional_id": txn_id, "producer_id": pid,
                                              "producer_epoch": epoch - 1, "group_id": group}), txn_id)
    s.call(ADD_OFFSETS, 3, {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch,
                            "group_id": group})
    s.describe(txn_id)
    s.refused("TxnOffsetCommit v3, wrong generation",
              lambda: _txn_commit(s, 3, txn_id, group, pid, epoch, topic, 5, member, generation + 1), txn_id)
    s.refused("TxnOffsetCommit v3, unknown member",
              lambda: _txn_commit(s, 3, txn_id, group, pid, epoch, topic, 5, "nobody", generation), txn_id)
    s.refused("TxnOffsetCommit v3, older epoch",
              lambda: _txn_commit(s, 3, txn_id, group, pid, epoch - 1, topic, 5, member, generation), txn_id)
    _fetch_offsets(s, group, topic)
    _txn_commit(s, 3, txn_id, group, pid, epoch, topic, 5, member, generation)
    _fetch_offsets(s, group, topic)
    s.end(txn_id, pid, epoch, commit=True)
    s.settle(txn_id)
    _fetch_offsets(s, group, topic)
    # Transaction version 2: v5 adds the group's partition itself, before the group looks at the
    # generation (Kafka's order too), so a refused commit still leaves the partition added.
    _txn_commit(s, 5, txn_id, group, pid, epoch, topic, 9, member, generation + 1)
    s.describe(txn_id)
    _txn_commit(s, 5, txn_id, group, pid, epoch, topic, 9, member, generation)
    s.describe(txn_id)
    s.end(txn_id, pid, epoch, commit=False, version=5)
    s.settle(txn_id)
    _fetch_offsets(s, group, topic)


def end_txn_v4(s: TxnSession) -> None:
    """EndTxn v4 (transaction version 0/1): commit, its retry, the other outcome after it, and
    the refusals of an empty transaction and an old epoch."""
    topic = s.topic()
    txn_id, pid, epoch = _begin(s, version=4)
    s.refused("EndTxn v4 commit on Empty", lambda: s.end(txn_id, pid, epoch, commit=True), txn_id, topic)
    s.add_partitions(txn_id, pid, epoch, {topic: [0]})
    s.produce(txn_id, pid, epoch, topic, 0, 0)
    s.refused("EndTxn v4 with an older epoch", lambda: s.end(txn_id, pid, epoch - 1, commit=True), txn_id, topic)
    s.refused("EndTxn v4 with another producer id", lambda: s.end(txn_id, pid + 1000, epoch, commit=True),
              txn_id, topic)
    s.end(txn_id, pid, epoch, commit=True)
    s.settle(txn_id)
    s.describe(txn_id)
    s.lso(topic)
    s.end(txn_id, pid, epoch, commit=True)                   # a retry of the commit
    s.refused("EndTxn v4 abort on CompleteCommit", lambda: s.end(txn_id, pid, epoch, commit=False),
              txn_id, topic)


def end_txn_v5(s: TxnSession) -> None:
    """EndTxn v5 (transaction version 2): every end bumps the epoch; the retry table of
    Kafka's TransactionCoordinator for the previous epoch."""
    topic = s.topic()
    txn_id, pid, epoch = _begin(s)
    s.produce(txn_id, pid, epoch, topic, 0, 0, version=12)
    ended = s.end(txn_id, pid, epoch, commit=True, version=5)
    s.settle(txn_id)
    s.describe(txn_id)
    s.end(txn_id, pid, epoch, commit=True, version=5)        # retry with the old epoch
    s.refused("EndTxn v5 abort retried on CompleteCommit",
              lambda: s.end(txn_id, pid, epoch, commit=False, version=5), txn_id, topic)
    new_epoch = ended.producer_epoch if ended.error_code == 0 else epoch + 1
    s.refused("EndTxn v5 commit on Empty/Complete at the new epoch",
              lambda: s.end(txn_id, pid, new_epoch, commit=True, version=5), txn_id, topic)
    s.end(txn_id, pid, new_epoch, commit=False, version=5)    # an abort with nothing in it
    s.settle(txn_id)
    s.describe(txn_id)
    s.refused("EndTxn v5 with an epoch from the future",
              lambda: s.end(txn_id, pid, new_epoch + 5, commit=True, version=5), txn_id, topic)


def out_of_order(s: TxnSession) -> None:
    """Requests in an order no producer sends them."""
    topic = s.topic()
    never = s.name("never")
    s.coordinator_ready(never)
    s.refused("EndTxn before InitProducerId", lambda: s.end(never, 12345, 0, commit=True), None, topic)
    s.refused("AddOffsetsToTxn before InitProducerId",
              lambda: s.call(ADD_OFFSETS, 3, {"transactional_id": never, "producer_id": 12345,
                                              "producer_epoch": 0, "group_id": s.name("group")}), None, topic)
    txn_id, pid, epoch = _begin(s)
    s.add_partitions(txn_id, pid, epoch, {topic: [0]})
    s.produce(txn_id, pid, epoch, topic, 0, 0)
    s.init(txn_id)       # a second producer: the open transaction aborts (CONCURRENT_TRANSACTIONS meanwhile)
    s.settle(txn_id)
    fenced = s.init(txn_id)                                   # its retry, as producers retry
    s.refused("AddPartitionsToTxn with the fenced epoch",
              lambda: s.add_partitions(txn_id, pid, epoch, {topic: [1]}), txn_id, topic)
    s.refused("Produce with the fenced epoch", lambda: s.produce(txn_id, pid, epoch, topic, 0, 1), txn_id, topic)
    s.refused("EndTxn with the fenced epoch", lambda: s.end(txn_id, pid, epoch, commit=True), txn_id, topic)
    s.lso(topic)
    s.describe(txn_id)
    if fenced.error_code == 0:
        s.refused("EndTxn v4 on Empty after the fence",
                  lambda: s.end(txn_id, fenced.producer_id, fenced.producer_epoch, commit=False), txn_id, topic)


def describe_list_transactions(s: TxnSession) -> None:
    """DescribeTransactions and ListTransactions: states, filters, a bad pattern."""
    topic = s.topic()
    txn_id, pid, epoch = _begin(s, "listed")
    s.add_partitions(txn_id, pid, epoch, {topic: [0, 1]})
    mine = f"^{txn_id}$"   # only this scenario's transaction (others run on the same broker)
    s.describe(txn_id)
    for filters in ([], ["Ongoing"], ["CompleteCommit"], ["Ongoing", "NoSuchState"]):
        s.call(LIST_TXNS, 2, {"state_filters": filters, "producer_id_filters": [], "duration_filter": -1,
                              "transactional_id_pattern": mine})
    s.call(LIST_TXNS, 2, {"state_filters": [], "producer_id_filters": [pid], "duration_filter": -1,
                          "transactional_id_pattern": mine})
    s.call(LIST_TXNS, 2, {"state_filters": [], "producer_id_filters": [], "duration_filter": 3_600_000,
                          "transactional_id_pattern": mine})
    s.call(LIST_TXNS, 2, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1,
                          "transactional_id_pattern": "(unclosed"})
    s.end(txn_id, pid, epoch, commit=True, version=5)
    s.settle(txn_id)
    s.call(LIST_TXNS, 2, {"state_filters": ["CompleteCommit"], "producer_id_filters": [],
                          "duration_filter": -1, "transactional_id_pattern": mine})


def describe_unknown(s: TxnSession) -> None:
    """DescribeTransactions of ids the coordinator does not know, and of the empty id."""
    unknown = s.name("unknown")
    s.coordinator_ready(unknown)
    s.call(DESCRIBE_TXNS, 0, {"transactional_ids": [unknown]})
    s.call(DESCRIBE_TXNS, 0, {"transactional_ids": [""]})


def describe_producers(s: TxnSession) -> None:
    """DescribeProducers during an open transaction and after its commit."""
    topic = s.topic()
    txn_id, pid, epoch = _begin(s)
    body = {"topics": [{"name": topic, "partition_indexes": [0, 1, 5]}, {"name": s.name("nosuch"),
                                                                           "partition_indexes": [0]}]}
    s.call(DESCRIBE_PRODUCERS, 0, body)
    s.produce(txn_id, pid, epoch, topic, 0, 0, version=12, values=(b"a", b"b"))
    s.call(DESCRIBE_PRODUCERS, 0, body)
    s.end(txn_id, pid, epoch, commit=True, version=5)
    s.settle(txn_id)
    s.call(DESCRIBE_PRODUCERS, 0, body)


def write_txn_markers(s: TxnSession) -> None:
    """WriteTxnMarkers sent by a client (Kafka's coordinator is its only real sender)."""
    topic = s.topic()
    txn_id, pid, epoch = _begin(s)
    s.add_partitions(txn_id, pid, epoch, {topic: [0]})
    s.produce(txn_id, pid, epoch, topic, 0, 0)
    s.call(MARKERS, 1, {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": False,
                                     "topics": [{"name": s.name("nosuch"), "partition_indexes": [0]},
                                                {"name": topic, "partition_indexes": [9]}],
                                     "coordinator_epoch": 0}]})
    s.lso(topic)
    s.describe(txn_id)


def _validate_features(s: TxnSession, version: int, *updates: tuple[str, int, int]):
    return s.call(UPDATE_FEATURES, version, {"timeout_ms": 10000, "validate_only": True, "feature_updates": [
        {"feature": f, "max_version_level": level, "upgrade_type": upgrade} for f, level, upgrade in updates]})


def update_features(s: TxnSession) -> None:
    """UpdateFeatures with validate_only: what would change transaction.version, changing nothing."""
    for version in (1, 2):
        for level, upgrade in ((2, 1), (1, 2), (0, 3)):
            _validate_features(s, version, ("transaction.version", level, upgrade))


def update_features_refused(s: TxnSession) -> None:
    """UpdateFeatures refusing a level past the supported range, an upgrade that is a downgrade,
    and an unknown feature."""
    for version in (1, 2):
        _validate_features(s, version, ("transaction.version", 9, 1))
        _validate_features(s, version, ("transaction.version", 1, 1))
        _validate_features(s, version, ("no.such.feature", 1, 1))


def update_features_twice(s: TxnSession) -> None:
    """UpdateFeatures naming one feature twice."""
    for version in (1, 2):
        _validate_features(s, version, ("transaction.version", 2, 1), ("transaction.version", 1, 2))


SCENARIOS = {
    "txn-init-producer-id": init_producer_id,
    "txn-add-partitions-v3": add_partitions_v3,
    "txn-produce-without-add": produce_without_add,
    "txn-offset-commit": txn_offset_commit,
    "txn-end-v4": end_txn_v4,
    "txn-end-v5": end_txn_v5,
    "txn-out-of-order": out_of_order,
    "txn-describe-list": describe_list_transactions,
    "txn-describe-unknown": describe_unknown,
    "txn-describe-producers": describe_producers,
    "txn-write-markers": write_txn_markers,
    "txn-update-features": update_features,
    "txn-update-features-refused": update_features_refused,
    "txn-update-features-twice": update_features_twice,
}
