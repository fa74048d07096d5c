"""Kafka broker configuration names: one table for flags, server.properties, ServerConfig and DescribeConfigs.

So that one `server.properties` configures both Apache Kafka and kcoord, every
setting kcoord models is known by its Kafka name, type, default and validator
(Kafka 4.x `ConfigDef`). `kcoord serve` flags such as `--group-max-size` are
aliases of these names. Keys kcoord does not model are accepted with a warning,
since a real broker's file must load unchanged.

    file_props = load_properties(path)                   # Java properties syntax
    resolved = resolve(file_props, config_props, flag_props)  # later layers win; ConfigError if bad
    apply(cfg, resolved)                                 # sets ServerConfig fields
    log_warnings(resolved)                               # one line per ignored key
    describe(cfg, keys, include_synonyms, include_documentation)  # DescribeConfigs entries
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger("kcoord")

INT_MAX = 2**31 - 1
# Kafka's ConfigEntry.ConfigType codes, as DescribeConfigs v3+ reports them.
CONFIG_TYPE_CODES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7}
# Kafka's ConfigSource codes.
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5


class ConfigError(ValueError):
    """A value Kafka's validator would refuse; str() is `KEY=VALUE: reason`."""

    def __init__(self, name: str, value: str, reason: str):
        super().__init__(f"{name}={value}: {reason}")
        self.name, self.value, self.reason = name, value, reason


# --- Java properties -------------------------------------------------------------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str):
    """Physical lines joined where a line ends in an odd number of backslashes (java.util.Properties)."""
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None and line.lstrip(" \t\f")[:1] in ("#", "!"):
            continue  # comments never continue, even ending in a backslash
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Java `Properties.load` syntax: `#`/`!` comments, `k=v`, `k: v` or `k v`, backslash continuations
    and escapes. A key given twice keeps its last value, as Java does."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        line = line.lstrip(" \t\f")
        if not line:
            continue
        i = 0
        while i < len(line) and line[i] not in "=: \t\f":  # the key ends at an unescaped =, : or blank
            i += 2 if line[i] == "\\" else 1
        key, rest = line[:i], line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        # Java keeps trailing blanks of a value; server.properties editors do not mean them, and Kafka
        # trims every value it reads (ConfigDef.parseType), so both ends go.
        props[_unescape(key)] = _unescape(rest).strip(" \t\f")
    return props


def load_properties(path: str) -> dict[str, str]:
    # Kafka reads the file with Properties.load(InputStream), which decodes ISO-8859-1.
    with open(path, encoding="latin-1") as f:
        return parse_properties(f.read())


# --- Values ----------------------------------------------------------------------------------

def _parse_int(name: str, text: str, lo: int, hi: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(name, text, "not an integer") from None
    if not lo <= value <= hi:
        raise ConfigError(name, text, "out of range for its type")
    return value


@dataclass(frozen=True)
class Listener:
    name: str | None  # None for the flag form HOST:PORT
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name or 'PLAINTEXT'}://{host}:{self.port}"


def _parse_listeners(name: str, text: str) -> tuple[Listener, ...]:
    out = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        lname, sep, address = item.partition("://")
        if not sep:
            lname, address = None, item
        elif not lname:
            raise ConfigError(name, text, f"listener {item!r} has no name")
        host, colon, port = address.rpartition(":")
        if not colon and lname is None:
            host, port = address, "9092"  # the flags always took a bare HOST for HOST:9092
        elif not colon:
            raise ConfigError(name, text, f"listener {item!r} has no port")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            port_n = int(port)
        except ValueError:
            raise ConfigError(name, text, f"listener {item!r}: port is not an integer") from None
        if not 0 <= port_n <= 65535:
            raise ConfigError(name, text, f"listener {item!r}: port out of range")
        # Kafka binds an empty host to every interface.
        out.append(Listener(lname.upper() if lname else None, host or "0.0.0.0", port_n))
    if not out:
        raise ConfigError(name, text, "no listener")
    return tuple(out)


# --- The table -------------------------------------------------------------------------------

