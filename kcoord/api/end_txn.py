"""EndTxn: commit or abort the producer's transaction. The coordinator writes PrepareCommit /
PrepareAbort to `__transaction_state`, the markers to every partition in the transaction, then
CompleteCommit / CompleteAbort. From v5 (transaction version 2) every end bumps the producer's
epoch and the answer carries the id and epoch the producer goes on with."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._transactions import coordinator, transactional_id_allowed
from wire.errors import ErrorCode

EPOCH_BUMP_SINCE = 5


def _answer(code, producer_id=-1, epoch=-1):
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": producer_id, "producer_epoch": epoch}


async def end_txn(ctx, req):
    if not transactional_id_allowed(ctx, req.transactional_id):
        return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error, txn = coordinator(ctx, req.transactional_id)
    if txn is None:
        return _answer(error)
    version = 2 if ctx.api_version >= EPOCH_BUMP_SINCE else 0
    return _answer(*txn.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed, version))


DESCRIPTOR = ApiDescriptor(
    ApiKey.END_TXN, 0, 5, end_txn,
    "commit or abort: markers in every partition of the transaction, CONCURRENT_TRANSACTIONS while they are written",
    version_notes={EPOCH_BUMP_SINCE: "transaction version 2: the epoch is bumped at every end and returned"})
