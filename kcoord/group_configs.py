"""Per-group configs: config resources of type GROUP (32), as Kafka 4.3.1's GroupConfig has them.

`kafka-configs --entity-type groups --entity-name G --alter --add-config
streams.num.standby.replicas=1` sets a config on one group (IncrementalAlterConfigs; AlterConfigs
too, which Kafka also takes for groups), `--describe` reads them (DescribeConfigs: every config,
the group's own value or else the broker's), ListConfigResources lists the groups that have any.
Changes are checked as Kafka's controller checks them (kcoord.config_changes, then
GroupConfig.validate: names, then values, then the broker's bounds), with its codes and messages.

A group's default for a config is its broker synonym's value (`group.consumer.session.timeout.ms`
for `consumer.session.timeout.ms`, ...). kcoord has the group.consumer.* and group.streams.*
broker configs (group.share.* too); it has no group.consumer.min/max.assignment.interval.ms:
for those Kafka's defaults stand in. `share_settings(group_id)` gives the brokers' share
partitions (kcoord.share) a share group's record-level settings.

The coordinators read a group's configs through `effective(group_id)`: only those it has of its
own, each brought within the broker's bounds (Kafka's GroupConfig.evaluate: a value stored when
the bounds were wider is capped, with a warning), since the bounds may have changed since the
value was set.

Changes are written to `group-configs.json` in the data dir (when there is one) before they take
effect, and put back at start-up, as the dynamic broker configs are (kcoord.dynamic_broker_config).
One store serves every broker of a kcoord.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from kcoord import broker_config as bc
from kcoord.config_changes import JAVA_WHITESPACE, ConfigChangeError, applied, java_int
from kcoord.coordinator.javaorder import hashmap_order, string_hash
from kcoord.dynamic_broker_config import write_durably

log = logging.getLogger("kcoord")

RESOURCE_TYPE = 32   # Kafka's ConfigResource.Type.GROUP
FILE_NAME = "group-configs.json"
# DescribeConfigs' ConfigSource for a value set on the group (GROUP_CONFIG), and for a default.
SET_HERE, DEFAULT = 8, bc.DEFAULT_CONFIG


@dataclass(frozen=True)
class Bound:
    """A broker config bounding a group config, and Kafka's default for it where kcoord has no
    such broker config."""

    broker: str
    kafka_default: int

    def value(self, cfg) -> int:
        entry = bc.BY_NAME.get(self.broker)
        return self.kafka_default if entry is None or cfg is None else entry.value(cfg)


@dataclass(frozen=True)
class GroupConfigDef:
    name: str
    type: str                    # int | string | boolean
    kafka_default: str           # GroupConfig's own default (used where there is no broker synonym in kcoord)
    doc: str
    at_least: int | None = None
    broker: str | None = None    # the broker-level synonym, whose value is the group's default
    least: Bound | None = None   # the broker's bounds, checked at a change and applied when read
    most: Bound | None = None
    bounded_when_set: bool = False   # Kafka checks the bounds only when the group sets it
    choices: tuple = ()

    @property
    def config_type(self) -> int:
        return bc.CONFIG_TYPE_CODES[self.type]

    def default(self, cfg) -> str:
        entry = bc.BY_NAME.get(self.broker) if self.broker else None
        return self.kafka_default if entry is None or cfg is None else entry.to_string(entry.value(cfg))


def _ms(name: str, least: int, default: int, broker: str, bounds: tuple, doc: str, when_set: bool = False):
    lo, hi = bounds
    return GroupConfigDef(name, "int", str(default), doc, at_least=least, broker=broker,
                          least=Bound(*lo) if lo else None, most=Bound(*hi) if hi else None, bounded_when_set=when_set)


# In the order of GroupConfig's ConfigDef: the order Kafka parses them in, so which error comes first.
CONFIGS: dict[str, GroupConfigDef] = {c.name: c for c in (
    _ms("consumer.session.timeout.ms", 1, 45000, "group.consumer.session.timeout.ms",
        (("group.consumer.min.session.timeout.ms", 45000), ("group.consumer.max.session.timeout.ms", 60000)),
        "How long a consumer-protocol member of the group may go without a heartbeat before it is fenced."),
    _ms("consumer.heartbeat.interval.ms", 1, 5000, "group.consumer.heartbeat.interval.ms",
        (("group.consumer.min.heartbeat.interval.ms", 5000), ("group.consumer.max.heartbeat.interval.ms", 15000)),
        "The heartbeat interval the group's consumer-protocol members are told."),
    _ms("consumer.assignment.interval.ms", 0, 1000, "group.consumer.assignment.interval.ms",
        (("group.consumer.min.assignment.interval.ms", 0), ("group.consumer.max.assignment.interval.ms", 15000)),
        "The least time between two target assignments of the consumer group.", when_set=True),
    _ms("share.session.timeout.ms", 1, 45000, "group.share.session.timeout.ms",
        (("group.share.min.session.timeout.ms", 45000), ("group.share.max.session.timeout.ms", 60000)),
        "How long a member of the share group may go without a heartbeat before it is fenced."),
    _ms("share.heartbeat.interval.ms", 1, 5000, "group.share.heartbeat.interval.ms",
        (("group.share.min.heartbeat.interval.ms", 5000), ("group.share.max.heartbeat.interval.ms", 15000)),
        "The heartbeat interval the share group's members are told."),
    _ms("share.record.lock.duration.ms", 1000, 30000, "group.share.record.lock.duration.ms",
        (("group.share.min.record.lock.duration.ms", 15000), ("group.share.max.record.lock.duration.ms", 60000)),
        "How long a record the share group delivered stays locked to the member that acquired it."),
    _ms("share.delivery.count.limit", 2, 5, "group.share.delivery.count.limit",
        (("group.share.min.delivery.count.limit", 2), ("group.share.max.delivery.count.limit", 10)),
        "How often the share group delivers a record before archiving it."),
    _ms("share.partition.max.record.locks", 100, 2000, "group.share.partition.max.record.locks",
        (("group.share.min.partition.max.record.locks", 100), ("group.share.max.partition.max.record.locks", 4000)),
        "How many records of a partition the share group may hold acquired at a time."),
    GroupConfigDef("share.auto.offset.reset", "string", "latest",
                   "Where the share group starts in a partition it has no state for: earliest, latest or "
                   "by_duration:<ISO-8601 duration>."),
    GroupConfigDef("share.isolation.level", "string", "read_uncommitted",
                   "Whether the share group delivers only committed transactional records.", choices=("read_committed", "read_uncommitted")),
    GroupConfigDef("share.renew.acknowledge.enable", "boolean", "true",
                   "Whether the share group's members may renew the locks of their records."),
    _ms("share.assignment.interval.ms", 0, 1000, "group.share.assignment.interval.ms",
        (("group.share.min.assignment.interval.ms", 0), ("group.share.max.assignment.interval.ms", 15000)),
        "The least time between two target assignments of the share group.", when_set=True),
    _ms("streams.session.timeout.ms", 1, 45000, "group.streams.session.timeout.ms",
        (("group.streams.min.session.timeout.ms", 45000), ("group.streams.max.session.timeout.ms", 60000)),
        "How long a member of the streams group may go without a heartbeat before it is fenced."),
    _ms("streams.heartbeat.interval.ms", 1, 5000, "group.streams.heartbeat.interval.ms",
        (("group.streams.min.heartbeat.interval.ms", 5000), ("group.streams.max.heartbeat.interval.ms", 15000)),
        "The heartbeat interval the streams group's members are told."),
    _ms("streams.num.standby.replicas", 0, 0, "group.streams.num.standby.replicas",
        (None, ("group.streams.max.standby.replicas", 2)),
        "How many standby replicas of each stateful task the streams group's assignment places."),
    _ms("streams.initial.rebalance.delay.ms", 0, 3000, "group.streams.initial.rebalance.delay.ms", (None, None),
        "How long the empty streams group waits for more members before its first assignment."),
    _ms("streams.assignment.interval.ms", 0, 1000, "group.streams.assignment.interval.ms",
        (("group.streams.min.assignment.interval.ms", 0), ("group.streams.max.assignment.interval.ms", 15000)),
        "The least time between two target assignments of the streams group.", when_set=True),
)}
# The order DescribeConfigs lists them in: GroupConfig's values, a HashMap copied into another.
DESCRIBE_ORDER = hashmap_order(hashmap_order(list(CONFIGS), string_hash), string_hash)
# The pairs whose session must exceed their heartbeat interval, checked last.
_SESSION_OVER_HEARTBEAT = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                           ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                           ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))
# The order Kafka checks the broker's bounds in (heartbeat before session, unlike the ConfigDef).
_BOUNDS_ORDER = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "consumer.assignment.interval.ms",
                 "share.heartbeat.interval.ms", "share.session.timeout.ms", "share.record.lock.duration.ms",
                 "share.delivery.count.limit", "share.partition.max.record.locks", "share.assignment.interval.ms",
                 "streams.heartbeat.interval.ms", "streams.session.timeout.ms", "streams.num.standby.replicas",
                 "streams.assignment.interval.ms")
# What GroupConfig.validate puts under the group's own configs: the broker values of these.
_BROKER_DEFAULTS = ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms",
                    "share.heartbeat.interval.ms", "share.record.lock.duration.ms", "share.delivery.count.limit",
                    "share.partition.max.record.locks", "streams.session.timeout.ms", "streams.heartbeat.interval.ms",
                    "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms")
# Java's Duration.parse: PnDTnHnMn.nS, each part optional but at least one, T only before a time part.
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)


def _invalid(name: str, text, reason: str) -> ConfigChangeError:
    return ConfigChangeError("INVALID_CONFIG", f"Invalid value {text} for configuration {name}: {reason}")


def duration_nanos(text: str) -> int | None:
    """Java's Duration.parse of `text` in nanoseconds (None: not a duration)."""
    m = _DURATION.fullmatch(text)
    if m is None or not any(m.group(i) for i in (2, 4, 5, 6)) or (m.group(3) or "").upper() == "T":
        return None
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    fraction = int((m.group(7) or "0").ljust(9, "0")) * (-1 if (m.group(6) or "").startswith("-") else 1)
    nanos = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 10**9 + fraction
    return -nanos if m.group(1) == "-" else nanos