@dataclass(frozen=True)
class BrokerConfig:
    """One Kafka broker config kcoord knows.

    `kafka_default` is Kafka 4.x's default as a string (None: no default); `default` is what kcoord
    runs with when the key is not given, which differs only where kcoord cannot do what Kafka's
    default means (see `kcoord_default_reason`). `field` is the ServerConfig attribute it sets,
    None for values kcoord only reports (its single-node facts, e.g. replication factors).
    """

    name: str
    type: str                     # boolean | string | int | short | long | list | listeners
    kafka_default: str | None
    doc: str
    field: str | None = None
    flag: str | None = None       # the `kcoord serve` flag that is an alias of this name
    at_least: int | None = None   # Kafka's Range.atLeast
    at_most: int | None = None
    dynamic: bool = False         # Kafka lets AlterConfigs change it; DescribeConfigs says read_only=False
    kcoord_default: str | None = None
    kcoord_default_reason: str | None = None
    choices: tuple = ()           # allowed list items (sasl.enabled.mechanisms)
    get: Callable | None = None   # cfg -> value, where it is not simply getattr(cfg, field)
    set: Callable | None = None   # (cfg, value, resolved) where it is not simply setattr

    @property
    def default(self) -> str | None:
        return self.kcoord_default if self.kcoord_default_reason else self.kafka_default

    @property
    def config_type(self) -> int:
        return CONFIG_TYPE_CODES["string" if self.type == "listeners" else self.type]

    @property
    def settable(self) -> bool:
        return self.field is not None or self.set is not None

    def parse(self, text: str) -> Any:
        """The typed value of `text`, or ConfigError with Kafka's kind of reason."""
        t = self.type
        if t in ("int", "short", "long"):
            bits = {"int": 31, "short": 15, "long": 63}[t]
            value = _parse_int(self.name, text, -(2**bits), 2**bits - 1)
            if self.at_least is not None and value < self.at_least:
                raise ConfigError(self.name, text, f"must be at least {self.at_least}")
            if self.at_most is not None and value > self.at_most:
                raise ConfigError(self.name, text, f"must be at most {self.at_most}")
            return value
        if t == "boolean":
            v = text.strip().lower()
            if v not in ("true", "false"):
                raise ConfigError(self.name, text, "not a boolean (true or false)")
            return v == "true"
        if t == "list":
            items = tuple(p.strip() for p in text.split(",") if p.strip())
            if self.choices:
                # A real broker's file may name mechanisms kcoord lacks (GSSAPI): `resolve` warns about them,
                # and `check_consistency` refuses an empty result only if SASL is on.
                return tuple(i for i in items if i in self.choices)
            return items
        if t == "listeners":
            return _parse_listeners(self.name, text)
        if self.choices:
            # Kafka's CaseInsensitiveValidString: any case is accepted, and means the lower-case value.
            value = text.strip().lower()
            if value not in self.choices:
                raise ConfigError(self.name, text, f"must be one of {', '.join(self.choices)}")
            return value
        return text.strip()

    def value(self, cfg) -> Any:
        if self.get is not None:
            return self.get(cfg)
        if self.field is not None:
            return getattr(cfg, self.field)
        return self.parse(self.default) if self.default is not None else None

    def to_string(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (tuple, list)):
            return ",".join(str(v) for v in value)
        return str(value)


def _protocol(cfg) -> str:
    if cfg.sasl_users_file:
        return "SASL_SSL" if cfg.tls_cert_file else "SASL_PLAINTEXT"
    return "SSL" if cfg.tls_cert_file else "PLAINTEXT"


def _get_listeners(cfg) -> str:
    return str(Listener(_protocol(cfg), cfg.listen_host, cfg.listen_port))


def _get_advertised(cfg) -> str | None:
    if cfg.advertised_host is None and cfg.advertised_port is None:
        return None  # Kafka reports null and advertises `listeners`
    host, port = cfg.advertised
    return str(Listener(_protocol(cfg), host, port))


def _controller_names(resolved) -> set[str]:
    raw = resolved.raw.get("controller.listener.names", "")
    return {n.strip().upper() for n in raw.split(",") if n.strip()}


def _set_listeners(cfg, listeners, resolved) -> None:
    controller = _controller_names(resolved)
    # A KRaft combined node lists its controller listener too; clients belong on the other one.
    usable = [lst for lst in listeners if lst.name not in controller]
    if not usable:
        raise ConfigError("listeners", resolved.raw.get("listeners", ""),
                          "every listener is a controller listener (controller.listener.names)")
    chosen = usable[0]
    if len(usable) > 1:
        log.warning("kcoord serves one listener: using %s, ignoring %s", chosen,
                    ", ".join(str(lst) for lst in usable[1:]))
    cfg.listen_host, cfg.listen_port = chosen.host, chosen.port
    resolved.listener_name = chosen.name


def _set_advertised(cfg, listeners, resolved) -> None:
    controller = _controller_names(resolved)
    usable = [lst for lst in listeners if lst.name not in controller]
    name = resolved.listener_name
    match = [lst for lst in usable if lst.name == name] or usable[:1]
    if match:
        cfg.advertised_host, cfg.advertised_port = match[0].host, match[0].port


_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

