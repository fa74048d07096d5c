"""ListOffsets (key 2), v1-11: earliest, latest, by timestamp, max timestamp."""
from kcoord.api import handles
from wire.errors import ErrorCode

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6


def _lookup(partition, timestamp):
    """(offset, timestamp) for one query, as Kafka answers it."""
    if timestamp == LATEST or timestamp == LATEST_TIERED:
        return partition.high_watermark, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return partition.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        return partition.max_timestamp()
    if timestamp < 0:
        return None
    return partition.offset_for_timestamp(timestamp)


@handles(2, "ListOffsets", 1, 10)
async def list_offsets(ctx, req):
    store = ctx.broker.topics
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            r = {"partition_index": p.partition_index, "error_code": ErrorCode.NONE,
                 "timestamp": -1, "offset": -1, "leader_epoch": -1}
            partition = store.partition(t.name, p.partition_index)
            if partition is None:
                r["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                found = _lookup(partition, p.timestamp)
                if found is None:
                    r["error_code"] = ErrorCode.UNSUPPORTED_VERSION
                else:
                    r["offset"], r["timestamp"] = found
                    r["leader_epoch"] = partition.leader_epoch
            parts.append(r)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
