"""AlterShareGroupOffsets (KIP-932): set where an empty share group's share-partitions start, as
Kafka 4.3.1's KafkaApis and GroupMetadataManager.alterShareGroupOffsets answer it. The state of
each partition starts afresh at the offset (Kafka's persister initializeState), whether or not
the group fetched it before; an unknown group id becomes an empty share group, as on Kafka."""
import uuid

from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

_ZERO = uuid.UUID(int=0)
_MESSAGES = {ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition."}


def _failed(version: int, body, code: int, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "responses": []}


def _partition(index: int, error: ErrorCode) -> dict:
    return {"partition_index": index, "error_code": error, "error_message": _MESSAGES.get(error)}


async def alter_share_group_offsets(ctx, req):
    if not ctx.broker.features.share_enabled():
        return _failed(ctx.api_version, req, ErrorCode.UNSUPPORTED_VERSION)
    may_read = topic_gate(ctx)
    refused: dict[str, ErrorCode] = {}
    for t in req.topics:
        if not may_read(t.topic_name):
            refused[t.topic_name] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif ctx.broker.topics.get(t.topic_name) is None:
            refused[t.topic_name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    check = ctx.broker.coordinator.for_group(req.group_id).check_share_offsets_change(req.group_id, create=True)
    if check.error != ErrorCode.NONE:
        return _failed(ctx.api_version, req, check.error, check.message)
    offsets = {(t.topic_name, p.partition_index): p.start_offset
               for t in req.topics if t.topic_name not in refused for p in t.partitions}
    errors = ctx.broker.shares.alter_start_offset(req.group_id, offsets)
    responses = []
    for t in req.topics:
        topic = ctx.broker.topics.get(t.topic_name)
        error = refused.get(t.topic_name)
        responses.append({
            "topic_name": t.topic_name, "topic_id": topic.topic_id if topic is not None else _ZERO,
            "partitions": [_partition(p.partition_index, error or errors[(t.topic_name, p.partition_index)])
                           for p in t.partitions]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}


DESCRIPTOR = ApiDescriptor(
    ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, alter_share_group_offsets,
    "the start offsets of an empty share group's share-partitions (a group with members gets NON_EMPTY_GROUP)",
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.READ),
    error_response=_failed)
