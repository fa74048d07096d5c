"""DescribeShareGroupOffsets (KIP-932): the start offset, leader epoch and lag of a share group's
share-partitions, as Kafka 4.3.1's KafkaApis and GroupCoordinatorService answer it.

As Kafka's, it does not look the group up: a group with no state (unknown, empty, or of another
type) has start offset -1 for each partition asked for, and no topic when all are asked for."""
import uuid

from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupBatch, GroupOperation, TopicAcl, TopicOperation
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

_ZERO = uuid.UUID(int=0)
_DENIED_TOPIC = "Topic authorization failed."


def _group(group_id: str, code: ErrorCode, message: str | None = None) -> dict:
    return {"group_id": group_id, "topics": [], "error_code": code, "error_message": message}


def _partition(index: int, error: ErrorCode = ErrorCode.NONE, message: str | None = None, start_offset: int = -1,
               leader_epoch: int = 0, lag: int = -1) -> dict:
    return {"partition_index": index, "start_offset": start_offset, "leader_epoch": leader_epoch, "lag": lag,
            "error_code": error, "error_message": message}


def _describe(ctx, group_id: str, wanted: dict[str, list[int]]) -> list[dict]:
    """The topics of `wanted` as the share coordinator holds them for `group_id`."""
    shares = ctx.broker.shares
    found = shares.describe_offsets(group_id, [(t, p) for t, ps in wanted.items() for p in ps])
    topics = []
    for name, partitions in wanted.items():
        topic = ctx.broker.topics.get(name)
        if topic is None:
            # As Kafka: an unknown topic is no offset information, not an error.
            topics.append({"topic_name": name, "topic_id": _ZERO, "partitions": [_partition(p) for p in partitions]})
            continue
        entries = []
        for p in partitions:
            s = found[(name, p)]
            if s.error != ErrorCode.NONE or s.start_offset < 0:
                # Kafka's persister answers a partition it has no state for (or fails to read)
                # with no offset: start -1, epoch 0, lag -1.
                entries.append(_partition(p))
            else:
                entries.append(_partition(p, start_offset=s.start_offset, leader_epoch=s.leader_epoch, lag=s.lag))
        topics.append({"topic_name": name, "topic_id": topic.topic_id, "partitions": entries})
    return topics


def _describe_group(ctx, group) -> dict:
    may_describe = topic_gate(ctx)
    if group.topics is None:
        # All topics: the group coordinator names the share-partitions with state, so a broker
        # that does not coordinate the group refuses it.
        error = ctx.broker.coordinator.for_group(group.group_id).availability(group.group_id)
        if error:
            return _group(group.group_id, error)
        wanted = ctx.broker.shares.partitions_with_state(group.group_id)
        # Kafka drops the topics the client may not describe from the answer.
        return _group(group.group_id, ErrorCode.NONE) | {
            "topics": _describe(ctx, group.group_id, {t: ps for t, ps in wanted.items() if may_describe(t)})}
    allowed = {t.topic_name: list(t.partitions) for t in group.topics if may_describe(t.topic_name)}
    topics = _describe(ctx, group.group_id, allowed)
    for t in group.topics:
        if not may_describe(t.topic_name):
            topics.append({"topic_name": t.topic_name, "topic_id": _ZERO, "partitions": [
                _partition(p, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _DENIED_TOPIC) for p in t.partitions]})
    return _group(group.group_id, ErrorCode.NONE) | {"topics": topics}


async def describe_share_group_offsets(ctx, req):
    if not ctx.broker.features.share_enabled():
        return {"throttle_time_ms": 0, "groups": [_group(g.group_id, ErrorCode.UNSUPPORTED_VERSION)
                                                  for g in req.groups]}
    return {"throttle_time_ms": 0, "groups": [_describe_group(ctx, g) for g in req.groups]}


_GROUPS = GroupBatch("groups", lambda g: g.group_id, "groups", _group)

DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, describe_share_group_offsets,
    "start offset and leader epoch of a share group's share-partitions (null topics: all it has state "
    "for); a partition without state has start offset -1",
    version_notes={1: "the lag of each share-partition"},
    groups=lambda version, body: _GROUPS, group_acl=GroupAcl(GroupOperation.DESCRIBE),
    topic_acl=TopicAcl(TopicOperation.DESCRIBE))
