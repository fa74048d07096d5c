"""OffsetForLeaderEpoch: where a leader epoch ends, which consumers ask to validate their
position after a metadata change (KIP-320). Every kcoord partition has had one leader
epoch since its creation (Partition.leader_epoch), so the current epoch ends at the log
end and any other epoch is unknown."""
from kcoord.api import ApiDescriptor, ApiKey
from wire.errors import ErrorCode

def end_of_epoch(partition, current_epoch: int, epoch: int) -> tuple[ErrorCode, int, int]:
    """(error, epoch, end offset) as Kafka answers a consumer; -1s where it knows nothing."""
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
    fenced = partition.epoch_error(current_epoch)
    if fenced is not None:
        return ErrorCode[fenced], -1, -1
    if epoch == partition.leader_epoch:
        return ErrorCode.NONE, epoch, partition.high_watermark
    # Kafka answers an epoch it never had (newer, or -1) without an error, by saying nothing.
    return ErrorCode.NONE, -1, -1


async def offset_for_leader_epoch(ctx, req):
    store = ctx.broker.topics
    topics = []
    for t in req.topics:
        results = []
        for p in t.partitions:
            error, epoch, end = end_of_epoch(store.partition(t.topic, p.partition),
                                             p.current_leader_epoch, p.leader_epoch)
            results.append({"error_code": error, "partition": p.partition, "leader_epoch": epoch, "end_offset": end})
        topics.append({"topic": t.topic, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


DESCRIPTOR = ApiDescriptor(
    ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, offset_for_leader_epoch,
    "one leader epoch (0) per partition: it ends at the log end; other epochs are unknown (-1)",
    version_notes={3: "the replica id is read and ignored", 4: "flexible versions"})
