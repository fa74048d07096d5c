"""OffsetCommit (8, v2-10), OffsetFetch (9, v1-9), OffsetDelete (47, v0)."""
from kcoord.api import handles
from kcoord.coordinator import OffsetCommitPartition
from wire import codec
from wire.errors import ErrorCode


@handles(8, "OffsetCommit", 2, 9)
async def offset_commit(ctx, req):
    partitions = [OffsetCommitPartition(t.name, p.partition_index, p.committed_offset,
                                        p.get("committed_leader_epoch", -1), p.committed_metadata)
                  for t in req.topics for p in t.partitions]
    result = await ctx.broker.coordinator.commit_offsets(
        req.group_id,
        member_id=req.member_id,
        generation_id=req.generation_id_or_member_epoch,
        instance_id=req.get("group_instance_id"),
        partitions=partitions,
        version=ctx.api_version,
        retention_ms=req.get("retention_time_ms", -1),
    )
    by_topic: dict[str, list] = {}
    for topic, partition, error in result.partitions:
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    return {"throttle_time_ms": 0, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}


async def _fetch_group(ctx, group_id, topics):
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    error, fetched = await ctx.broker.coordinator.fetch_offsets(group_id, wanted)
    by_topic: dict[str, list] = {}
    for f in fetched:
        by_topic.setdefault(f.topic, []).append({
            "partition_index": f.partition, "committed_offset": f.offset, "committed_leader_epoch": f.leader_epoch,
            "metadata": f.metadata, "error_code": f.error})
    return error, [{"name": t, "partitions": ps} for t, ps in by_topic.items()]


@handles(9, "OffsetFetch", 1, 9)
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
    error, results = await ctx.broker.coordinator.delete_offsets(req.group_id, wanted, _subscribed_topics)
    by_topic: dict[str, list] = {}
    for topic, partition, e in results:
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": e})
    return {"error_code": error, "throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