TABLE: tuple[BrokerConfig, ...] = (
    # Classic group coordinator (GroupCoordinatorConfig).
    BrokerConfig("group.initial.rebalance.delay.ms", "int", "3000",
                 "How long the coordinator waits for more members to join a new (empty) group before "
                 "the first rebalance completes.",
                 field="initial_rebalance_delay_ms", flag="--initial-rebalance-delay-ms",
                 # Kafka's ConfigDef has no range here; a negative wait means nothing, so kcoord refuses it.
                 at_least=0),
    BrokerConfig("group.min.session.timeout.ms", "int", "6000",
                 "The smallest session timeout a member may ask for; smaller ones get INVALID_SESSION_TIMEOUT.",
                 field="group_min_session_timeout_ms", flag="--group-min-session-timeout-ms"),
    BrokerConfig("group.max.session.timeout.ms", "int", "1800000",
                 "The largest session timeout a member may ask for; larger ones get INVALID_SESSION_TIMEOUT.",
                 field="group_max_session_timeout_ms", flag="--group-max-session-timeout-ms"),
    BrokerConfig("group.max.size", "int", str(INT_MAX),
                 "The most members a classic group accepts; further joiners get GROUP_MAX_SIZE_REACHED.",
                 field="group_max_size", flag="--group-max-size", at_least=1),
    # Consumer group protocol, KIP-848 (GroupCoordinatorConfig's group.consumer.*).
    BrokerConfig("group.consumer.session.timeout.ms", "int", "45000",
                 "A consumer-protocol member whose heartbeats stop for this long is fenced from its group.",
                 field="group_consumer_session_timeout_ms", at_least=1),
    BrokerConfig("group.consumer.min.session.timeout.ms", "int", "45000",
                 "The smallest group.consumer.session.timeout.ms allowed (also per group in Kafka).",
                 field="group_consumer_min_session_timeout_ms", at_least=1),
    BrokerConfig("group.consumer.max.session.timeout.ms", "int", "60000",
                 "The largest group.consumer.session.timeout.ms allowed (also per group in Kafka).",
                 field="group_consumer_max_session_timeout_ms", at_least=1),
    BrokerConfig("group.consumer.heartbeat.interval.ms", "int", "5000",
                 "The heartbeat interval ConsumerGroupHeartbeat answers tell members.",
                 field="group_consumer_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.consumer.min.heartbeat.interval.ms", "int", "5000",
                 "The smallest group.consumer.heartbeat.interval.ms allowed.",
                 field="group_consumer_min_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.consumer.max.heartbeat.interval.ms", "int", "15000",
                 "The largest group.consumer.heartbeat.interval.ms allowed.",
                 field="group_consumer_max_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.consumer.max.size", "int", str(INT_MAX),
                 "The most members a consumer group accepts; further joiners get GROUP_MAX_SIZE_REACHED.",
                 field="group_consumer_max_size", at_least=1),
    BrokerConfig("group.consumer.assignors", "list", "uniform,range",
                 "The server assignors members may name; the first is used when a member names none.",
                 field="group_consumer_assignors"),
    BrokerConfig("group.consumer.assignment.interval.ms", "int", "1000",
                 "The least time between two target assignment computations of a consumer group: a heartbeat "
                 "that finds the group epoch ahead within it leaves the group Assigning (0: at once).",
                 field="group_consumer_assignment_interval_ms", at_least=0),
    BrokerConfig("group.consumer.regex.refresh.interval.ms", "int", "600000",
                 "How often a consumer group's subscribed regular expressions are resolved again against the "
                 "topics (at a heartbeat, and no sooner than 10 s after the last resolution).",
                 field="group_consumer_regex_refresh_interval_ms", at_least=10000),
    BrokerConfig("group.consumer.migration.policy", "string", "bidirectional",
                 "Whether a non-empty classic group of consumers may become a consumer group when a "
                 "consumer-protocol member joins (upgrade), and go back when the last one leaves (downgrade): "
                 "bidirectional, upgrade, downgrade or disabled (no classic member may join a consumer group).",
                 field="group_consumer_migration_policy",
                 choices=("bidirectional", "upgrade", "downgrade", "disabled")),
    # Streams groups, KIP-1071 (GroupCoordinatorConfig's group.streams.*).
    BrokerConfig("group.streams.session.timeout.ms", "int", "45000",
                 "A streams group member whose heartbeats stop for this long is fenced from its group.",
                 field="group_streams_session_timeout_ms", at_least=1),
    BrokerConfig("group.streams.min.session.timeout.ms", "int", "45000",
                 "The smallest group.streams.session.timeout.ms allowed (also per group in Kafka).",
                 field="group_streams_min_session_timeout_ms", at_least=1),
    BrokerConfig("group.streams.max.session.timeout.ms", "int", "60000",
                 "The largest group.streams.session.timeout.ms allowed (also per group in Kafka).",
                 field="group_streams_max_session_timeout_ms", at_least=1),
    BrokerConfig("group.streams.heartbeat.interval.ms", "int", "5000",
                 "The heartbeat interval StreamsGroupHeartbeat answers tell members.",
                 field="group_streams_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.streams.min.heartbeat.interval.ms", "int", "5000",
                 "The smallest group.streams.heartbeat.interval.ms allowed.",
                 field="group_streams_min_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.streams.max.heartbeat.interval.ms", "int", "15000",
                 "The largest group.streams.heartbeat.interval.ms allowed.",
                 field="group_streams_max_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.streams.max.size", "int", str(INT_MAX),
                 "The most members a streams group accepts; further joiners get GROUP_MAX_SIZE_REACHED.",
                 field="group_streams_max_size", at_least=1),
    BrokerConfig("group.streams.num.standby.replicas", "int", "0",
                 "How many standby replicas of each stateful task a streams group's assignment places.",
                 field="group_streams_num_standby_replicas", at_least=0),
    BrokerConfig("group.streams.max.standby.replicas", "int", "2",
                 "The largest group.streams.num.standby.replicas allowed (also per group in Kafka).",
                 field="group_streams_max_standby_replicas", at_least=0),
    BrokerConfig("group.streams.initial.rebalance.delay.ms", "int", "3000",
                 "How long a new (empty) streams group waits for more members before its first assignment.",
                 field="group_streams_initial_rebalance_delay_ms", at_least=0),
    BrokerConfig("group.streams.assignment.interval.ms", "int", "1000",
                 "The least time between two target assignment computations of a streams group (0: at once).",
                 field="group_streams_assignment_interval_ms", at_least=0),
    BrokerConfig("group.streams.min.assignment.interval.ms", "int", "0",
                 "The smallest group.streams.assignment.interval.ms allowed.",
                 field="group_streams_min_assignment_interval_ms", at_least=0),
    BrokerConfig("group.streams.max.assignment.interval.ms", "int", "15000",
                 "The largest group.streams.assignment.interval.ms allowed.",
                 field="group_streams_max_assignment_interval_ms", at_least=0),
    # Share groups, KIP-932 (GroupCoordinatorConfig's and ShareGroupConfig's group.share.*).
    BrokerConfig("group.share.session.timeout.ms", "int", "45000",
                 "A share group member whose heartbeats stop for this long is fenced from its group.",
                 field="group_share_session_timeout_ms", at_least=1),
    BrokerConfig("group.share.min.session.timeout.ms", "int", "45000",
                 "The smallest share.session.timeout.ms a share group may set.",
                 field="group_share_min_session_timeout_ms", at_least=1),
    BrokerConfig("group.share.max.session.timeout.ms", "int", "60000",
                 "The largest share.session.timeout.ms a share group may set.",
                 field="group_share_max_session_timeout_ms", at_least=1),
    BrokerConfig("group.share.heartbeat.interval.ms", "int", "5000",
                 "The heartbeat interval ShareGroupHeartbeat answers tell members.",
                 field="group_share_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.share.min.heartbeat.interval.ms", "int", "5000",
                 "The smallest share.heartbeat.interval.ms a share group may set.",
                 field="group_share_min_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.share.max.heartbeat.interval.ms", "int", "15000",
                 "The largest share.heartbeat.interval.ms a share group may set.",
                 field="group_share_max_heartbeat_interval_ms", at_least=1),
    BrokerConfig("group.share.max.size", "int", "200",
                 "The most members a share group accepts; further joiners get GROUP_MAX_SIZE_REACHED.",
                 field="group_share_max_size", at_least=1, at_most=1000),
    BrokerConfig("group.share.assignors", "list", "simple",
                 "The share groups' server assignor: exactly one, and kcoord serves only simple.",
                 field="group_share_assignors", choices=("simple",)),
    BrokerConfig("group.share.assignment.interval.ms", "int", "1000",
                 "The least time between two target assignment computations of a share group (0: at once).",
                 field="group_share_assignment_interval_ms", at_least=0),
    BrokerConfig("group.share.min.assignment.interval.ms", "int", "0",
                 "The smallest share.assignment.interval.ms a share group may set.",
                 field="group_share_min_assignment_interval_ms", at_least=0),
    BrokerConfig("group.share.max.assignment.interval.ms", "int", "15000",
                 "The largest share.assignment.interval.ms a share group may set.",
                 field="group_share_max_assignment_interval_ms", at_least=0),
    BrokerConfig("group.share.record.lock.duration.ms", "int", "30000",
                 "How long a share group member holds the records it acquired before they become available to others again.",
                 field="group_share_record_lock_duration_ms", at_least=1000, at_most=3600000),
    BrokerConfig("group.share.min.record.lock.duration.ms", "int", "15000",
                 "The smallest share.record.lock.duration.ms a share group may set.",
                 field="group_share_min_record_lock_duration_ms", at_least=1000, at_most=30000),
    BrokerConfig("group.share.max.record.lock.duration.ms", "int", "60000",
                 "The largest share.record.lock.duration.ms a share group may set.",
                 field="group_share_max_record_lock_duration_ms", at_least=30000, at_most=3600000),
    BrokerConfig("group.share.delivery.count.limit", "int", "5",
                 "How many times a record of a share group is delivered before it is archived (not delivered again).",
                 field="group_share_delivery_count_limit", at_least=2, at_most=10),
    BrokerConfig("group.share.min.delivery.count.limit", "int", "2",
                 "The smallest share.delivery.count.limit a share group may set.",
                 field="group_share_min_delivery_count_limit", at_least=2, at_most=5),
    BrokerConfig("group.share.max.delivery.count.limit", "int", "10",
                 "The largest share.delivery.count.limit a share group may set.",
                 field="group_share_max_delivery_count_limit", at_least=5, at_most=25),
    BrokerConfig("group.share.partition.max.record.locks", "int", "2000",
                 "The most records of one share partition acquired at a time.",
                 field="group_share_partition_max_record_locks", at_least=100, at_most=10000),
    BrokerConfig("group.share.min.partition.max.record.locks", "int", "100",
                 "The smallest share.partition.max.record.locks a share group may set.",
                 field="group_share_min_partition_max_record_locks", at_least=100, at_most=2000),
    BrokerConfig("group.share.max.partition.max.record.locks", "int", "4000",
                 "The largest share.partition.max.record.locks a share group may set.",
                 field="group_share_max_partition_max_record_locks", at_least=2000, at_most=10000),
    BrokerConfig("group.share.max.share.sessions", "int", "2000",
                 "The most share sessions a broker keeps.",
                 field="group_share_max_share_sessions", at_least=1),
    # Offsets (GroupCoordinatorConfig).
    BrokerConfig("offsets.retention.minutes", "int", "10080",
                 "Committed offsets of a group are dropped this long after it became empty (or, for "
                 "standalone consumers, after the last commit).",
                 field="offsets_retention_minutes", flag="--offsets-retention-minutes", at_least=1),
    BrokerConfig("offsets.retention.check.interval.ms", "long", "600000",
                 "How often expired offsets are looked for.",
                 field="offsets_retention_check_interval_ms", flag="--offsets-retention-check-interval-ms",
                 at_least=1),
    BrokerConfig("offset.metadata.max.bytes", "int", "4096",
                 "The largest metadata string an offset commit may carry (OFFSET_METADATA_TOO_LARGE above).",
                 field="offset_metadata_max_bytes", flag="--offset-metadata-max-bytes"),
    BrokerConfig("offsets.topic.num.partitions", "int", "50",
                 "Partitions of __consumer_offsets: the group-to-coordinator hash (FindCoordinator) uses it.",
                 field="offsets_topic_partitions", flag="--offsets-topic-num-partitions", at_least=1),
    # Topics (ServerLogConfigs).
    BrokerConfig("num.partitions", "int", "1", "Partitions of a topic created without a count.",
                 field="default_partitions", flag="--default-partitions", at_least=1),
    BrokerConfig("auto.create.topics.enable", "boolean", "true",
                 "Create a topic when a client asks Metadata for an unknown one.",
                 field="auto_create_topics", flag="--auto-create-topics"),
    # Socket server (SocketServerConfigs).
    BrokerConfig("listeners", "listeners", "PLAINTEXT://:9092",
                 "Where the broker accepts clients. kcoord serves one listener: the first that is not in "
                 "controller.listener.names. The flag alias also takes plain HOST:PORT.",
                 flag="--listen", dynamic=True, get=_get_listeners, set=_set_listeners,
                 kcoord_default="PLAINTEXT://127.0.0.1:9092",
                 kcoord_default_reason="an emulator listens on loopback unless told otherwise"),
    BrokerConfig("advertised.listeners", "listeners", None,
                 "What clients are told to connect to (Metadata, FindCoordinator); null: the listener. "
                 "The flag alias also takes plain HOST:PORT.",
                 flag="--advertised", dynamic=True, get=_get_advertised, set=_set_advertised),
    BrokerConfig("socket.request.max.bytes", "int", str(100 * 1024 * 1024),
                 "The largest request frame; a larger one closes its connection.",
                 field="max_frame_bytes", flag="--socket-request-max-bytes", at_least=1),
    BrokerConfig("max.connections", "int", str(INT_MAX),
                 "The most client connections at once; one over it is closed on accept.",
                 field="max_connections", flag="--max-connections", at_least=0, dynamic=True),
    BrokerConfig("max.connections.per.ip", "int", str(INT_MAX),
                 "The most client connections from one address at once.",
                 field="max_connections_per_ip", flag="--max-connections-per-ip", at_least=0, dynamic=True),
    BrokerConfig("connections.max.idle.ms", "long", "600000",
                 "A connection silent this long is closed; negative: never.",
                 field="connections_max_idle_ms", flag="--connections-max-idle-ms"),
    # Security (BrokerSecurityConfigs). SASL itself is turned on by --sasl-users.
    BrokerConfig("sasl.enabled.mechanisms", "list", "GSSAPI",
                 "SASL mechanisms offered when SASL is on (--sasl-users).",
                 field="sasl_mechanisms", flag="--sasl-mechanisms", dynamic=True, choices=_SASL_MECHANISMS,
                 kcoord_default=",".join(_SASL_MECHANISMS),
                 kcoord_default_reason="kcoord has no Kerberos (GSSAPI); it offers the mechanisms it has"),
    # Identity (KRaftConfigs, ServerConfigs).
    BrokerConfig("node.id", "int", "-1", "This node's id (also reported as broker.id).",
                 field="node_id", flag="--node-id", at_least=0,
                 kcoord_default="0", kcoord_default_reason="a KRaft node must have an id; kcoord's is 0"),
    BrokerConfig("broker.id", "int", "-1", "The broker id; kcoord keeps it equal to node.id.",
                 field="node_id", at_least=0,
                 kcoord_default="0", kcoord_default_reason="a KRaft node must have an id; kcoord's is 0"),
    BrokerConfig("broker.rack", "string", None, "The rack reported in Metadata and DescribeCluster.",
                 field="rack", flag="--rack"),
    # Reported only: what a single-node kcoord is, whatever a file says (setting them warns).
    BrokerConfig("message.max.bytes", "int", "1048588",
                 "The largest record batch; reported for admin tools, not enforced by kcoord.", dynamic=True),
    BrokerConfig("default.replication.factor", "int", "1",
                 "Replicas of a topic created without a replication factor (auto-created ones too).",
                 field="default_replication_factor", at_least=1),
    BrokerConfig("min.insync.replicas", "int", "1", "Minimum in-sync replicas: an acks=all write to a partition with fewer in-sync replicas "
                 "gets NOT_ENOUGH_REPLICAS (a topic's own value first).",
                 dynamic=True),
    BrokerConfig("offsets.topic.replication.factor", "short", "3",
                 "Replicas of __consumer_offsets, at most one per broker (kcoord creates it with fewer "
                 "when it has fewer brokers, where Kafka waits for enough of them).",
                 field="offsets_topic_replication_factor", at_least=1),
    # The controller's view of brokers and leaders (kcoord.cluster).
    BrokerConfig("broker.session.timeout.ms", "int", "9000",
                 "How long the controller waits for a broker that stopped heartbeating (killed) before "
                 "its partitions are led elsewhere.",
                 field="broker_session_timeout_ms", at_least=0),
    BrokerConfig("auto.leader.rebalance.enable", "boolean", "true",
                 "Give leadership back to preferred replicas when too many partitions are led elsewhere.",
                 field="auto_leader_rebalance_enable"),
    BrokerConfig("leader.imbalance.check.interval.seconds", "long", "300",
                 "How often the preferred-leader balance is checked.",
                 field="leader_imbalance_check_interval_seconds", at_least=1),
    BrokerConfig("leader.imbalance.per.broker.percentage", "int", "10",
                 "Reported only: a KRaft controller, Kafka's as kcoord's, elects every partition's preferred "
                 "leader back at each check, whatever the share."),
    # Reassignments (kcoord.cluster.reassignment): per broker, dynamic only, as in Kafka.
    BrokerConfig("leader.replication.throttled.rate", "long", str(2**63 - 1),
                 "The bytes per second at most that a broker leading a partition sends to the replicas listed in "
                 "its topic's leader.replication.throttled.replicas while they copy it.", at_least=0, dynamic=True),
    BrokerConfig("follower.replication.throttled.rate", "long", str(2**63 - 1),
                 "The bytes per second at most that a broker copies into its replicas listed in their topic's "
                 "follower.replication.throttled.replicas.", at_least=0, dynamic=True),
    # The transaction coordinator (kcoord.transaction).
    BrokerConfig("transaction.state.log.replication.factor", "short", "3",
                 "Replicas of __transaction_state, at most one per broker (as __consumer_offsets).",
                 field="transaction_state_log_replication_factor", at_least=1),
    BrokerConfig("transaction.state.log.num.partitions", "int", "50",
                 "Partitions of __transaction_state: the transactional-id-to-coordinator hash uses it.",
                 field="transaction_state_log_partitions", at_least=1),
    BrokerConfig("transaction.state.log.min.isr", "int", "2",
                 "min.insync.replicas of __transaction_state (at most its replicas).",
                 field="transaction_state_log_min_isr", at_least=1),
    # Share-partitions and the share coordinator (kcoord.share).
    BrokerConfig("group.share.record.lock.duration.ms", "int", "30000",
                 "How long a record delivered to a share group's member stays locked to it.",
                 field="group_share_record_lock_duration_ms", at_least=1000, at_most=3600000),
    BrokerConfig("group.share.delivery.count.limit", "int", "5",
                 "Deliveries of a record to a share group before it is archived.",
                 field="group_share_delivery_count_limit", at_least=2, at_most=10),
    BrokerConfig("group.share.partition.max.record.locks", "int", "2000",
                 "Records of one share-partition in flight (acquired or waiting below them) at most.",
                 field="group_share_partition_max_record_locks", at_least=100, at_most=10000),
    BrokerConfig("group.share.max.share.sessions", "int", "2000",
                 "Share sessions one broker keeps at most (SHARE_SESSION_LIMIT_REACHED beyond).",
                 field="group_share_max_share_sessions", at_least=1),
    BrokerConfig("share.coordinator.state.topic.num.partitions", "int", "50",
                 "Partitions of __share_group_state: the share-partition-to-coordinator hash uses it.",
                 field="share_coordinator_state_topic_partitions", at_least=1),
    BrokerConfig("share.coordinator.state.topic.replication.factor", "short", "3",
                 "Replicas of __share_group_state, at most one per broker (as __consumer_offsets).",
                 field="share_coordinator_state_topic_replication_factor", at_least=1),
    BrokerConfig("share.coordinator.state.topic.min.isr", "short", "2",
                 "min.insync.replicas of __share_group_state (at most its replicas).",
                 field="share_coordinator_state_topic_min_isr", at_least=1),
    BrokerConfig("share.coordinator.snapshot.update.records.per.snapshot", "int", "500",
                 "ShareUpdate records a share-partition's state gets between two ShareSnapshots.",
                 field="share_coordinator_snapshot_update_records_per_snapshot", at_least=0, at_most=500),
    BrokerConfig("transaction.max.timeout.ms", "int", "900000",
                 "The longest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT beyond).",
                 field="transaction_max_timeout_ms", at_least=1),
    BrokerConfig("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", "10000",
                 "How often the coordinator aborts transactions older than their timeout.",
                 field="transaction_abort_interval_ms", at_least=1),
    BrokerConfig("transactional.id.expiration.ms", "int", "604800000",
                 "How long a transactional id with no transaction going is kept before it is forgotten.",
                 field="transactional_id_expiration_ms", at_least=1),
    BrokerConfig("transaction.remove.expired.transaction.cleanup.interval.ms", "int", "3600000",
                 "How often expired transactional ids are removed.",
                 field="transaction_remove_expired_interval_ms", at_least=1),
)

