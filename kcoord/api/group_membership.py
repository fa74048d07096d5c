"""JoinGroup (11, v0-9), SyncGroup (14, v0-5), Heartbeat (12, v0-4), LeaveGroup (13, v0-5).

Translation only: every rule lives in kcoord.coordinator.
"""
from kcoord.api import handles
from kcoord.coordinator import HeartbeatRequest, JoinRequest, LeaveMember, SyncRequest
from wire.errors import ErrorCode


@handles(11, "JoinGroup", 0, 9)
async def join_group(ctx, req):
    coordinator = ctx.broker.coordinator
    result = await coordinator.join_group(JoinRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        instance_id=req.get("group_instance_id"),
        protocol_type=req.protocol_type,
        protocols=[(p.name, p.metadata) for p in req.protocols],
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.get("rebalance_timeout_ms", -1),
        client_id=ctx.client_id or "",
        client_host="/" + ctx.client_host,
        require_known_member_id=ctx.api_version >= 4,
        supports_skip_assignment=ctx.api_version >= 9,
        reason=req.get("reason"),
    ))
    return {
        "throttle_time_ms": 0,
        "error_code": result.error,
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name if (result.protocol_name or ctx.api_version >= 7) else "",
        "leader": result.leader_id,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [{"member_id": m, "group_instance_id": i, "metadata": meta} for m, i, meta in result.members],
    }


@handles(14, "SyncGroup", 0, 5)
async def sync_group(ctx, req):
    result = await ctx.broker.coordinator.sync_group(SyncRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        generation_id=req.generation_id,
        instance_id=req.get("group_instance_id"),
        protocol_type=req.get("protocol_type"),
        protocol_name=req.get("protocol_name"),
        assignments={a.member_id: a.assignment for a in req.assignments},
    ))
    return {"throttle_time_ms": 0, "error_code": result.error, "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name, "assignment": result.assignment}


@handles(12, "Heartbeat", 0, 4)
async def heartbeat(ctx, req):
    error = await ctx.broker.coordinator.heartbeat(HeartbeatRequest(
        req.group_id, member_id=req.member_id, generation_id=req.generation_id,
        instance_id=req.get("group_instance_id")))
    return {"throttle_time_ms": 0, "error_code": error}


@handles(13, "LeaveGroup", 0, 5)
async def leave_group(ctx, req):
    if ctx.api_version < 3:
        leaving = [LeaveMember(req.member_id, None, None)]
    else:
        leaving = [LeaveMember(m.member_id, m.group_instance_id, m.get("reason")) for m in req.members]
    result = await ctx.broker.coordinator.leave_group(req.group_id, leaving)
    if ctx.api_version < 3:
        # One member per request: its error is the request's error.
        error = result.error or (result.members[0][2] if result.members else ErrorCode.NONE)
        return {"throttle_time_ms": 0, "error_code": error, "members": []}
    return {"throttle_time_ms": 0, "error_code": result.error,
            "members": [{"member_id": m, "group_instance_id": i, "error_code": e} for m, i, e in result.members]}
