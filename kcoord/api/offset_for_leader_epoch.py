"""OffsetForLeaderEpoch: where a leader epoch ends, which consumers ask to validate their
position after a metadata change (KIP-320), from the partition's leader epoch cache
(kcoord.log.partition: an epoch starts where its leader took over)."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._leadership import serving_error
from wire.errors import ErrorCode


def end_of_epoch(broker, partition, current_epoch: int, epoch: int) -> tuple[ErrorCode, int, int]:
    """(error, epoch, end offset) as Kafka answers a consumer; -1s where it knows nothing."""
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
    error = serving_error(broker, partition, current_epoch)
    if error is not None:
        return error, -1, -1
    # Kafka answers an epoch it never had (newer, or -1) without an error, by saying nothing.
    found, end = partition.end_of_epoch(epoch)
    return ErrorCode.NONE, found, end


async def offset_for_leader_epoch(ctx, req):
    store = ctx.broker.topics
    topics = []
    for t in req.topics:
        results = []
        for p in t.partitions:
            error, epoch, end = end_of_epoch(ctx.broker, store.partition(t.topic, p.partition),
                                             p.current_leader_epoch, p.leader_epoch)
            results.append({"error_code": error, "partition": p.partition, "leader_epoch": epoch, "end_offset": end})
        topics.append({"topic": t.topic, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}


DESCRIPTOR = ApiDescriptor(
    ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, offset_for_leader_epoch,
    "the end of a leader epoch, from each partition's epochs (one per leader change); the leader answers, "
    "others get NOT_LEADER_OR_FOLLOWER",
    version_notes={3: "the replica id is read and ignored", 4: "flexible versions"})
