"""What the transaction APIs share: the transactional id's ACL and finding its coordinator."""
from __future__ import annotations

from kcoord.security.acls import principal_of
from wire.errors import ErrorCode


def transactional_id_allowed(ctx, transactional_id: str, operation: str = "Write") -> bool:
    authorizer = ctx.broker.authorizer
    return authorizer is None or authorizer.allowed_on(
        "TransactionalId", transactional_id, principal_of(ctx.connection), operation, ctx.connection.host)


def coordinator(ctx, transactional_id: str):
    """(error, the TransactionCoordinator this broker answers `transactional_id` with): the
    error is NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS where this broker does not serve it."""
    if ctx.broker.transactions is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    return ctx.broker.transactions.for_id(transactional_id)
