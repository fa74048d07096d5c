"""Produce: record batches v2 appended to in-memory partitions.

acks=0 gets no response, as in Kafka. Idempotent producers' sequences and epochs
are checked per (producer id, partition) like Kafka's producer state, and a retry
of one of a producer's last five batches is answered with its first base offset
(kcoord.log.partition).

A transactional producer's first batch to a partition in a transaction is checked with the
transaction coordinator first, as Kafka's partition leaders do (KIP-890): from v12 (transaction
version 2) the partition is added to the transaction then; before, it must have been added
with AddPartitionsToTxn, else INVALID_TXN_STATE.
"""
import logging

from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._leadership import current_leader, node_endpoints, serving_error
from kcoord.api._transactions import transactional_id_allowed
from kcoord.log.partition import AppendError
from kcoord.security.acls import topic_gate
from wire import records as R
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.produce")

# Kafka answers a producer's sequence and epoch errors without an error message (the reference
# Kafka 4.3.1 sends none); kcoord logs the reason instead.
_WITHOUT_MESSAGE = frozenset({"OUT_OF_ORDER_SEQUENCE_NUMBER", "INVALID_PRODUCER_EPOCH"})


def _min_isr(broker, topic, partition) -> int:
    """min.insync.replicas of the topic (else the cluster's dynamic default, else 1), at most
    the partition's replicas, as Kafka's effective minimum."""
    dynamic = broker.dynamic_configs.default if broker.dynamic_configs is not None else {}
    value = topic.configs.get("min.insync.replicas") or dynamic.get("min.insync.replicas") or "1"
    return min(int(value), len(partition.replicas))


# Coordinator errors a client before transaction version 2 would not retry: Kafka answers them
# with a retriable one that does not refresh metadata.
_RETRIED_AS_NOT_ENOUGH_REPLICAS = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                             ErrorCode.NOT_COORDINATOR})


def _first_transactional(blob: bytes):
    """(producer id, epoch) of the records' first batch when it is transactional, else None."""
    try:
        first = next(R.iter_batches(blob, validate_crc=False), None)
    except R.RecordsError:
        return None   # the append says what is wrong with it
    if first is None or not first.is_transactional or first.producer_id < 0:
        return None
    return first.producer_id, first.producer_epoch


def _verify_transaction(ctx, req, store) -> dict:
    """(topic, partition) -> (error, message) of the partitions whose first transactional batch
    the coordinator refused (verification or, from v12, the implicit add)."""
    wanted = []
    producer = None
    for topic_data in req.topic_data:
        topic = store.resolve(topic_data.get("name"), topic_data.get("topic_id"))
        if topic is None:
            continue
        for pd in topic_data.partition_data:
            partition = store.partition(topic.name, pd.index)
            info = _first_transactional(pd.records or b"") if partition is not None else None
            if info is None or info[0] in partition.open_transactions():
                continue
            producer = info
            wanted.append((topic.name, pd.index))
    if not wanted:
        return {}
    add = ctx.api_version >= 12
    answers = ctx.broker.transactions.verify_partitions(req.transactional_id, producer[0], producer[1], wanted,
                                                        add=add, generic_errors=ctx.api_version >= 11)
    refused = {}
    for tp, code in answers.items():
        if code == ErrorCode.NONE:
            continue
        if code in _RETRIED_AS_NOT_ENOUGH_REPLICAS or (code == ErrorCode.CONCURRENT_TRANSACTIONS and not add):
            refused[tp] = (ErrorCode.NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to the "
                                                          f"transaction. Underlying error: {code.name}")
        elif code == ErrorCode.INVALID_TXN_STATE:
            refused[tp] = (code, "Partition was not added to the transaction")
        else:
            refused[tp] = (code, None)
    return refused


async def produce(ctx, req):
    store = ctx.broker.topics
    may_write = topic_gate(ctx)
    transactional = req.transactional_id is not None
    if transactional and not transactional_id_allowed(ctx, req.transactional_id):
        refused_txn = None   # every partition: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        refused_txn = _verify_transaction(ctx, req, store) if transactional else {}
    appended = False
    leaders = []   # of the partitions answered NOT_LEADER_OR_FOLLOWER (KIP-951)
    responses = []
    for topic_data in req.topic_data:
        name = topic_data.get("name")
        topic = store.resolve(name, topic_data.get("topic_id"))
        partition_responses = []
        for pd in topic_data.partition_data:
            r = {"index": pd.index, "error_code": ErrorCode.NONE, "base_offset": -1,
                 "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [], "error_message": None}
            partition = None if topic is None else store.partition(topic.name, pd.index)
            if (topic is not None or name is not None) and not may_write(name if topic is None else topic.name):
                # Kafka decides Write before looking the topic up: a denied name is never
                # told whether it exists.
                r["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition is None:
                # v13+ names topics by id only: an id nobody knows is UNKNOWN_TOPIC_ID.
                r["error_code"] = (ErrorCode.UNKNOWN_TOPIC_ID if name is None and topic is None
                                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif serving_error(ctx.broker, partition) is not None:
                r["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                if ctx.api_version >= 10:
                    r["current_leader"] = current_leader(partition)
                    leaders.append(partition.leader)
            elif req.acks == -1 and len(partition.isr) < _min_isr(ctx.broker, topic, partition):
                # Kafka's leader refuses an acks=all write its in-sync replicas cannot make safe.
                r["error_code"] = ErrorCode.NOT_ENOUGH_REPLICAS
                r["error_message"] = (f"The size of the current ISR : {len(partition.isr)} is insufficient to "
                                      f"satisfy the min.isr requirement of {_min_isr(ctx.broker, topic, partition)}"
                                      f" for partition {topic.name}-{pd.index}, live replica(s) broker.id are : "
                                      f"[{', '.join(map(str, partition.isr))}]")
            elif topic.internal:
                # Kafka's ReplicaManager: only the broker itself appends to internal topics
                # (its InvalidTopicException reaches the producer without a message).
                r["error_code"] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif refused_txn is None:
                r["error_code"] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            elif (topic.name, pd.index) in refused_txn:
                code, message = refused_txn[(topic.name, pd.index)]
                r["error_code"], r["error_message"] = code, message
            else:
                try:
                    r["base_offset"] = partition.append(pd.records or b"")
                    r["log_start_offset"] = partition.log_start_offset
                    appended = True
                except AppendError as err:
                    r["error_code"] = ErrorCode[err.code_name]
                    if err.code_name in _WITHOUT_MESSAGE:
                        log.info("produce to %s-%d: %s", topic.name, pd.index, err)
                    else:
                        r["error_message"] = str(err)
            partition_responses.append(r)
        responses.append({"name": name, "topic_id": topic_data.get("topic_id"),
                          "partition_responses": partition_responses})
    if appended:
        store.notify_appended()
    if req.acks == 0:
        return None
    answer = {"responses": responses, "throttle_time_ms": 0}
    if leaders:
        answer["node_endpoints"] = node_endpoints(ctx.broker, leaders)
    return answer


DESCRIPTOR = ApiDescriptor(
    ApiKey.PRODUCE, 3, 13, produce,
    "record batches v2, offsets assigned, acks 0/1/-1; idempotent producers: sequences and epochs checked, "
    "a retry of one of the last five batches answered with its first offset",
    topic_acl=TopicAcl(TopicOperation.WRITE),
    version_notes={10: "a partition led elsewhere: NOT_LEADER_OR_FOLLOWER with the current leader (KIP-951)",
                   13: "topics by id; an unknown id gets UNKNOWN_TOPIC_ID"})