BY_NAME: dict[str, BrokerConfig] = {c.name: c for c in TABLE}
BY_FLAG: dict[str, BrokerConfig] = {c.flag: c for c in TABLE if c.flag}


def default(name: str) -> Any:
    """kcoord's default for the Kafka config `name`, typed: what ServerConfig and the
    coordinator's settings start from, so the table is the one place a default is written."""
    entry = BY_NAME[name]
    return entry.parse(entry.default)
# Kafka names whose content kcoord deliberately does not use, with why (instead of the generic warning).
IGNORED_BECAUSE = {
    "log.dirs": "Kafka's log directory format is not kcoord's; use --data-dir",
    "log.dir": "Kafka's log directory format is not kcoord's; use --data-dir",
    "controller.listener.names": "kcoord has no controller; it only tells which listener is not for clients",
}


def flag_type(flag: str) -> Callable[[str], str]:
    """An argparse `type=` that validates a flag as its Kafka name is validated and keeps the text,
    so that flags, --config and the file all go through `resolve` alike."""
    entry = BY_FLAG[flag]

    def convert(text: str) -> str:
        import argparse

        try:
            entry.parse(text)
        except ConfigError as err:
            raise argparse.ArgumentTypeError(f"invalid value {text!r} for {entry.name}: {err.reason}") from None
        return text
    convert.__name__ = entry.name  # argparse names the type in some messages
    return convert


