"""ConsumerGroupDescribe (KIP-848): epochs, members and assignments of consumer groups."""
import uuid

from kcoord.api import NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey, GroupAcl, GroupBatch, GroupOperation

MEMBER_TYPE_SINCE = 1
CONSUMER_MEMBER = 1   # Kafka's MemberType for a member speaking ConsumerGroupHeartbeat (0: classic)


def _assignment(parts: list[dict]) -> dict:
    return {"topic_partitions": [{"topic_id": uuid.UUID(p["topic_id"]), "topic_name": p["topic_name"],
                                  "partitions": p["partitions"]} for p in parts]}


async def consumer_group_describe(ctx, req):
    groups = []
    for group_id in req.group_ids:
        d = ctx.broker.coordinator.for_group(group_id).consumer_group_describe(group_id)
        groups.append({
            "error_code": d.error, "error_message": d.message, "group_id": group_id, "group_state": d.state,
            "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch, "assignor_name": d.assignor_name,
            "members": [{**{k: m[k] for k in ("member_id", "instance_id", "rack_id", "member_epoch", "client_id",
                                               "client_host", "subscribed_topic_names", "subscribed_topic_regex")},
                         "assignment": _assignment(m["assignment"]),
                         "target_assignment": _assignment(m["target_assignment"]),
                         "member_type": m.get("member_type", CONSUMER_MEMBER)} for m in d.members],
            "authorized_operations": NO_AUTHORIZED_OPERATIONS})
    return {"throttle_time_ms": 0, "groups": groups}


_GROUPS = GroupBatch("group_ids", lambda g: g, "groups",
                     lambda group_id, code: {"group_id": group_id, "error_code": code, "group_state": "",
                                             "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
                                             "members": [], "authorized_operations": NO_AUTHORIZED_OPERATIONS})

DESCRIPTOR = ApiDescriptor(
    ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, consumer_group_describe,
    "consumer groups: epochs, assignor, members' current and target assignments; a classic or unknown "
    "group gets GROUP_ID_NOT_FOUND; authorized operations are not computed",
    version_notes={MEMBER_TYPE_SINCE: "member type: 0 for a classic member (JoinGroup/SyncGroup, online "
                                      "migration), 1 for a ConsumerGroupHeartbeat one"},
    groups=lambda version, body: _GROUPS, group_acl=GroupAcl(GroupOperation.DESCRIBE))
