"""StreamsGroupDescribe (KIP-1071): epochs, topology, members and task assignments of streams groups."""
from kcoord.api import NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey, GroupAcl, GroupBatch, GroupOperation


async def streams_group_describe(ctx, req):
    groups = []
    # A group Kafka cannot describe keeps the schema's defaults: epochs 0, state "".
    for group_id in req.group_ids:
        d = ctx.broker.coordinator.for_group(group_id).streams_group_describe(group_id)
        groups.append({"group_state": "", "group_epoch": 0, "assignment_epoch": 0, "topology": None,
                       "members": [], "error_message": None, **d,
                       "authorized_operations": NO_AUTHORIZED_OPERATIONS})
    return {"throttle_time_ms": 0, "groups": groups}


_GROUPS = GroupBatch("group_ids", lambda g: g, "groups",
                     lambda group_id, code: {"group_id": group_id, "error_code": code, "group_state": "",
                                             "group_epoch": 0, "assignment_epoch": 0, "topology": None,
                                             "members": [], "authorized_operations": NO_AUTHORIZED_OPERATIONS})

DESCRIPTOR = ApiDescriptor(
    ApiKey.STREAMS_GROUP_DESCRIBE, 0, 0, streams_group_describe,
    "streams groups: epochs, the configured topology, members' current and target tasks; another "
    "group type or an unknown group gets GROUP_ID_NOT_FOUND; authorized operations are not computed",
    groups=lambda version, body: _GROUPS, group_acl=GroupAcl(GroupOperation.DESCRIBE))
