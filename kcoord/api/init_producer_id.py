"""InitProducerId: producer ids for idempotent producers; transactions are refused."""
import itertools

from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import Operation, ResourceType, cluster_allowed, principal_of
from wire.errors import ErrorCode

_producer_ids = itertools.count(1000)


async def init_producer_id(ctx, req):
    if req.transactional_id is not None:
        # Transactions are outside kcoord's scope; say so instead of pretending.
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    authorizer = ctx.broker.authorizer
    if authorizer is not None and not (
            cluster_allowed(ctx, "IdempotentWrite")
            or authorizer.allowed_by_type(ResourceType.TOPIC, principal_of(ctx.connection), Operation.WRITE,
                                          ctx.connection.host)):
        # Kafka 3.0+ (KIP-679): IdempotentWrite on the cluster, or Write on some topic.
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    # Without a transactional id Kafka's TransactionCoordinator hands out a new id at epoch 0
    # whatever id and epoch the request names (KIP-360's bump-and-keep is for transactional
    # producers; an idempotent one bumps its epoch itself): the reference Kafka 4.3.1 does.
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": next(_producer_ids),
            "producer_epoch": 0}


DESCRIPTOR = ApiDescriptor(
    ApiKey.INIT_PRODUCER_ID, 0, 5, init_producer_id,
    "idempotent producers; a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    version_notes={3: "an id and epoch named without a transactional id get a new id at epoch 0, as from Kafka"})
