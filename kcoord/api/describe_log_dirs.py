"""DescribeLogDirs: one log dir holds every partition; a partition's size is the bytes of
the batches kcoord keeps for it."""
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


def _entry(partition) -> dict:
    # Nothing replicates and nothing moves between dirs: no lag, never a future log.
    return {"partition_index": partition.index, "partition_size": partition.size_bytes(),
            "offset_lag": 0, "is_future_key": False}


async def describe_log_dirs(ctx, req):
    store = ctx.broker.topics
    if req.topics is None:
        topics = [{"name": t.name, "partitions": [_entry(p) for p in t.partitions]} for t in store.topics.values()]
    else:
        topics = []
        for t in req.topics:
            # As Kafka: topics and partitions this broker does not hold are left out, silently.
            found = [store.partition(t.topic, i) for i in t.partitions]
            kept = [_entry(p) for p in found if p is not None]
            if kept:
                topics.append({"name": t.topic, "partitions": kept})
    name, total, usable = _log_dir(ctx.broker.config)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": [
        {"error_code": ErrorCode.NONE, "log_dir": name, "topics": topics,
         "total_bytes": total, "usable_bytes": usable, "is_cordoned": False}]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_LOG_DIRS, 1, 5, describe_log_dirs,
    "one log dir (the data dir, or \"(in memory)\"); a partition's size is its stored batches' bytes",
    version_notes={2: "flexible versions", 3: "a top-level error code",
                   4: "the volume's total and usable bytes (-1 in memory)", 5: "never cordoned"})
