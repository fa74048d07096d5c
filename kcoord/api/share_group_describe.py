"""ShareGroupDescribe (KIP-932): epochs, assignor, members and their assignments of share groups."""
import uuid

from kcoord.api import (NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey, GroupAcl, GroupBatch, GroupOperation,
                        TopicAcl, TopicOperation)
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode


def _empty(group_id: str, code: ErrorCode, message: str | None = None) -> dict:
    return {"group_id": group_id, "error_code": code, "error_message": message, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": NO_AUTHORIZED_OPERATIONS}


async def share_group_describe(ctx, req):
    if not ctx.broker.features.share_enabled():
        return {"throttle_time_ms": 0, "groups": [_empty(g, ErrorCode.UNSUPPORTED_VERSION) for g in req.group_ids]}
    may_describe = topic_gate(ctx)
    groups = []
    for group_id in req.group_ids:
        d = ctx.broker.coordinator.for_group(group_id).share_group_describe(group_id)
        if d["error_code"] != ErrorCode.NONE:
            groups.append(_empty(group_id, d["error_code"], d.get("error_message")))
            continue
        topics = {tp["topic_name"] for m in d["members"] for tp in m["assignment"]["topic_partitions"]}
        if not all(may_describe(t) for t in topics):
            # As KafkaApis: a group whose members hold a topic the client may not see says only that.
            groups.append(_empty(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                 "The group has described topic(s) that the client is not authorized to describe."))
            continue
        members = [{**m, "assignment": {"topic_partitions": [
            {**tp, "topic_id": uuid.UUID(tp["topic_id"])} for tp in m["assignment"]["topic_partitions"]]}}
            for m in d["members"]]
        groups.append({**d, "members": members, "authorized_operations": NO_AUTHORIZED_OPERATIONS})
    return {"throttle_time_ms": 0, "groups": groups}


_GROUPS = GroupBatch("group_ids", lambda g: g, "groups", _empty)

DESCRIPTOR = ApiDescriptor(
    ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, share_group_describe,
    "share groups: epochs, assignor, members' assignments; another group type or an unknown group gets "
    "GROUP_ID_NOT_FOUND; authorized operations are not computed",
    groups=lambda version, body: _GROUPS, group_acl=GroupAcl(GroupOperation.DESCRIBE),
    topic_acl=TopicAcl(TopicOperation.DESCRIBE))