@dataclass
class Resolved:
    values: dict = field(default_factory=dict)    # name -> typed value, for the names kcoord uses
    raw: dict = field(default_factory=dict)       # name -> text, every key given (last layer wins)
    warnings: list = field(default_factory=list)  # one line each, logged at start-up
    listener_name: str | None = None


def resolve(*layers: dict) -> Resolved:
    """Merge layers of `name -> text` (later layers win) and validate them. Raises ConfigError."""
    out = Resolved()
    for layer in layers:
        out.raw.update(layer)
    for name, text in out.raw.items():
        entry = BY_NAME.get(name)
        if entry is None or not entry.settable:
            out.warnings.append(f"ignoring config {name} ({IGNORED_BECAUSE.get(name, 'not modelled by kcoord')})")
            continue
        out.values[name] = entry.parse(text)
        if entry.choices and entry.type == "list":
            dropped = [i.strip() for i in text.split(",") if i.strip() and i.strip() not in entry.choices]
            if dropped:
                out.warnings.append(f"ignoring {', '.join(dropped)} in {name} (not supported by kcoord)")
    node, broker = out.values.get("node.id"), out.values.get("broker.id")
    if node is not None and broker is not None and node != broker:
        # Kafka refuses this too: both name the same node.
        raise ConfigError("broker.id", out.raw["broker.id"], f"must equal node.id ({node})")
    return out


