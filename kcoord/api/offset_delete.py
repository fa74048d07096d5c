"""OffsetDelete: drop a group's offsets for partitions no member subscribes to."""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode
from wire import codec


def _subscribed_topics(group) -> set[str]:
    """Topics the members subscribe to, read from their consumer-protocol metadata."""
    if group.protocol_type != "consumer" or group.protocol_name is None:
        return set()
    topics = set()
    for member in group.members.values():
        try:
            meta = member.metadata(group.protocol_name)
            version = int.from_bytes(meta[:2], "big", signed=True)
            layout = codec.compiled_message("ConsumerProtocolSubscription", min(max(version, 0), 3))
            topics.update(layout.decode(meta[2:]).topics)
        except Exception:
            continue  # unreadable metadata subscribes to nothing we can name
    return topics


async def offset_delete(ctx, req):
    may_read = topic_gate(ctx)
    wanted = [(t.name, p.partition_index) for t in req.topics for p in t.partitions if may_read(t.name)]
    result = ctx.broker.coordinator.for_group(req.group_id).delete_offsets(req.group_id, wanted, _subscribed_topics)
    by_topic: dict[str, list] = {}
    for t in req.topics:
        if not may_read(t.name):  # as Kafka: Read on each topic, answered per partition
            by_topic.setdefault(t.name, []).extend(
                {"partition_index": p.partition_index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
                for p in t.partitions)
    for topic, partition, e in result.partitions:
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": e})
    return {"error_code": result.error, "throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.OFFSET_DELETE, 0, 0, offset_delete,
    "a subscribed topic's offsets stay (GROUP_SUBSCRIBED_TO_TOPIC)",
    groups=named_group, group_acl=GroupAcl(GroupOperation.DELETE), topic_acl=TopicAcl(TopicOperation.READ))
