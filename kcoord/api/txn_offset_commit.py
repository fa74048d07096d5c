"""TxnOffsetCommit: a transactional producer commits a group's offsets inside its transaction
(KIP-98, KIP-447); they stay pending until the transaction's marker commits or aborts them."""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.api._transactions import transactional_id_allowed
from kcoord.api.offset_commit import _failed
from kcoord.coordinator.requests import OffsetCommitPartition, TxnOffsetCommitRequest
from kcoord.log.consumer_offsets import TOPIC as OFFSETS_TOPIC
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

# The group's member may be named from v3 (KIP-447); before v2 a client knows no
# COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296): it hears COORDINATOR_NOT_AVAILABLE instead.
MEMBER_SINCE = 3
LOADING_KNOWN_SINCE = 2
# From v4 a client knows TRANSACTION_ABORTABLE (KIP-890); before, it hears INVALID_TXN_STATE.
GENERIC_ERRORS_SINCE = 4
# From v5 (transaction version 2, KIP-890) the commit itself adds the group's partition to the
# transaction; before, AddOffsetsToTxn has, and it is only verified.
ADDS_PARTITION_SINCE = 5


async def txn_offset_commit(ctx, req):
    version = ctx.api_version
    if not transactional_id_allowed(ctx, req.transactional_id):
        return _failed(version, req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    may_read = topic_gate(ctx)
    exists = ctx.broker.topics.partition_exists
    refused: dict[str, list] = {}
    partitions = []
    for t in req.topics:
        # As Kafka's KafkaApis: Read on each topic, and the topic and partition known, before
        # the group coordinator (and the transaction) hear of the request.
        for p in t.partitions:
            error = (ErrorCode.TOPIC_AUTHORIZATION_FAILED if not may_read(t.name)
                     else ErrorCode.NONE if exists(t.name, p.partition_index) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if error:
                refused.setdefault(t.name, []).append({"partition_index": p.partition_index, "error_code": error})
            else:
                partitions.append(OffsetCommitPartition(t.name, p.partition_index, p.committed_offset,
                                                        p.get("committed_leader_epoch", -1), p.committed_metadata))
    answered = []
    if partitions:
        answered = _commit(ctx, req, partitions)
        if version < LOADING_KNOWN_SINCE:
            answered = [(t, p, ErrorCode.COORDINATOR_NOT_AVAILABLE if e == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else e)
                        for t, p, e in answered]
    by_topic = refused
    for topic, partition, error in answered:
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return {"throttle_time_ms": 0, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}


def _commit(ctx, req, partitions) -> list[tuple[str, int, ErrorCode]]:
    """The coordinator's answer, once the transaction coordinator has verified (v5+: added) the
    group's __consumer_offsets partition in the producer's transaction."""
    coordinator = ctx.broker.coordinator.for_group(req.group_id)
    # A broker that does not coordinate the group says so before the transaction is touched.
    error = coordinator.availability(req.group_id) if req.group_id else ErrorCode.INVALID_GROUP_ID
    if not error:
        index = ctx.broker.coordinator.partition_for(req.group_id)
        error = ctx.broker.transactions.verify_or_add(req.transactional_id, req.producer_id, req.producer_epoch,
                                                      [(OFFSETS_TOPIC, index)],
                                                      add=ctx.api_version >= ADDS_PARTITION_SINCE,
                                                      generic_errors=ctx.api_version >= GENERIC_ERRORS_SINCE)
    if error:
        return [(p.topic, p.partition, error) for p in partitions]
    member = ctx.api_version >= MEMBER_SINCE
    return coordinator.txn_offset_commit(TxnOffsetCommitRequest(
        group_id=req.group_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
        partitions=partitions,
        member_id=req.member_id if member else "",
        generation_id=req.generation_id if member else -1,
        instance_id=req.group_instance_id if member else None,
    )).partitions


DESCRIPTOR = ApiDescriptor(
    ApiKey.TXN_OFFSET_COMMIT, 0, 5, txn_offset_commit,
    "offsets committed in a transaction, pending until its marker; validated as Kafka validates them",
    version_notes={LOADING_KNOWN_SINCE: "COORDINATOR_LOAD_IN_PROGRESS (before: COORDINATOR_NOT_AVAILABLE)",
                   MEMBER_SINCE: "member id, generation and group instance id checked (KIP-447)",
                   GENERIC_ERRORS_SINCE: "TRANSACTION_ABORTABLE for a partition not in the transaction "
                                         "(before: INVALID_TXN_STATE)",
                   ADDS_PARTITION_SINCE: "adds the group's partition to the transaction (KIP-890)"},
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.READ),
    error_response=_failed)
