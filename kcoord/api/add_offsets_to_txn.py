"""AddOffsetsToTxn: a transactional producer (transaction version 0/1) is about to commit a
group's offsets in its transaction (KIP-98, KIP-447): the group's `__consumer_offsets` partition
joins the transaction, so the transaction's end writes its marker there too."""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, named_group
from kcoord.api._transactions import coordinator, transactional_id_allowed
from kcoord.log.consumer_offsets import TOPIC as OFFSETS_TOPIC
from wire.errors import ErrorCode


async def add_offsets_to_txn(ctx, req):
    if not transactional_id_allowed(ctx, req.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    error, txn = coordinator(ctx, req.transactional_id)
    if txn is None:
        return {"throttle_time_ms": 0, "error_code": error}
    index = ctx.broker.coordinator.runtime.partition_for(req.group_id)
    code = txn.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                              [(OFFSETS_TOPIC, index)], client_version=0)
    return {"throttle_time_ms": 0, "error_code": code}


DESCRIPTOR = ApiDescriptor(
    ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, add_offsets_to_txn,
    "the group's __consumer_offsets partition joins the producer's transaction",
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ))
