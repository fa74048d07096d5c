"""DeleteRecords: a partition's log start offset moves up; fetches below it answer
OFFSET_OUT_OF_RANGE and ListOffsets' earliest is the new start."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.security.acls import topic_gate
from kcoord.api._leadership import serving_error
from wire.errors import ErrorCode

HIGH_WATERMARK = -1  # delete everything produced so far


def _delete(partition, offset: int) -> tuple[ErrorCode, int]:
    before = partition.high_watermark if offset == HIGH_WATERMARK else offset
    if before < 0 or before > partition.high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    return ErrorCode.NONE, partition.delete_records(before)


async def delete_records(ctx, req):
    store = ctx.broker.topics
    topics = []
    may_delete = topic_gate(ctx)
    for t in req.topics:
        results = []
        for p in t.partitions:
            partition = store.partition(t.name, p.partition_index)
            if not may_delete(t.name):
                error, low = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1
            elif partition is None:
                error, low = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
            elif serving_error(ctx.broker, partition) is not None:
                error, low = ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
            elif store.get(t.name).internal:  # as Kafka: internal topics keep their records
                error, low = ErrorCode.INVALID_TOPIC_EXCEPTION, -1
            else:
                error, low = _delete(partition, p.offset)
            results.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": error})
        topics.append({"name": t.name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DELETE_RECORDS, 0, 2, delete_records,
    "the log start offset moves (-1: to the high watermark); whole batches below it are dropped",
    version_notes={2: "flexible versions"}, topic_acl=TopicAcl(TopicOperation.DELETE))
