"""ListOffsets: earliest, latest, by timestamp, max timestamp; the tiered
sentinels answer "no offset" since nothing is tiered. As Kafka's Partition answers it, a
read_committed request (isolation level 1, v2+) sees the log up to the last stable offset:
LATEST is the LSO, and an offset found at or past it is "no offset"."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.security.acls import topic_gate
from kcoord.api._leadership import serving_error
from wire.errors import ErrorCode

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6


# The first ListOffsets version that may carry each sentinel timestamp (Kafka's
# ReplicaManager answers an older request using one with UNSUPPORTED_VERSION).
_SENTINEL_MIN_VERSION = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                         EARLIEST_PENDING_UPLOAD: 11}
UNKNOWN = (-1, -1)
READ_COMMITTED = 1


def _lookup(partition, timestamp, version, isolation_level):
    """(offset, timestamp) for one query as Kafka answers it, or None when unsupported."""
    if timestamp < 0 and version < _SENTINEL_MIN_VERSION.get(timestamp, 2**15):
        return None
    # Every replica shares the one log, so the high watermark is the log end.
    last_fetchable = partition.last_stable_offset if isolation_level == READ_COMMITTED else partition.high_watermark
    if timestamp == LATEST:
        return last_fetchable, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return partition.log_start_offset, -1
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        # Nothing is ever tiered here: Kafka answers "no such offset" for a
        # topic without remote storage.
        return UNKNOWN
    found = partition.max_timestamp() if timestamp == MAX_TIMESTAMP else partition.offset_for_timestamp(timestamp)
    return found if found[0] < last_fetchable else UNKNOWN


async def list_offsets(ctx, req):
    store = ctx.broker.topics
    may_describe = topic_gate(ctx)
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            r = {"partition_index": p.partition_index, "error_code": ErrorCode.NONE,
                 "timestamp": -1, "offset": -1, "leader_epoch": -1}
            partition = store.partition(t.name, p.partition_index)
            fenced = None if partition is None else serving_error(ctx.broker, partition,
                                                                 p.get("current_leader_epoch", -1))
            if not may_describe(t.name):
                r["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition is None:
                r["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif fenced is not None:
                r["error_code"] = fenced
            else:
                found = _lookup(partition, p.timestamp, ctx.api_version, req.get("isolation_level", 0))
                if found is None:
                    r["error_code"] = ErrorCode.UNSUPPORTED_VERSION
                else:
                    r["offset"], r["timestamp"] = found
                    if r["offset"] >= 0:  # "not found" carries no epoch, as in Kafka
                        r["leader_epoch"] = partition.leader_epoch
            parts.append(r)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


DESCRIPTOR = ApiDescriptor(
    ApiKey.LIST_OFFSETS, 1, 11, list_offsets,
    "earliest, latest, by timestamp, max timestamp; the tiered sentinels (−5, −6) answer offset −1 "
    "(nothing is tiered); a sentinel older than its version gets UNSUPPORTED_VERSION; "
    "read_committed: latest is the last stable offset",
    topic_acl=TopicAcl(TopicOperation.DESCRIBE),
    version_notes={version: f"sentinel timestamp {timestamp}" for timestamp, version in _SENTINEL_MIN_VERSION.items()
                   if version > 0})
