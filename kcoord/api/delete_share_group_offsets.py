"""DeleteShareGroupOffsets (KIP-932): forget an empty share group's share-partition state of whole
topics, as Kafka 4.3.1's KafkaApis and GroupCoordinatorShard.initiateDeleteShareGroupOffsets
answer it; the group's next fetch of such a topic starts from its share.auto.offset.reset."""
import uuid

from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

_ZERO = uuid.UUID(int=0)


def _failed(version: int, body, code: int, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "responses": []}


def _topic(name: str, topic_id: uuid.UUID, error: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict:
    return {"topic_name": name, "topic_id": topic_id, "error_code": error, "error_message": message}


async def delete_share_group_offsets(ctx, req):
    if not ctx.broker.features.share_enabled():
        return _failed(ctx.api_version, req, ErrorCode.UNSUPPORTED_VERSION)
    may_read = topic_gate(ctx)
    denied = [_topic(t.topic_name, _ZERO, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
              for t in req.topics if not may_read(t.topic_name)]
    check = ctx.broker.coordinator.for_group(req.group_id).check_share_offsets_change(req.group_id)
    if check.error != ErrorCode.NONE:
        return _failed(ctx.api_version, req, check.error, check.message)
    shares = ctx.broker.shares
    with_state = shares.partitions_with_state(req.group_id)
    deleted, failed = [], []
    for name in dict.fromkeys(t.topic_name for t in req.topics if may_read(t.topic_name)):
        topic = ctx.broker.topics.get(name)
        if topic is None:
            failed.append(_topic(name, _ZERO, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 "This server does not host this topic-partition."))
        elif name not in with_state:
            failed.append(_topic(name, _ZERO, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 "There is no offset information to delete."))
        else:
            error = next((e for e in shares.delete_state(req.group_id, [name]).values() if e != ErrorCode.NONE),
                         ErrorCode.NONE)
            (failed if error else deleted).append(_topic(name, topic.topic_id, error))
    # Kafka lists the deleted topics first, then the ones that failed, after those denied.
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": denied + deleted + failed}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, delete_share_group_offsets,
    "an empty share group's share-partition state of whole topics (a group with members gets NON_EMPTY_GROUP)",
    groups=named_group, group_acl=GroupAcl(GroupOperation.DELETE), topic_acl=TopicAcl(TopicOperation.READ),
    error_response=_failed)
