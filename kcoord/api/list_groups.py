"""ListGroups: the groups this broker coordinates, optionally filtered by state and type."""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation


async def list_groups(ctx, req):
    error, groups = ctx.broker.coordinator.list_groups(set(req.get("states_filter") or []) or None,
                                                       set(req.get("types_filter") or []) or None)
    return {"throttle_time_ms": 0, "error_code": error,
            "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                        "group_state": str(g.state), "group_type": g.group_type} for g in groups]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.LIST_GROUPS, 0, 5, list_groups,
    "the groups of the __consumer_offsets partitions this broker leads (COORDINATOR_LOAD_IN_PROGRESS while "
    "one loads); with group ACLs, only the groups the principal may describe",
    version_notes={4: "filter by state", 5: "filter by type (classic, consumer)"},
    group_acl=GroupAcl(GroupOperation.DESCRIBE, filters="groups"))
