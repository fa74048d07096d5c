"""DescribeTransactions: `kafka-transactions describe` (KIP-664)."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._transactions import coordinator, transactional_id_allowed
from wire.errors import ErrorCode


def _describe(ctx, transactional_id):
    if not transactional_id_allowed(ctx, transactional_id, "Describe"):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        code, txn = coordinator(ctx, transactional_id)
        if txn is not None:
            return txn.describe(transactional_id)
    return {"error_code": code, "transactional_id": transactional_id, "transaction_state": "",
            "transaction_timeout_ms": 0, "transaction_start_time_ms": 0, "producer_id": 0,
            "producer_epoch": 0, "topics": []}


async def describe_transactions(ctx, req):
    return {"throttle_time_ms": 0, "transaction_states": [_describe(ctx, t) for t in req.transactional_ids]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, describe_transactions,
    "a transactional id's state, producer id and epoch, timeout, start time and partitions")