def apply(cfg, resolved: Resolved) -> None:
    """Set `cfg`'s fields from `resolved`; remember the names given, which DescribeConfigs reports as static."""
    for name in sorted(resolved.values, key=lambda n: n == "advertised.listeners"):  # it needs the listener
        entry, value = BY_NAME[name], resolved.values[name]
        if entry.set is not None:
            entry.set(cfg, value, resolved)
        else:
            setattr(cfg, entry.field, value)
        cfg.static_broker_configs[name] = resolved.raw[name]


def log_warnings(resolved: Resolved) -> None:
    for line in resolved.warnings:
        log.warning("%s", line)


def check_consistency(cfg) -> None:
    """What only the whole configuration can refuse. Raises ConfigError."""
    if cfg.sasl_users_file and not cfg.sasl_mechanisms:
        raise ConfigError("sasl.enabled.mechanisms", cfg.static_broker_configs.get("sasl.enabled.mechanisms", ""),
                          f"SASL is on (--sasl-users) but none of these is supported "
                          f"(kcoord supports {', '.join(_SASL_MECHANISMS)})")
    # As Kafka's GroupCoordinatorConfig requires of the group.consumer.* values.
    c = cfg
    for low, high, name, value in (
            (c.group_consumer_min_heartbeat_interval_ms, c.group_consumer_max_heartbeat_interval_ms,
             "group.consumer.heartbeat.interval.ms", c.group_consumer_heartbeat_interval_ms),
            (c.group_consumer_min_session_timeout_ms, c.group_consumer_max_session_timeout_ms,
             "group.consumer.session.timeout.ms", c.group_consumer_session_timeout_ms)):
        if not low <= value <= high:
            raise ConfigError(name, str(value), f"must be between its min ({low}) and max ({high})")
    if c.group_consumer_heartbeat_interval_ms >= c.group_consumer_session_timeout_ms:
        raise ConfigError("group.consumer.heartbeat.interval.ms", str(c.group_consumer_heartbeat_interval_ms),
                          "must be less than group.consumer.session.timeout.ms")
    if not c.group_consumer_assignors:
        raise ConfigError("group.consumer.assignors", "", "must name at least one assignor")
    _check_modern_group_configs(c, "streams")
    _check_modern_group_configs(c, "share")


