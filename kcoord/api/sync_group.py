"""SyncGroup: the leader hands out assignments, every member gets its own.

Translation only: every rule lives in kcoord.coordinator.
"""
from kcoord.api import CLASSIC_PROTOCOL, ApiDescriptor, ApiKey, GroupAcl, GroupOperation, named_group
from kcoord.coordinator import SyncRequest, parked


async def sync_group(ctx, req):
    request = SyncRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        generation_id=req.generation_id,
        instance_id=req.get("group_instance_id"),
        protocol_type=req.get("protocol_type"),
        protocol_name=req.get("protocol_name"),
        assignments={a.member_id: a.assignment for a in req.assignments},
    )
    del req   # not kept while a follower waits for its leader's assignment
    coordinator = ctx.broker.coordinator.for_group(request.group_id)
    result = await parked(lambda respond: coordinator.sync_group(request, respond))
    return {"throttle_time_ms": 0, "error_code": result.error, "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name, "assignment": result.assignment}


DESCRIPTOR = ApiDescriptor(
    ApiKey.SYNC_GROUP, 0, 5, sync_group,
    CLASSIC_PROTOCOL,
    version_notes={5: "protocol type and name checked against the group's"},
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ))
