"""LeaveGroup: members leave a group.

Translation only: every rule lives in kcoord.coordinator.
"""
from kcoord.api import CLASSIC_PROTOCOL, ApiDescriptor, ApiKey, GroupAcl, GroupOperation, named_group
from kcoord.coordinator import LeaveMember
from wire.errors import ErrorCode


async def leave_group(ctx, req):
    if ctx.api_version < 3:
        leaving = [LeaveMember(req.member_id, None, None)]
    else:
        leaving = [LeaveMember(m.member_id, m.group_instance_id, m.get("reason")) for m in req.members]
    result = ctx.broker.coordinator.for_group(req.group_id).leave_group(req.group_id, leaving)
    if ctx.api_version < 3:
        # One member per request: its error is the request's error.
        error = result.error or (result.members[0][2] if result.members else ErrorCode.NONE)
        return {"throttle_time_ms": 0, "error_code": error, "members": []}
    return {"throttle_time_ms": 0, "error_code": result.error,
            "members": [{"member_id": m, "group_instance_id": i, "error_code": e} for m, i, e in result.members]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.LEAVE_GROUP, 0, 5, leave_group,
    CLASSIC_PROTOCOL,
    version_notes={3: "several members per request, static ones by instance id (KIP-345)",
                   5: "a reason per member"},
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ),
    inline=True)
