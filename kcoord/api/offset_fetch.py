"""OffsetFetch: a group's committed offsets, for chosen partitions or all."""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupBatch, GroupOperation, TopicAcl, TopicOperation
from kcoord.api._offset_topics import TOPIC_IDS_SINCE, topic_key, topic_name
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

BATCHED_SINCE = 8


def _fetched(partition, offset=-1, leader_epoch=-1, metadata="", error=ErrorCode.NONE) -> dict:
    return {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": leader_epoch,
            "metadata": metadata, "error_code": error}


def _fetch_group(ctx, group_id, topics, member_id=None, member_epoch=-1, require_stable=False):
    wanted = None
    unknown_ids = []
    may_describe = topic_gate(ctx)
    denied = []
    if topics is not None:
        wanted = []
        for t in topics:
            name = topic_name(ctx, t)
            if name is not None and not may_describe(name):
                # As Kafka: a topic asked for without Describe on it is answered per
                # partition; one the principal may not describe is left out of "all".
                denied.append({**topic_key(ctx, name), "partitions": [
                    _fetched(p, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partition_indexes]})
            elif name is None:
                unknown_ids.append({"topic_id": t.topic_id, "partitions": [
                    _fetched(p, error=ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partition_indexes]})
            else:
                wanted += [(name, p) for p in t.partition_indexes]
    error, fetched = ctx.broker.coordinator.for_group(group_id).fetch_offsets(group_id, wanted, member_id, member_epoch,
                                                                              require_stable)
    by_topic: dict[str, list] = {}
    for f in fetched:
        if not may_describe(f.topic):
            continue
        by_topic.setdefault(f.topic, []).append(_fetched(f.partition, f.offset, f.leader_epoch, f.metadata, f.error))
    named = [{**topic_key(ctx, t), "partitions": ps} for t, ps in by_topic.items()]
    if wanted is None and ctx.api_version >= TOPIC_IDS_SINCE:
        # Offsets of a deleted topic have no id left to be named by.
        named = [t for t in named if t["topic_id"] is not None]
    return error, unknown_ids + named + denied


async def offset_fetch(ctx, req):
    if ctx.api_version < BATCHED_SINCE:
        error, topics = _fetch_group(ctx, req.group_id, req.topics, require_stable=req.get("require_stable", False))
        return {"throttle_time_ms": 0, "topics": topics, "error_code": error}
    groups = []
    for g in req.groups:
        # v9+: a consumer group's member names itself and its epoch (KIP-848).
        error, topics = _fetch_group(ctx, g.group_id, g.topics, g.get("member_id"), g.get("member_epoch", -1),
                                     req.require_stable)
        groups.append({"group_id": g.group_id, "topics": topics, "error_code": error})
    return {"throttle_time_ms": 0, "groups": groups}


_GROUPS = GroupBatch("groups", lambda g: g.group_id, "groups",
                     lambda group_id, code: {"group_id": group_id, "topics": [], "error_code": code})


def _groups(version, body):
    return _GROUPS if version >= BATCHED_SINCE else body.group_id


def _failed(version, body, code):
    return {"topics": [], "error_code": code}


DESCRIPTOR = ApiDescriptor(
    ApiKey.OFFSET_FETCH, 1, 10, offset_fetch,
    "all of a group's offsets, or chosen partitions'",
    version_notes={2: "a top-level error code (until v7)", BATCHED_SINCE: "several groups per request (KIP-709)",
                   7: "require_stable: a partition with a transaction's offset pending answers "
                      "UNSTABLE_OFFSET_COMMIT",
                   9: "member id and epoch of a consumer group's member checked (STALE_MEMBER_EPOCH)",
                   TOPIC_IDS_SINCE: "topics by id; an unknown id gets UNKNOWN_TOPIC_ID"},
    groups=_groups, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.DESCRIBE),
    error_response=_failed,
    inline=True)
