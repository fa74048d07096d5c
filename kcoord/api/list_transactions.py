"""ListTransactions: `kafka-transactions list` and `find-hanging` (KIP-664, KIP-994): the
transactional ids of the `__transaction_state` partitions this broker leads."""
import logging
import re

from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._transactions import transactional_id_allowed
from kcoord.transaction.state import TxnState
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.transaction")


async def list_transactions(ctx, req):
    body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "unknown_state_filters": [],
            "transaction_states": []}
    states = set()
    for name in req.state_filters:
        if TxnState.by_name(name) is None:
            body["unknown_state_filters"].append(name)
        else:
            states.add(name)
    pattern = req.get("transactional_id_pattern")
    regex = None
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error as err:
            # The response has no message field; Kafka's exception text goes to the log.
            log.info("ListTransactions: transaction ID pattern `%s` is not a valid regular expression: %s",
                     pattern, err)
            body["error_code"] = ErrorCode.INVALID_REGULAR_EXPRESSION
            return body
    if ctx.broker.transactions is None:
        body["error_code"] = ErrorCode.COORDINATOR_NOT_AVAILABLE
        return body
    code, rows = ctx.broker.transactions.list(set(req.producer_id_filters), states,
                                              req.get("duration_filter", -1), regex)
    body["error_code"] = code
    # Kafka lists only the ids the principal may describe.
    body["transaction_states"] = [r for r in rows if transactional_id_allowed(ctx, r["transactional_id"], "Describe")]
    return body


DESCRIPTOR = ApiDescriptor(
    ApiKey.LIST_TRANSACTIONS, 0, 2, list_transactions,
    "the transactions this broker coordinates, by state, producer id, duration (v1) and id pattern (v2)",
    version_notes={1: "duration filter: only transactions running longer", 2: "transactional id pattern"})
