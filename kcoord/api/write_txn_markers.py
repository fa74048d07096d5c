"""WriteTxnMarkers: markers written straight to partitions. Kafka's coordinators send it to
partition leaders; kcoord's write their markers in process, so a client sends it: the Admin
client's abortTransaction (`kafka-transactions abort`) ends a hanging transaction this way."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._leadership import serving_error
from kcoord.log.consumer_offsets import TOPIC as OFFSETS_TOPIC
from kcoord.log.partition import AppendError
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode


def _write(ctx, marker, topic: str, index: int) -> ErrorCode:
    partition = ctx.broker.topics.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if serving_error(ctx.broker, partition) is not None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    now = ctx.broker.coordinator.runtime.now()
    try:
        if topic == OFFSETS_TOPIC:
            ctx.broker.coordinator.runtime.complete_transaction(
                index, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                marker.transaction_result, now)
        else:
            partition.write_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                                   marker.transaction_result, now)
    except AppendError as err:
        return ErrorCode[err.code_name]
    return ErrorCode.NONE


async def write_txn_markers(ctx, req):
    if not cluster_allowed(ctx, "ClusterAction"):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"markers": [{"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [{"partition_index": p, "error_code": code} for p in t.partition_indexes]}
            for t in m.topics]} for m in req.markers]}
    markers = []
    for m in req.markers:
        markers.append({"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [{"partition_index": p, "error_code": _write(ctx, m, t.name, p)}
                                            for p in t.partition_indexes]} for t in m.topics]})
    ctx.broker.topics.notify_appended()
    return {"markers": markers}


DESCRIPTOR = ApiDescriptor(
    ApiKey.WRITE_TXN_MARKERS, 1, 2, write_txn_markers,
    "markers written to the partitions named (ClusterAction): how `kafka-transactions abort` ends a hanging transaction")
