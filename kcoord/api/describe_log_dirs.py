"""DescribeLogDirs: each broker's one log dir holds the partitions it has a replica of; a
replica's size is the bytes of the batches kcoord keeps for the partition, or, on a broker
still copying it for a reassignment, what it has copied so far (and its offset lag the
offsets not yet copied)."""
import os
import shutil

from kcoord.api import ApiDescriptor, ApiKey
from wire.errors import ErrorCode

# What the log dir is called when the state lives in memory only: no path would be true.
IN_MEMORY = "(in memory)"


def _log_dir(config) -> tuple[str, int, int]:
    """The dir's name, and the total and usable bytes of its volume (-1: not known)."""
    if config.data_dir is None:
        return IN_MEMORY, -1, -1
    path = os.path.abspath(config.data_dir)
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return path, -1, -1
    return path, usage.total, usage.free


def _copied(partition, node_id: int) -> tuple[int, int]:
    """The replica's size and offset lag on `node_id`: the whole partition with no lag once in
    sync; while it is being added, the batches copied so far and the offsets after them."""
    if node_id not in partition.copied:
        return partition.size_bytes(), 0
    budget, reached = int(partition.copied.get(node_id, 0)), partition.log_start_offset
    size = 0
    for batch in partition.batches:
        if size + len(batch.data) > budget:
            break
        size += len(batch.data)
        reached = batch.last_offset + 1
    return budget, max(partition.high_watermark - reached, 0)


def _entry(partition, node_id: int) -> dict:
    # Nothing moves between a broker's dirs: never a future log.
    size, lag = _copied(partition, node_id)
    return {"partition_index": partition.index, "partition_size": size, "offset_lag": lag, "is_future_key": False}


async def describe_log_dirs(ctx, req):
    store = ctx.broker.topics
    node_id = ctx.broker.node_id
    # As Kafka: topics and partitions this broker holds no replica of are left out, silently.
    if req.topics is None:
        wanted = [(t.name, t.partitions) for t in store.topics.values()]
    else:
        wanted = [(t.topic, [store.partition(t.topic, i) for i in t.partitions]) for t in req.topics]
    topics = []
    for name, partitions in wanted:
        kept = [_entry(p, node_id) for p in partitions if p is not None and node_id in p.replicas]
        if kept:
            topics.append({"name": name, "partitions": kept})
    name, total, usable = _log_dir(ctx.broker.config)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": [
        {"error_code": ErrorCode.NONE, "log_dir": name, "topics": topics,
         "total_bytes": total, "usable_bytes": usable, "is_cordoned": False}]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_LOG_DIRS, 1, 5, describe_log_dirs,
    "one log dir (the data dir, or \"(in memory)\"); a partition's size is its stored batches' bytes",
    version_notes={2: "flexible versions", 3: "a top-level error code",
                   4: "the volume's total and usable bytes (-1 in memory)", 5: "never cordoned"})
