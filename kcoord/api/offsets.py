"""OffsetCommit (8, v2-10), OffsetFetch (9, v1-10), OffsetDelete (47, v0).

From v10 both name topics by id; the coordinator keeps offsets by name, so ids
are resolved here, and an id no topic has gets UNKNOWN_TOPIC_ID per partition
as in Kafka.
"""
from kcoord.api import handles
from kcoord.coordinator import OffsetCommitPartition, OffsetCommitRequest
from wire import codec
from wire.errors import ErrorCode


def _topic_name(ctx, t) -> str | None:
    """The topic's name; None for a v10+ topic id that names no topic."""
    if ctx.api_version < 10:
        return t.name
    topic = ctx.broker.topics.by_id(t.topic_id)
    return None if topic is None else topic.name


def _topic_key(ctx, name: str) -> dict:
    """How a response names a topic at this version."""
    if ctx.api_version < 10:
        return {"name": name}
    topic = ctx.broker.topics.get(name)
    return {"topic_id": topic.topic_id if topic is not None else None}


@handles(8, "OffsetCommit", 2, 10)
async def offset_commit(ctx, req):
    unknown_ids = []
    partitions = []
    for t in req.topics:
        name = _topic_name(ctx, t)
        if name is None:
            unknown_ids.append({"topic_id": t.topic_id, "partitions": [
                {"partition_index": p.partition_index, "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
                for p in t.partitions]})
            continue
        partitions += [OffsetCommitPartition(name, p.partition_index, p.committed_offset,
                                             p.get("committed_leader_epoch", -1), p.committed_metadata)
                       for p in t.partitions]
    result = await ctx.broker.coordinator.commit_offsets(OffsetCommitRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        generation_id=req.generation_id_or_member_epoch,
        instance_id=req.get("group_instance_id"),
        partitions=partitions,
        version=ctx.api_version,
        retention_ms=req.get("retention_time_ms", -1),
    ))
    by_topic: dict[str, list] = {}
    for topic, partition, error in result.partitions:
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return {"throttle_time_ms": 0, "topics": unknown_ids + [{**_topic_key(ctx, t), "partitions": ps}
                                                            for t, ps in by_topic.items()]}


def _fetched(partition, offset=-1, leader_epoch=-1, metadata="", error=ErrorCode.NONE) -> dict:
    return {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": leader_epoch,
            "metadata": metadata, "error_code": error}


async def _fetch_group(ctx, group_id, topics):
    wanted = None
    unknown_ids = []
    if topics is not None:
        wanted = []
        for t in topics:
            name = _topic_name(ctx, t)
            if name is None:
                unknown_ids.append({"topic_id": t.topic_id, "partitions": [
                    _fetched(p, error=ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partition_indexes]})
            else:
                wanted += [(name, p) for p in t.partition_indexes]
    error, fetched = await ctx.broker.coordinator.fetch_offsets(group_id, wanted)
    by_topic: dict[str, list] = {}
    for f in fetched:
        by_topic.setdefault(f.topic, []).append(_fetched(f.partition, f.offset, f.leader_epoch, f.metadata, f.error))
    named = [{**_topic_key(ctx, t), "partitions": ps} for t, ps in by_topic.items()]
    if wanted is None and ctx.api_version >= 10:
        # Offsets of a deleted topic have no id left to be named by.
        named = [t for t in named if t["topic_id"] is not None]
    return error, unknown_ids + named


@handles(9, "OffsetFetch", 1, 10)
async def offset_fetch(ctx, req):
    if ctx.api_version < 8:
        error, topics = await _fetch_group(ctx, req.group_id, req.topics)
        return {"throttle_time_ms": 0, "topics": topics, "error_code": error}
    groups = []
    for g in req.groups:
        error, topics = await _fetch_group(ctx, g.group_id, g.topics)
        groups.append({"group_id": g.group_id, "topics": topics, "error_code": error})
    return {"throttle_time_ms": 0, "groups": groups}


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


@handles(47, "OffsetDelete", 0, 0)
async def offset_delete(ctx, req):
    wanted = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
    result = await ctx.broker.coordinator.delete_offsets(req.group_id, wanted, _subscribed_topics)
    error = result.error
    by_topic: dict[str, list] = {}
    for topic, partition, e in result.partitions:
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": e})
    return {"error_code": error, "throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
