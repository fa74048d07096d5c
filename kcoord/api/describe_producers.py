"""DescribeProducers: the producers a partition has seen, from the producer state that
deduplicates their retries and tracks their transactions: each one's epoch, last sequence and
timestamp, the coordinator epoch of its last transaction marker and where its open
transaction starts."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._leadership import serving_error
from wire.errors import ErrorCode

# Kafka says this only when the topic is unknown; a missing partition of a known topic
# gets the same error with no message.
_NOT_HOSTED = "This server does not host this topic-partition."


def _partition(broker, topic: str, index: int) -> dict:
    entry = {"partition_index": index, "error_code": ErrorCode.NONE, "error_message": None, "active_producers": []}
    store = broker.topics
    partition = store.partition(topic, index)
    if partition is None:
        entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        entry["error_message"] = _NOT_HOSTED if store.get(topic) is None else None
        return entry
    if serving_error(broker, partition) is not None:
        entry["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
        return entry
    entry["active_producers"] = [
        {"producer_id": pid, "producer_epoch": epoch, "last_sequence": seq, "last_timestamp": ts,
         "coordinator_epoch": coordinator_epoch, "current_txn_start_offset": txn_start}
        for pid, epoch, seq, ts, coordinator_epoch, txn_start in partition.producers()]
    return entry


async def describe_producers(ctx, req):
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [_partition(ctx.broker, t.name, i) for i in t.partition_indexes]}
        for t in req.topics]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_PRODUCERS, 0, 0, describe_producers,
    "producers per partition: id, epoch, last sequence and timestamp, coordinator epoch, open transaction's start")
