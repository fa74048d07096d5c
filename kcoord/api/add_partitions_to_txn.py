"""AddPartitionsToTxn: a transactional producer names the partitions it is about to write (v0–3,
transaction version 0/1 clients); v4+ is the brokers' batched form, where a partition leader
verifies (or, v5 with transaction version 2, adds) partitions for a producer."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._transactions import coordinator, transactional_id_allowed
from kcoord.security.acls import cluster_allowed, topic_gate
from wire.errors import ErrorCode

BATCHED_SINCE = 4


def _results(topics, code_of):
    return [{"name": t.name, "results_by_partition": [
        {"partition_index": p, "partition_error_code": code_of(t.name, p)} for p in t.partitions]}
        for t in topics]


def _one(ctx, transactional_id, producer_id, epoch, topics, verify_only):
    """The per-topic results of one transaction's partitions."""
    may_write = topic_gate(ctx)
    denied = {(t.name, p) for t in topics for p in t.partitions if not may_write(t.name)}
    unknown = {(t.name, p) for t in topics for p in t.partitions
               if (t.name, p) not in denied and not ctx.broker.topics.partition_exists(t.name, p)}
    if not transactional_id_allowed(ctx, transactional_id):
        return _results(topics, lambda t, p: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if denied or unknown:
        # Kafka adds none of them: the refused ones say why, the others OPERATION_NOT_ATTEMPTED.
        return _results(topics, lambda t, p: ErrorCode.TOPIC_AUTHORIZATION_FAILED if (t, p) in denied
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if (t, p) in unknown
                        else ErrorCode.OPERATION_NOT_ATTEMPTED)
    partitions = [(t.name, p) for t in topics for p in t.partitions]
    error, txn = coordinator(ctx, transactional_id)
    if txn is None:
        return _results(topics, lambda t, p: error)
    if verify_only:
        answers = txn.verify(transactional_id, producer_id, epoch, partitions)
        return _results(topics, lambda t, p: answers[(t, p)])
    code = txn.add_partitions(transactional_id, producer_id, epoch, partitions,
                              client_version=2 if ctx.api_version >= BATCHED_SINCE else 0)
    return _results(topics, lambda t, p: code)


async def add_partitions_to_txn(ctx, req):
    if ctx.api_version < BATCHED_SINCE:
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _one(
            ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)}
    if not cluster_allowed(ctx, "ClusterAction"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "results_by_transaction": []}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": [
        {"transactional_id": t.transactional_id,
         "topic_results": _one(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only)}
        for t in req.transactions]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, add_partitions_to_txn,
    "partitions added to the producer's ongoing transaction (it starts with the first)",
    topic_acl=TopicAcl(TopicOperation.WRITE),
    version_notes={4: "the brokers' batched form (ClusterAction): verify only, or add (transaction version 2)"})
