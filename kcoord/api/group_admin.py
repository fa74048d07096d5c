"""DescribeGroups (15, v0-5), ListGroups (16, v0-5), DeleteGroups (42, v0-2)."""
from kcoord.api import handles
from wire.errors import ErrorCode

_NO_OPS = -(2**31)


@handles(15, "DescribeGroups", 0, 6)
async def describe_groups(ctx, req):
    groups = []
    for group_id in req.groups:
        d = await ctx.broker.coordinator.describe_group(group_id)
        # Before v6 an unknown group is described as Dead without an error.
        error = ErrorCode.NONE if d.error == ErrorCode.GROUP_ID_NOT_FOUND and ctx.api_version < 6 else d.error
        groups.append({"error_code": error, "group_id": group_id, "group_state": d.state,
                       "protocol_type": d.protocol_type, "protocol_data": d.protocol_data,
                       "error_message": None, "members": d.members, "authorized_operations": _NO_OPS})
    return {"throttle_time_ms": 0, "groups": groups}


@handles(16, "ListGroups", 0, 5)
async def list_groups(ctx, req):
    types = {t.lower() for t in req.get("types_filter") or []}
    if types and "classic" not in types:
        groups = []
    else:
        groups = ctx.broker.coordinator.list_groups(set(req.get("states_filter") or []) or None)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                        "group_state": str(g.state), "group_type": "classic"} for g in groups]}


@handles(42, "DeleteGroups", 0, 2)
async def delete_groups(ctx, req):
    results = []
    for group_id in req.groups_names:
        error = await ctx.broker.coordinator.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": error})
    return {"throttle_time_ms": 0, "results": results}
