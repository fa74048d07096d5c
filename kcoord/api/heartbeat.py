"""Heartbeat: a member stays in its group and learns of rebalances.

Translation only: every rule lives in kcoord.coordinator.
"""
from kcoord.api import CLASSIC_PROTOCOL, ApiDescriptor, ApiKey, GroupAcl, GroupOperation, named_group
from kcoord.coordinator import HeartbeatRequest


async def heartbeat(ctx, req):
    # Items, not attributes: a Message's attribute access is a Python call (the hot path).
    group_id = req["group_id"]
    error = ctx.broker.coordinator.for_group(group_id).heartbeat(HeartbeatRequest(
        group_id, req["member_id"], req["generation_id"], req.get("group_instance_id")))
    return {"throttle_time_ms": 0, "error_code": error}


DESCRIPTOR = ApiDescriptor(
    ApiKey.HEARTBEAT, 0, 4, heartbeat,
    CLASSIC_PROTOCOL,
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ),
    inline=True)
