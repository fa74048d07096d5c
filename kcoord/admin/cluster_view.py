"""What each broker of one kcoord holds: the partitions it leads and the groups it coordinates,
for the admin endpoint's /brokers and the per-broker gauges of /metrics."""
from __future__ import annotations


def all_partitions(topics):
    """(topic name, kcoord.log.partition.Partition) of every partition, internal topics too."""
    for topic in list(topics.topics.values()):
        for partition in topic.partitions:
            yield topic.name, partition


def partitions_led(topics) -> dict[int, dict[str, int]]:
    """Node id -> topic -> how many of the topic's partitions the node leads (-1: led by none)."""
    led: dict[int, dict[str, int]] = {}
    for name, partition in all_partitions(topics):
        per_topic = led.setdefault(partition.leader, {})
        per_topic[name] = per_topic.get(name, 0) + 1
    return led


def groups_coordinated(runtime) -> dict[int, int]:
    """Node id -> how many groups (classic and consumer) its loaded coordinators hold."""
    counts: dict[int, int] = {}
    for shard in list(runtime.shards.values()):
        if shard.coordinator is not None:
            ctx = shard.coordinator.ctx
            counts[shard.node] = counts.get(shard.node, 0) + len(ctx.groups) + len(ctx.consumer_groups)
    return counts
