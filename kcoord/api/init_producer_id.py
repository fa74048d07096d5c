"""InitProducerId: a producer id for an idempotent producer, or a transactional id's id and
epoch from its transaction coordinator (fencing the producer that held it before)."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._transactions import coordinator, transactional_id_allowed
from kcoord.security.acls import Operation, ResourceType, cluster_allowed, principal_of
from wire.errors import ErrorCode


def _answer(code, producer_id=-1, epoch=-1):
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": producer_id, "producer_epoch": epoch}


async def init_producer_id(ctx, req):
    transactional_id = req.transactional_id
    if transactional_id is not None:
        if not transactional_id_allowed(ctx, transactional_id):
            return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if req.get("enable2_pc", False):
            # Two-phase commit (KIP-939) is off on Kafka unless transaction.two.phase.commit.enable;
            # Kafka answers a request for it with this error then.
            return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if req.get("keep_prepared_txn", False):
            return _answer(ErrorCode.UNSUPPORTED_VERSION)
        error, txn = coordinator(ctx, transactional_id)
        if txn is None:
            return _answer(error)
        producer_id, epoch = req.get("producer_id", -1), req.get("producer_epoch", -1)
        expected = (producer_id, epoch) if producer_id != -1 or epoch != -1 else None
        return _answer(*txn.init_producer_id(transactional_id, req.transaction_timeout_ms, expected))
    authorizer = ctx.broker.authorizer
    if authorizer is not None and not (
            cluster_allowed(ctx, "IdempotentWrite")
            or authorizer.allowed_by_type(ResourceType.TOPIC, principal_of(ctx.connection), Operation.WRITE,
                                          ctx.connection.host)):
        # Kafka 3.0+ (KIP-679): IdempotentWrite on the cluster, or Write on some topic.
        return _answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    # Without a transactional id Kafka's TransactionCoordinator hands out a new id at epoch 0
    # whatever id and epoch the request names (KIP-360's bump-and-keep is for transactional
    # producers; an idempotent one bumps its epoch itself): the reference Kafka 4.3.1 does.
    return _answer(ErrorCode.NONE, ctx.broker.transactions.producer_ids.next(), 0)


DESCRIPTOR = ApiDescriptor(
    ApiKey.INIT_PRODUCER_ID, 0, 6, init_producer_id,
    "idempotent producers get a new id; a transactional id gets its id and a bumped epoch from its "
    "coordinator, fencing the older producer (an ongoing transaction is aborted first: CONCURRENT_TRANSACTIONS)",
    version_notes={3: "an id and epoch named without a transactional id get a new id at epoch 0, as from Kafka; "
                      "with one, a retry of a bump gets the same epoch (KIP-360)",
                   6: "two-phase commit (KIP-939) is off, as on Kafka by default"})
