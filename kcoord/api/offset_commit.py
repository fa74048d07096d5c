"""OffsetCommit: a member (or a simple group) commits offsets."""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.api._offset_topics import TOPIC_IDS_SINCE, topic_key, topic_name
from kcoord.coordinator import OffsetCommitPartition, OffsetCommitRequest
from kcoord.security.acls import topic_gate
from wire.codec import EncodedBody, message
from wire.errors import ErrorCode

# A consumer commits the same partitions over and over, and the answer depends only on them,
# their errors and the version: each such answer is encoded once and kept instead of being
# rebuilt and encoded on every commit. Bounded whatever clients send: commits of at most
# _MEMO_PARTITIONS partitions, and about _MEMO_BYTES in all (then it starts again); a key holds
# the topic names the answer spells out, and a small tuple per partition.
_ANSWERS: dict[tuple, EncodedBody] = {}
_MEMO_PARTITIONS = 64
_MEMO_BYTES = 4 << 20
_memo_bytes = 0


async def offset_commit(ctx, req):
    unknown_ids = []
    partitions = []
    may_read = topic_gate(ctx)
    denied: dict[str, list] = {}
    for t in req.topics:
        name = topic_name(ctx, t)
        if name is not None and not may_read(name):
            # As Kafka: Read on the group is not enough, each topic needs Read too.
            denied.setdefault(name, []).extend(
                {"partition_index": p.partition_index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
                for p in t.partitions)
            continue
        if name is None:
            unknown_ids.append({"topic_id": t.topic_id, "partitions": [
                {"partition_index": p.partition_index, "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
                for p in t.partitions]})
            continue
        # Items, not attributes: a Message's attribute access is a Python call, per partition.
        partitions += [OffsetCommitPartition(name, p["partition_index"], p["committed_offset"],
                                             p.get("committed_leader_epoch", -1), p["committed_metadata"])
                       for p in t["partitions"]]
    result = ctx.broker.coordinator.for_group(req.group_id).commit_offsets(OffsetCommitRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        generation_id=req.generation_id_or_member_epoch,
        instance_id=req.get("group_instance_id"),
        partitions=partitions,
        version=ctx.api_version,
        retention_ms=req.get("retention_time_ms", -1),
    ))
    key = None
    if not denied and not unknown_ids and len(result.partitions) <= _MEMO_PARTITIONS:
        # From v10 a topic is named by id in the answer: the id is part of the answer's key.
        key = (ctx.api_version, tuple(result.partitions)) if ctx.api_version < TOPIC_IDS_SINCE \
            else (ctx.api_version, tuple(result.partitions), tuple(t.topic_id for t in req.topics))
        known = _ANSWERS.get(key)
        if known is not None:
            return known
    by_topic: dict[str, list] = dict(denied)
    for topic, partition, error in result.partitions:
        by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    body = {"throttle_time_ms": 0, "topics": unknown_ids + [{**topic_key(ctx, t), "partitions": ps}
                                                            for t, ps in by_topic.items()]}
    if key is None:
        return body
    global _memo_bytes
    encoded = EncodedBody(message(ApiKey.OFFSET_COMMIT, ctx.api_version, "response").encode(body))
    cost = 2 * len(encoded) + 64 * len(result.partitions)
    if _memo_bytes + cost > _MEMO_BYTES:
        _ANSWERS.clear()
        _memo_bytes = 0
    _ANSWERS[key] = encoded
    _memo_bytes += cost
    return encoded


def _failed(version, body, code):
    # There is no top-level error: every partition carries it, its topic named as in the request.
    return {"topics": [{"name": t.get("name"), "topic_id": t.get("topic_id"),
                        "partitions": [{"partition_index": p.partition_index, "error_code": code}
                                       for p in t.partitions]}
                       for t in body.topics]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.OFFSET_COMMIT, 2, 10, offset_commit,
    "validated against the member and generation; simple groups; retention",
    version_notes={5: "no retention time: offsets expire by the broker's retention",
                   7: "static members (group instance id)",
                   TOPIC_IDS_SINCE: "topics by id; an unknown id gets UNKNOWN_TOPIC_ID"},
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.READ),
    error_response=_failed,
    inline=True)
