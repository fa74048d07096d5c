"""DescribeGroups: state, protocol and members of groups."""
from kcoord.api import (NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey, GroupAcl, GroupBatch,
                        GroupOperation)
from wire.errors import ErrorCode

UNKNOWN_IS_ERROR_SINCE = 6


async def describe_groups(ctx, req):
    groups = []
    for group_id in req.groups:
        d = ctx.broker.coordinator.for_group(group_id).describe_group(group_id)
        # Before v6 an unknown group is described as Dead without an error.
        error = (ErrorCode.NONE if d.error == ErrorCode.GROUP_ID_NOT_FOUND and ctx.api_version < UNKNOWN_IS_ERROR_SINCE
                 else d.error)
        # Kafka's tools print this text ("Error: ... GroupIdNotFoundException: Group g not found.").
        message = (d.message or f"Group {group_id} not found.") if error == ErrorCode.GROUP_ID_NOT_FOUND else None
        groups.append({"error_code": error, "group_id": group_id, "group_state": d.state,
                       "protocol_type": d.protocol_type, "protocol_data": d.protocol_data,
                       "error_message": message, "members": d.members, "authorized_operations": NO_AUTHORIZED_OPERATIONS})
    return {"throttle_time_ms": 0, "groups": groups}


_GROUPS = GroupBatch("groups", lambda g: g, "groups",
                     lambda group_id, code: {"group_id": group_id, "error_code": code, "group_state": "",
                                             "protocol_type": "", "protocol_data": "", "members": [],
                                             "authorized_operations": NO_AUTHORIZED_OPERATIONS})

DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_GROUPS, 0, 6, describe_groups,
    "classic groups (a consumer group gets GROUP_ID_NOT_FOUND, as from Kafka); authorized operations are "
    "not computed",
    version_notes={4: "members' group instance ids",
                   UNKNOWN_IS_ERROR_SINCE: "an unknown group gets GROUP_ID_NOT_FOUND (Dead without an error before)"},
    groups=lambda version, body: _GROUPS, group_acl=GroupAcl(GroupOperation.DESCRIBE))
