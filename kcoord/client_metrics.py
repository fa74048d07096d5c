"""Client-metrics subscriptions (KIP-714): config resources of type CLIENT_METRICS.

A subscription is a named set of three configs: `metrics` (metric name prefixes), `interval.ms`
(how often a matching client pushes) and `match` (which clients: `client_id=...`, ...).
`kafka-client-metrics` and `kafka-configs --entity-type client-metrics` set them with
IncrementalAlterConfigs, read them with DescribeConfigs and list them with ListConfigResources.
A subscription exists while it has at least one config of its own. Values are checked as
Kafka's ClientMetricsConfigs checks them, with Kafka's error codes and messages.

kcoord keeps the subscriptions and reports them; it serves no telemetry
(GetTelemetrySubscriptions, PushTelemetry), so no client is ever sent one.
"""
from __future__ import annotations

import re

from kcoord.config_changes import JAVA_WHITESPACE as _JAVA_WHITESPACE
from kcoord.config_changes import ConfigChangeError, applied, java_int
from kcoord.coordinator.javaorder import hashmap_order, string_hash

RESOURCE_TYPE = 16   # Kafka's ConfigResource.Type.CLIENT_METRICS
# DescribeConfigs' ConfigSource for a value set on the subscription (CLIENT_METRICS_CONFIG), and
# for a default (DEFAULT_CONFIG).
SET_HERE, DEFAULT = 7, 5
_LIST, _INT = 7, 3   # ConfigType codes

# name -> (type, default as DescribeConfigs shows it, documentation), in the order Kafka's
# DescribeConfigs lists them (its HashMap's).
CONFIGS = {
    "interval.ms": (_INT, "300000", "Metrics push interval in milliseconds"),
    "match": (_LIST, "", "Client match criteria"),
    "metrics": (_LIST, "", "Telemetry metric name prefix list"),
}
# The order Kafka's ConfigDef parses them in (their definition order): which error comes first.
_PARSE_ORDER = ("metrics", "interval.ms", "match")
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
MATCH_PARAMS = frozenset({"client_instance_id", "client_id", "client_software_name", "client_software_version",
                          "client_source_address", "client_source_port"})

_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")   # ConfigDef's "\\s*,\\s*"


def _java_split(text: str, separator: str) -> list[str]:
    """Java's String.split: trailing empty parts dropped, the whole text when it has no separator."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _parse(name: str, text: str):
    """The value of config `name` as Kafka's ConfigDef parses and validates it."""
    kind = CONFIGS[name][0]
    trimmed = text.strip(_JAVA_WHITESPACE)
    if kind == _INT:
        value = java_int(trimmed)
        if value is None:
            raise ConfigChangeError("INVALID_CONFIG",
                                    f"Invalid value {text} for configuration {name}: Not a number of type INT")
        return value
    # ConfigDef drops repeated items (with a warning in its log) before its validator looks.
    items = list(dict.fromkeys(_LIST_SEPARATOR.split(trimmed))) if trimmed else []
    if "" in items:
        raise ConfigChangeError("INVALID_CONFIG", f"Configuration '{name}' values must not be empty.")
    return items


def _check_match(pattern: str) -> None:
    parts = _java_split(pattern, "=")
    illegal = ConfigChangeError("INVALID_CONFIG", f"Illegal client matching pattern: {pattern}")
    if len(parts) != 2 or parts[0].strip(_JAVA_WHITESPACE) not in MATCH_PARAMS:
        raise illegal
    try:
        # Kafka compiles a java.util.regex pattern; Python's `re` is close (docs/deviations.md).
        re.compile(parts[1].strip(_JAVA_WHITESPACE))
    except re.error:
        raise illegal from None


def validate(name: str, configs: dict[str, str]) -> None:
    """Kafka's ClientMetricsConfigs.validate over a subscription's configs after a change."""
    if not name:
        raise ConfigChangeError("INVALID_REQUEST", "Subscription name can't be empty")
    unknown = [k for k in hashmap_order(list(configs), string_hash) if k not in CONFIGS]
    if unknown:
        raise ConfigChangeError("INVALID_REQUEST", f"Unknown client metrics configuration: {unknown[0]}")
    parsed = {key: _parse(key, configs[key]) for key in _PARSE_ORDER if key in configs}
    interval = parsed.get("interval.ms")
    if interval is not None and not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
        raise ConfigChangeError("INVALID_REQUEST", f"Invalid value {interval} for interval.ms, interval must be "
                                                    f"between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    for pattern in parsed.get("match", ()):
        _check_match(pattern)


class ClientMetricsStore:
    """The subscriptions: name -> its own configs. A change reaches `observer` (durable state)
    before it takes effect."""

    def __init__(self):
        self.subscriptions: dict[str, dict[str, str]] = {}
        self.observer = None

    def names(self) -> list[str]:
        return list(self.subscriptions)

    def configs(self, name: str) -> dict[str, str]:
        """Subscription `name`'s own configs ({} when there is none)."""
        return dict(self.subscriptions.get(name, {}))

    def altered(self, name: str, ops: list[tuple[str, int, str | None]]) -> dict[str, str]:
        """Subscription `name`'s configs after SET and DELETE `ops` (kcoord.config_changes.check_request
        passed), validated as Kafka's controller validates them; nothing changes until `replace`."""
        configs = applied(self.configs(name), ops)
        validate(name, configs)
        return configs

    def replace(self, name: str, configs: dict[str, str]) -> None:
        """Subscription `name` gets `configs` (validated); none left removes it."""
        if self.observer is not None:
            self.observer.client_metrics_changed(name, configs)
        self.restore(name, configs)

    def restore(self, name: str, configs: dict[str, str]) -> None:
        """Put back what durable state kept, unchecked (it was checked when it was set)."""
        if configs:
            self.subscriptions[name] = dict(configs)
        else:
            self.subscriptions.pop(name, None)

    def describe(self, name: str, keys=None, include_synonyms: bool = False,
                 include_documentation: bool = False) -> list[dict]:
        """DescribeConfigs' entries for subscription `name`, every config with its default where
        it has no value of its own (an unknown name has only defaults), as Kafka lists them."""
        if not name:
            raise ConfigChangeError("INVALID_REQUEST", "Client metrics subscription name must not be empty")
        own = self.subscriptions.get(name, {})
        entries = []
        for key, (kind, default, doc) in CONFIGS.items():
            if keys and key not in keys:
                continue
            value = default if key not in own else _shown(key, own[key])
            synonyms = [{"name": key, "value": value, "source": SET_HERE}] if key in own else []
            entries.append({"name": key, "value": value, "read_only": False,
                            "config_source": SET_HERE if key in own else DEFAULT, "is_default": key not in own,
                            "is_sensitive": False, "synonyms": synonyms if include_synonyms else [],
                            "config_type": kind, "documentation": doc if include_documentation else None})
        return entries


def _shown(name: str, text: str) -> str:
    """A value as Kafka shows it: parsed, then written back (lists without the blanks around commas)."""
    value = _parse(name, text)
    return ",".join(value) if isinstance(value, list) else str(value)