def _check_modern_group_configs(c, kind: str) -> None:
    """GroupCoordinatorConfig's requirements of the group.streams.* or group.share.* values, in
    its order and words."""
    def require(ok: bool, name: str, value, reason: str) -> None:
        if not ok:
            raise ConfigError(name, str(value), reason)

    def get(suffix: str) -> int:
        return getattr(c, f"group_{kind}_{suffix}")
    p = f"group.{kind}."
    hb, session = get("heartbeat_interval_ms"), get("session_timeout_ms")
    interval = get("assignment_interval_ms")
    require(get("max_heartbeat_interval_ms") >= get("min_heartbeat_interval_ms"),
            p + "max.heartbeat.interval.ms", get("max_heartbeat_interval_ms"),
            f"must be greater than or equal to {p}min.heartbeat.interval.ms")
    require(hb >= get("min_heartbeat_interval_ms"), p + "heartbeat.interval.ms", hb,
            f"must be greater than or equal to {p}min.heartbeat.interval.ms")
    require(hb <= get("max_heartbeat_interval_ms"), p + "heartbeat.interval.ms", hb,
            f"must be less than or equal to {p}max.heartbeat.interval.ms")
    require(get("max_session_timeout_ms") >= get("min_session_timeout_ms"),
            p + "max.session.timeout.ms", get("max_session_timeout_ms"),
            f"must be greater than or equal to {p}min.session.timeout.ms")
    require(session >= get("min_session_timeout_ms"), p + "session.timeout.ms", session,
            f"must be greater than or equal to {p}min.session.timeout.ms")
    require(session <= get("max_session_timeout_ms"), p + "session.timeout.ms", session,
            f"must be less than or equal to {p}max.session.timeout.ms")
    require(hb < session, p + "heartbeat.interval.ms", hb, f"must be less than {p}session.timeout.ms")
    if kind == "share":
        assignors = c.group_share_assignors
        require(len(assignors) == 1, p + "assignors", ",".join(assignors),
                f"must contain exactly one assignor, but found {len(assignors)}")
    require(get("max_assignment_interval_ms") >= get("min_assignment_interval_ms"),
            p + "max.assignment.interval.ms", get("max_assignment_interval_ms"),
            f"must be greater than or equal to {p}min.assignment.interval.ms")
    require(interval >= get("min_assignment_interval_ms"), p + "assignment.interval.ms", interval,
            f"must be greater than or equal to {p}min.assignment.interval.ms")
    require(interval <= get("max_assignment_interval_ms"), p + "assignment.interval.ms", interval,
            f"must be less than or equal to {p}max.assignment.interval.ms")
    if kind == "streams":
        require(c.group_streams_num_standby_replicas <= c.group_streams_max_standby_replicas,
                p + "num.standby.replicas", c.group_streams_num_standby_replicas,
                f"must be less than or equal to {p}max.standby.replicas")
    if kind == "share":
        # ShareGroupConfig's own requirements.
        for high, low in (("max_delivery_count_limit", "delivery_count_limit"),
                          ("delivery_count_limit", "min_delivery_count_limit"),
                          ("max_partition_max_record_locks", "partition_max_record_locks"),
                          ("partition_max_record_locks", "min_partition_max_record_locks"),
                          ("record_lock_duration_ms", "min_record_lock_duration_ms"),
                          ("max_record_lock_duration_ms", "record_lock_duration_ms"),
                          ("max_share_sessions", "max_size")):
            require(get(high) >= get(low), p + high.replace("_", "."), get(high),
                    f"must be greater than or equal to {p}{low.replace('_', '.')}")