def _non_negative_duration(text: str) -> bool:
    nanos = duration_nanos(text)
    return nanos is not None and nanos >= 0


def parse(definition: GroupConfigDef, text: str):
    """A value as GroupConfig's ConfigDef parses and validates it (ConfigChangeError with Kafka's
    message if it does not)."""
    name, trimmed = definition.name, text.strip(JAVA_WHITESPACE)
    if definition.type == "int":
        value = java_int(trimmed)
        if value is None:
            raise _invalid(name, text, "Not a number of type INT")
        if definition.at_least is not None and value < definition.at_least:
            raise _invalid(name, value, f"Value must be at least {definition.at_least}")
        return value
    if definition.type == "boolean":
        if trimmed.lower() not in ("true", "false"):
            raise _invalid(name, text, "Expected value to be either true or false")
        return trimmed.lower() == "true"
    if definition.choices and trimmed not in definition.choices:
        raise _invalid(name, trimmed, f"String must be one of: {', '.join(definition.choices)}")
    if name == "share.auto.offset.reset" and trimmed not in ("earliest", "latest") and not (
            trimmed.startswith("by_duration:") and _non_negative_duration(trimmed[len("by_duration:"):])):
        raise _invalid(name, trimmed, f"Invalid value `{trimmed}` for configuration {name}. The value must be either "
                                      "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
    return trimmed


def shown(value) -> str:
    """A parsed value as DescribeConfigs shows it."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def validate(name: str, configs: dict[str, str], cfg) -> None:
    """Kafka's checks of a group's configs after a change (ControllerConfigurationValidator, then
    GroupConfig.validate): the name, the config names, each value, the broker's bounds, and each
    session timeout over its heartbeat interval."""
    if not name:
        raise ConfigChangeError("INVALID_REQUEST", "Default group resources are not allowed.")
    combined = {n: CONFIGS[n].default(cfg) for n in _BROKER_DEFAULTS}
    combined.update(configs)
    for key in hashmap_order(list(combined), string_hash):
        if key not in CONFIGS:
            raise ConfigChangeError("INVALID_CONFIG", f"Unknown group config name: {key}")
    values = {key: parse(d, combined.get(key, d.kafka_default)) for key, d in CONFIGS.items()}
    for key in _BOUNDS_ORDER:
        d = CONFIGS[key]
        if d.bounded_when_set and key not in configs:
            continue
        if d.least is not None and values[key] < d.least.value(cfg):
            raise ConfigChangeError("INVALID_CONFIG", f"{key} must be greater than or equal to {d.least.broker}")
        if d.most is not None and values[key] > d.most.value(cfg):
            raise ConfigChangeError("INVALID_CONFIG", f"{key} must be less than or equal to {d.most.broker}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:
            raise ConfigChangeError("INVALID_CONFIG", f"{session} must be greater than {heartbeat}")



@dataclass(frozen=True)
class ShareGroupSettings:
    """A share group's record-level settings (GroupConfigs.share_settings)."""
    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str      # "earliest", "latest" or "by_duration:<ISO-8601 duration>"
    isolation_level: str        # "read_uncommitted" or "read_committed"
    renew_acknowledge_enable: bool


class GroupConfigs:
    """The groups' own configs: group id -> name -> value as set. A change is written to the data
    dir (when there is one) before it takes effect."""

    def __init__(self, cfg=None, data_dir: str | None = None):
        self.cfg = cfg   # the broker's ServerConfig: defaults and bounds (None: Kafka's defaults)
        self.groups: dict[str, dict[str, str]] = {}
        self._effective: dict[str, dict] = {}
        self.path = Path(data_dir) / FILE_NAME if data_dir else None

    # --- persistence ---
    def load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        data = json.loads(self.path.read_text(encoding="utf-8"))
        self.groups = {g: dict(c) for g, c in data.get("groups", {}).items() if c}
        self._effective.clear()

    # --- changes ---
    def names(self) -> list[str]:
        return list(self.groups)

    def configs(self, group_id: str) -> dict[str, str]:
        """Group `group_id`'s own configs ({} when it has none)."""
        return dict(self.groups.get(group_id, {}))

    def altered(self, group_id: str, ops: list[tuple[str, int, str | None]]) -> dict[str, str]:
        """The group's configs after `ops` (kcoord.config_changes.check_request passed), validated
        as Kafka's controller validates them; nothing changes until `replace`."""
        configs = applied(self.configs(group_id), ops)
        validate(group_id, configs, self.cfg)
        return configs

    def replace(self, group_id: str, configs: dict[str, str]) -> None:
        """The group's configs become `configs` (validated): persisted, then in force. None left
        removes the group from the store."""
        groups = {**self.groups, group_id: dict(configs)}
        if not configs:
            del groups[group_id]
        if self.path is not None:
            write_durably(self.path, {"groups": groups})
        self.groups = groups
        self._effective.pop(group_id, None)

    # --- the coordinators' view ---
    def effective(self, group_id: str) -> Mapping[str, object]:
        """The group's own configs, parsed and brought within the broker's bounds (Kafka's
        GroupConfig.evaluate); empty when it has none."""
        if group_id not in self.groups:
            return {}
        values = self._effective.get(group_id)
        if values is None:
            values = self._effective[group_id] = self._evaluate(group_id, self.groups[group_id])
        return values

    def _evaluate(self, group_id: str, configs: dict[str, str]) -> dict:
        values = {}
        for key, text in configs.items():
            d = CONFIGS.get(key)
            if d is None:
                continue
            try:
                value = parse(d, text)
            except ConfigChangeError as err:   # a data dir edited by hand: the broker's value stands
                log.warning("group %r: ignoring its config %s: %s", group_id, key, err)
                continue
            least = d.least.value(self.cfg) if d.least is not None else None
            most = d.most.value(self.cfg) if d.most is not None else None
            if least is not None and value < least:
                log.warning("The group config '%s' for group '%s' has value %d which is below the broker's allowed "
                            "minimum %d. The effective value will be capped to %d.", key, group_id, value, least, least)
                value = least
            elif most is not None and value > most:
                log.warning("The group config '%s' for group '%s' has value %d which exceeds the broker's allowed "
                            "maximum %d. The effective value will be capped to %d.", key, group_id, value, most, most)
                value = most
            values[key] = value
        return values

    def share_settings(self, group_id: str) -> "ShareGroupSettings":
        """What a share group's share partitions go by: its own config where it has one (within the
        broker's bounds), else the broker's group.share.* value (Kafka's ShareGroupConfigProvider)."""
        own = self.effective(group_id)

        def value(name: str):
            return own[name] if name in own else parse(CONFIGS[name], CONFIGS[name].default(self.cfg))
        return ShareGroupSettings(value("share.record.lock.duration.ms"), value("share.delivery.count.limit"),
                                  value("share.partition.max.record.locks"), value("share.auto.offset.reset"),
                                  value("share.isolation.level"), value("share.renew.acknowledge.enable"))

    # --- DescribeConfigs ---
    def describe(self, group_id: str, keys=None, include_synonyms: bool = False,
                 include_documentation: bool = False, dynamic=None) -> list[dict]:
        """DescribeConfigs' entries for the group: every config, the group's own value or else the
        broker's, with its synonyms (the group's, then the broker config's), as Kafka lists them.
        `dynamic`: the dynamic broker configs (kcoord.dynamic_broker_config), for the synonyms."""
        if not group_id:
            raise ConfigChangeError("INVALID_REQUEST", "Group name must not be empty")
        own = self.groups.get(group_id, {})
        entries = []
        for key in DESCRIBE_ORDER:
            if keys and key not in keys:
                continue
            d = CONFIGS[key]
            synonyms = self._default_synonyms(d, dynamic)
            if key in own:
                synonyms.insert(0, {"name": key, "value": shown(parse(d, own[key])), "source": SET_HERE})
            value = synonyms[0]["value"] if key in own else d.default(self.cfg)
            source = synonyms[0]["source"] if synonyms else DEFAULT
            entries.append({"name": key, "value": value, "read_only": False, "config_source": source,
                            "is_default": source == DEFAULT, "is_sensitive": False,
                            "synonyms": synonyms if include_synonyms else [], "config_type": d.config_type,
                            "documentation": d.doc if include_documentation else None})
        return entries

    def _default_synonyms(self, d: GroupConfigDef, dynamic) -> list[dict]:
        if d.broker is None:
            return [{"name": d.name, "value": d.kafka_default, "source": DEFAULT}]
        entry = bc.BY_NAME.get(d.broker)
        if entry is None or self.cfg is None:
            return [{"name": d.broker, "value": d.kafka_default, "source": DEFAULT}]
        return bc.synonyms_of(self.cfg, entry, dynamic)
