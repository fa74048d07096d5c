"""Topic configuration values reported by DescribeConfigs/CreateTopics (broker ones: kcoord.broker_config).

Values are Kafka's defaults; kcoord applies none of the retention or segment
settings (the log lives in memory), it only reports them so admin tools work.
"""
import re

TOPIC_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "follower.replication.throttled.replicas": "",
    "leader.replication.throttled.replicas": "",
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
    "cleanup.policy": _LIST, "leader.replication.throttled.replicas": _LIST,
    "follower.replication.throttled.replicas": _LIST, "compression.type": _STRING, "message.timestamp.type": _STRING,
    "min.cleanable.dirty.ratio": _DOUBLE, "preallocate": _BOOLEAN, "unclean.leader.election.enable": _BOOLEAN,
    "max.message.bytes": _INT, "min.insync.replicas": _INT, "segment.bytes": _INT, "segment.index.bytes": _INT,
}


def config_type(name: str) -> int:
    return _TYPES.get(name, _LONG)


# The values Kafka's validators allow, in the order its messages list them.
_CHOICES = {
    "cleanup.policy": ("compact", "delete"),
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
}
_TYPE_NAMES = {_INT: "INT", _LONG: "LONG", _DOUBLE: "DOUBLE"}
_BOUNDS = {_INT: 2**31, _LONG: 2**63}


class TopicConfigError(ValueError):
    """A topic config change Kafka refuses: `code_name` is the ErrorCode member, the text Kafka's message."""

    def __init__(self, code_name: str, message: str):
        self.code_name = code_name
        super().__init__(message)


def _invalid(name: str, value, why: str) -> TopicConfigError:
    return TopicConfigError("INVALID_CONFIG", f"Invalid value {value} for configuration {name}: {why}")


def check_topic_config(name: str, value: str | None) -> None:
    """Kafka's checks of one topic config value: a known name, its type, its allowed values.
    (Range bounds are not modelled: see docs/deviations.md.)"""
    if name not in TOPIC_DEFAULTS:
        raise TopicConfigError("INVALID_CONFIG", f"Unknown topic config name: {name}")
    kind = config_type(name)
    text = "" if value is None else value.strip()
    if kind in _TYPE_NAMES:
        try:
            number = float(text) if kind == _DOUBLE else int(text)
        except ValueError:
            raise _invalid(name, value, f"Not a number of type {_TYPE_NAMES[kind]}") from None
        if kind != _DOUBLE and not -_BOUNDS[kind] <= number < _BOUNDS[kind]:
            raise _invalid(name, value, f"Not a number of type {_TYPE_NAMES[kind]}")
    elif kind == _BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise _invalid(name, value, "Expected value to be either true or false")
    if name in THROTTLED_REPLICAS and not _throttled_list_ok(text):
        # Kafka's validator sees the parsed list, and names it as Java prints a list.
        shown = "[" + ", ".join(i.strip() for i in text.split(",")) + "]"
        raise _invalid(name, shown, f"{name} must be the literal '*' or a list of replicas in the following format: "
                                    "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
    if name in _CHOICES:
        items = [i.strip() for i in text.split(",")] if kind == _LIST else [text]
        if any(i not in _CHOICES[name] for i in items):
            bad = next(i for i in items if i not in _CHOICES[name])
            raise _invalid(name, bad if kind == _LIST else value,
                           f"String must be one of: {', '.join(_CHOICES[name])}")


THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_list_ok(text: str) -> bool:
    items = [i.strip() for i in text.split(",")]
    return "".join(items) == "*" or all(_REPLICA.fullmatch(i) for i in items)


def throttles(configs: dict[str, str], name: str, partition: int, broker: int) -> bool:
    """Whether a topic's `name` (one of THROTTLED_REPLICAS) lists the replica `partition:broker`."""
    items = [i.strip() for i in configs.get(name, "").split(",")]
    return "".join(items) == "*" or f"{partition}:{broker}" in items


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATION_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def altered(current: dict[str, str], ops: list[tuple[str, int, str | None]]) -> dict[str, str]:
    """A topic's own configs after IncrementalAlterConfigs' operations, checked as Kafka checks
    them; TopicConfigError otherwise."""
    names = [n for n, _, _ in ops]
    if len(set(names)) != len(names):
        raise TopicConfigError("INVALID_REQUEST", "Error due to duplicate config keys")
    configs = dict(current)
    for name, op, value in ops:
        if name not in TOPIC_DEFAULTS:
            raise TopicConfigError("INVALID_CONFIG", f"Unknown topic config name: {name}")
        if op == SET:
            configs[name] = value
        elif op == DELETE:
            configs.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if config_type(name) != _LIST:
                raise TopicConfigError("INVALID_CONFIG", f"Can't {_OPERATION_NAMES[op]} to key {name} because "
                                                         "its type is not LIST.")
            have = [i for i in configs.get(name, TOPIC_DEFAULTS[name]).split(",") if i]
            given = [i.strip() for i in (value or "").split(",") if i.strip()]
            items = have + [i for i in given if i not in have] if op == APPEND else [i for i in have
                                                                                      if i not in given]
            configs[name] = ",".join(items)
        else:
            raise TopicConfigError("INVALID_REQUEST", f"Unknown operation {op} for {name}")
        if name in configs:
            check_topic_config(name, configs[name])
    return configs


def replaced(ops: list[tuple[str, str | None]]) -> dict[str, str]:
    """A topic's own configs after AlterConfigs, which replaces all of them."""
    names = [n for n, _ in ops]
    if len(set(names)) != len(names):
        raise TopicConfigError("INVALID_REQUEST", "Error due to duplicate config keys")
    for name, value in ops:
        check_topic_config(name, value)
    return {name: value for name, value in ops}

