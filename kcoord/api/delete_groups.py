"""DeleteGroups: delete empty groups and their offsets."""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupBatch, GroupOperation


async def delete_groups(ctx, req):
    results = []
    for group_id in req.groups_names:
        error = ctx.broker.coordinator.for_group(group_id).delete_group(group_id)
        results.append({"group_id": group_id, "error_code": error})
    return {"throttle_time_ms": 0, "results": results}


_GROUPS = GroupBatch("groups_names", lambda g: g, "results",
                     lambda group_id, code: {"group_id": group_id, "error_code": code})

DESCRIPTOR = ApiDescriptor(
    ApiKey.DELETE_GROUPS, 0, 2, delete_groups,
    "a group with members gets NON_EMPTY_GROUP",
    groups=lambda version, body: _GROUPS, group_acl=GroupAcl(GroupOperation.DELETE))
