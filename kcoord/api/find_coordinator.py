"""FindCoordinator (key 10), v0-6: this node coordinates every group.

Transaction keys get this node too; transactions themselves are not served,
so a transactional producer fails later with a clear UNSUPPORTED_VERSION.
"""
from kcoord.api import handles
from wire.errors import ErrorCode

GROUP, TRANSACTION = 0, 1


def _answer(ctx, key_type, key):
    if key_type not in (GROUP, TRANSACTION):
        return ErrorCode.INVALID_REQUEST, {"node_id": -1, "host": "", "port": -1}
    # While a group's coordinator is "not available" (fault injection), so is finding it;
    # NOT_COORDINATOR / LOAD_IN_PROGRESS still point clients here, as a real cluster would.
    if key_type == GROUP and ctx.broker.coordinator.core.availability(key) == ErrorCode.COORDINATOR_NOT_AVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, {"node_id": -1, "host": "", "port": -1}
    node = ctx.broker.node()
    return ErrorCode.NONE, {"node_id": node["node_id"], "host": node["host"], "port": node["port"]}


@handles(10, "FindCoordinator", 0, 6)
async def find_coordinator(ctx, req):
    key_type = req.get("key_type", GROUP)
    if ctx.api_version < 4:
        code, node = _answer(ctx, key_type, req.key)
        return {"throttle_time_ms": 0, "error_code": code, "error_message": None, **node}
    coordinators = []
    for key in req.coordinator_keys:
        code, node = _answer(ctx, key_type, key)
        coordinators.append({"key": key, "error_code": code, "error_message": None, **node})
    return {"throttle_time_ms": 0, "coordinators": coordinators}
