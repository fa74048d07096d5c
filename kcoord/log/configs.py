"""Topic configuration values reported by DescribeConfigs/CreateTopics (broker ones: kcoord.broker_config).

Values are Kafka's defaults; kcoord applies none of the retention or segment
settings (the log lives in memory), it only reports them so admin tools work.
"""

TOPIC_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.timestamp.after.max.ms": "9223372036854775807",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}

# Kafka's ConfigEntry.ConfigType codes.
_BOOLEAN, _STRING, _INT, _LONG, _DOUBLE, _LIST = 1, 2, 3, 5, 6, 7

_TYPES = {
    "cleanup.policy": _LIST, "compression.type": _STRING, "message.timestamp.type": _STRING,
    "min.cleanable.dirty.ratio": _DOUBLE, "preallocate": _BOOLEAN, "unclean.leader.election.enable": _BOOLEAN,
    "max.message.bytes": _INT, "min.insync.replicas": _INT, "segment.bytes": _INT, "segment.index.bytes": _INT,
}


def config_type(name: str) -> int:
    return _TYPES.get(name, _LONG)

