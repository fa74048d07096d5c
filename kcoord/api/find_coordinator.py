"""FindCoordinator: a group's coordinator is the leader of its __consumer_offsets partition.

The partition is Kafka's `abs(groupId.hashCode()) % partitions` (kcoord.coordinator.runtime);
without a leader the answer is COORDINATOR_NOT_AVAILABLE. The topic is created by the first
lookup, as Kafka creates it. A transactional id's coordinator is likewise the leader of its
`__transaction_state` partition (kcoord.transaction.runtime), after TransactionalId Describe.
"""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupBatch, GroupOperation
from kcoord.api._transactions import transactional_id_allowed
from wire.errors import ErrorCode

GROUP, TRANSACTION = 0, 1
BATCHED_SINCE = 4
_NO_NODE = {"node_id": -1, "host": "", "port": -1}


def _answer(ctx, key_type, key):
    if key_type not in (GROUP, TRANSACTION):
        return ErrorCode.INVALID_REQUEST, _NO_NODE
    node_id = ctx.broker.node_id
    if key_type == TRANSACTION:
        if not transactional_id_allowed(ctx, key, "Describe"):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, _NO_NODE
        code, node_id = ctx.broker.transactions.find(key)
        if code != ErrorCode.NONE:
            return code, _NO_NODE
    elif key_type == GROUP:
        # While a group's coordinator is "not available" (a fault rule), so is finding it;
        # NOT_COORDINATOR / LOAD_IN_PROGRESS still point clients at the leader, as a real cluster would.
        code, node_id = ctx.broker.coordinator.find(key)
        if code != ErrorCode.NONE:
            return code, _NO_NODE
    node = ctx.broker.describe(node_id)
    if node is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, _NO_NODE
    return ErrorCode.NONE, {"node_id": node["node_id"], "host": node["host"], "port": node["port"]}


async def find_coordinator(ctx, req):
    key_type = req.get("key_type", GROUP)
    if ctx.api_version < BATCHED_SINCE:
        code, node = _answer(ctx, key_type, req.key)
        return {"throttle_time_ms": 0, "error_code": code, "error_message": None, **node}
    coordinators = []
    for key in req.coordinator_keys:
        code, node = _answer(ctx, key_type, key)
        coordinators.append({"key": key, "error_code": code, "error_message": None, **node})
    return {"throttle_time_ms": 0, "coordinators": coordinators}


_KEYS = GroupBatch("coordinator_keys", lambda key: key, "coordinators",
                   lambda key, code: {"key": key, "error_code": code, **_NO_NODE})


def _keys(version):
    return _KEYS if version >= BATCHED_SINCE else None


def _groups(version, body):
    """Only group keys name groups (transaction ids are no group's)."""
    if body.get("key_type", GROUP) != GROUP:
        return None
    return _keys(version) or body.key


def _failed(version, body, code):
    keys = _keys(version)
    return keys.failed(body, code) if keys else {"error_code": code, **_NO_NODE}


DESCRIPTOR = ApiDescriptor(
    ApiKey.FIND_COORDINATOR, 0, 6, find_coordinator,
    "a group's: the leader of its __consumer_offsets partition; a transactional id's: the broker asked",
    version_notes={1: "key types (group or transaction)", BATCHED_SINCE: "several keys per request (KIP-699)"},
    groups=_groups,
    group_acl=GroupAcl(GroupOperation.DESCRIBE, denied_message="Not authorized to access group"),
    error_response=_failed,
    inline=True)
