"""JoinGroup: a member joins (or rejoins) a classic group.

Translation only: every rule lives in kcoord.coordinator.
"""
import sys

from kcoord.api import CLASSIC_PROTOCOL, ApiDescriptor, ApiKey, GroupAcl, GroupOperation, named_group
from kcoord.coordinator import JoinRequest, parked


async def join_group(ctx, req):
    request = JoinRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        instance_id=req.get("group_instance_id"),
        # Interned: a member keeps these, and they are the same for most members of a group
        # (its protocol type and names) or of a host; decoded, each member had copies of its own.
        protocol_type=sys.intern(req.protocol_type),
        protocols=[(sys.intern(p.name), p.metadata) for p in req.protocols],
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.get("rebalance_timeout_ms", -1),
        client_id=sys.intern(ctx.client_id or ""),
        client_host=sys.intern("/" + ctx.client_host),
        require_known_member_id=ctx.api_version >= 4,
        supports_skip_assignment=ctx.api_version >= 9,
        reason=req.get("reason"),
    )
    del req   # not kept while the member waits for its group (seconds, for every member at once)
    coordinator = ctx.broker.coordinator.for_group(request.group_id)
    result = await parked(lambda respond: coordinator.join_group(request, respond))
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


def _failed(version, body, code):
    # The member id given is echoed back, as Kafka does.
    return {"error_code": code, "generation_id": -1, "member_id": body.get("member_id", ""),
            "protocol_name": None if version >= 7 else "", "leader": "", "members": []}


DESCRIPTOR = ApiDescriptor(
    ApiKey.JOIN_GROUP, 0, 9, join_group,
    CLASSIC_PROTOCOL,
    version_notes={4: "a new member first gets MEMBER_ID_REQUIRED (KIP-394)",
                   5: "static members (group.instance.id, KIP-345)",
                   7: "protocol type in the response; protocol name nullable",
                   9: "skip_assignment for a replaced static leader (KIP-814)"},
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), error_response=_failed)