# --- DescribeConfigs -------------------------------------------------------------------------

def describe(cfg, keys=None, include_synonyms: bool = False, include_documentation: bool = False,
             dynamic=None, node_id: int | None = None) -> list[dict]:
    """DescribeConfigs entries for this broker, built as Kafka's ConfigHelper builds them: the source is
    the first synonym (dynamic value, dynamic default, static file value, else default), read_only is
    "not dynamically alterable". `dynamic`: kcoord.dynamic_broker_config.DynamicBrokerConfigs; `node_id`: the
    broker described (None: the ServerConfig's)."""
    node = cfg.node_id if node_id is None else node_id
    unknown = dynamic.unknown(dynamic.node_layer(node)) if dynamic is not None else []
    names = [c.name for c in TABLE] + unknown if keys is None else [k for k in keys if k in BY_NAME or k in unknown]
    entries = []
    for name in names:
        entry = BY_NAME.get(name)
        if entry is None:  # a name Kafka does not know, set dynamically: its value is not shown
            synonyms = [{"name": name, "value": None, "source": s["source"]} for s in dynamic.synonyms(name, node)]
            entries.append({"name": name, "value": None, "read_only": True, "config_source": synonyms[0]["source"],
                            "is_default": False, "is_sensitive": False,
                            "synonyms": synonyms if include_synonyms else [], "config_type": CONFIG_TYPE_CODES["string"],
                            "documentation": None})
            continue
        synonyms = synonyms_of(cfg, entry, dynamic, node)
        source = synonyms[0]["source"] if synonyms else DEFAULT_CONFIG
        value = synonyms[0]["value"] if synonyms else entry.to_string(entry.value(cfg))
        entries.append({
            "name": name, "value": value, "read_only": not entry.dynamic, "config_source": source,
            "is_default": source == DEFAULT_CONFIG, "is_sensitive": False,
            "synonyms": synonyms if include_synonyms else [],
            "config_type": entry.config_type,
            "documentation": entry.doc if include_documentation else None,
        })
    return entries


def synonyms_of(cfg, entry: BrokerConfig, dynamic=None, node_id: int | None = None) -> list[dict]:
    """Kafka's synonyms of broker config `entry`, first the one in force: its dynamic value, its
    dynamic default, its static value, its default (those it has)."""
    name = entry.name
    dynamic_synonyms = dynamic.synonyms(name, node_id) if dynamic is not None else []
    if dynamic is not None and name in dynamic.static:
        value = entry.to_string(dynamic.static[name])
    else:
        value = entry.to_string(entry.value(cfg))
    # A value set on ServerConfig in code (the pytest plugin) has no file behind it, yet is not the default.
    static = name in cfg.static_broker_configs or value != entry.default
    synonyms = dynamic_synonyms + ([{"name": name, "value": value, "source": STATIC_BROKER_CONFIG}] if static else [])
    if entry.default is not None:
        synonyms.append({"name": name, "value": entry.default, "source": DEFAULT_CONFIG})
    return synonyms


def describe_default(dynamic, keys=None, include_synonyms: bool = False, include_documentation: bool = False) -> list[dict]:
    """DescribeConfigs of the cluster-wide default resource "": only the dynamic defaults, as Kafka lists them."""
    layer = dynamic.default if dynamic is not None else {}
    names = [n for n in [c.name for c in TABLE] + dynamic.unknown(layer) if n in layer] if dynamic is not None else []
    if keys is not None:
        names = [n for n in names if n in keys]
    entries = []
    for name in names:
        entry = BY_NAME.get(name)
        value = layer[name] if entry is not None else None
        synonym = {"name": name, "value": value, "source": 3}
        entries.append({"name": name, "value": value, "read_only": entry is None or not entry.dynamic,
                        "config_source": 3, "is_default": False, "is_sensitive": False,
                        "synonyms": [synonym] if include_synonyms else [],
                        "config_type": entry.config_type if entry else CONFIG_TYPE_CODES["string"],
                        "documentation": entry.doc if entry is not None and include_documentation else None})
    return entries
