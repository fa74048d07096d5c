"""Dynamic broker configs: AlterConfigs and IncrementalAlterConfigs on a BROKER resource.

As Kafka's DynamicBrokerConfig: a config set on the resource named by a broker's node id (on
that broker's listener) is that broker's DYNAMIC_BROKER_CONFIG, one set on the resource "" (the cluster-wide default) a
DYNAMIC_DEFAULT_BROKER_CONFIG; the value in force is the first of dynamic, dynamic default,
static (--config, --config-file, flags) and default. Only the configs Kafka 4.3.1 lets a
running broker change are accepted (`DYNAMIC` below; the reference Kafka was asked), with
Kafka's error codes and messages; names Kafka does not know are kept as Kafka keeps them.

Changes are written to `broker-configs.json` in the data dir (when there is one) before
they take effect, and put back at start-up.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Callable

from kcoord import broker_config as bc

log = logging.getLogger("kcoord")

FILE_NAME = "broker-configs.json"
# Kafka's ConfigSource codes.
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 2, 3

# What kcoord models and Kafka 4.3.1 lets AlterConfigs change: the connection limits (applied to
# the listener at once), two configs kcoord only reports, and the replication throttles (per
# broker: kcoord.cluster.reassignment reads them for the broker a replica copies from or to).
DYNAMIC = frozenset({"max.connections", "max.connections.per.ip", "message.max.bytes", "min.insync.replicas",
                     "leader.replication.throttled.rate", "follower.replication.throttled.rate"})
# Kafka changes these per broker only (DynamicBrokerConfig.PerBrokerConfigs).
PER_BROKER_ONLY = frozenset({"listeners", "sasl.enabled.mechanisms"})
# Dynamic in Kafka, but kcoord does not rebind its listener or its SASL gate at run time.
NOT_AT_RUN_TIME = frozenset({"listeners", "sasl.enabled.mechanisms"})
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def write_durably(path: Path, data: dict) -> None:
    """`data` as the JSON file `path`, whole or not at all, on disk before this returns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class BrokerConfigChangeError(Exception):
    def __init__(self, code_name: str, message: str):
        super().__init__(message)
        self.code_name = code_name


class DynamicBrokerConfigs:
    """The two dynamic layers over a ServerConfig; `listeners` are told of each change."""

    def __init__(self, cfg, data_dir: str | None = None):
        self.cfg = cfg
        # node id (as the resource names it) -> name -> value, set on that broker's resource; the
        # ServerConfig takes the values of its own node id's (the process-wide settings).
        self.nodes: dict[str, dict[str, str]] = {}
        self.default: dict[str, str] = {}   # name -> value, set on the cluster default resource ""
        # What the configs were at start (static or default): what a deleted dynamic value falls back to.
        self.static = {e.name: e.value(cfg) for e in bc.TABLE if e.name in DYNAMIC and e.settable}
        self.path = Path(data_dir) / FILE_NAME if data_dir else None
        self.listeners: list[Callable[[object], None]] = []

    # --- persistence ---
    def load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        data = json.loads(self.path.read_text(encoding="utf-8"))
        # "node": the one broker's layer, as kcoord kept it before it served several brokers.
        self.nodes = {k: dict(v) for k, v in data.get("nodes", {str(self.cfg.node_id): data.get("node", {})}).items()}
        self.default = dict(data.get("default", {}))
        self._apply()

    def _save(self) -> None:
        if self.path is None:
            return
        write_durably(self.path, {"nodes": self.nodes, "default": self.default})

    @property
    def node(self) -> dict[str, str]:
        return self.node_layer(self.cfg.node_id)

    def node_layer(self, node_id) -> dict[str, str]:
        return self.nodes.get(str(node_id), {})

    def value(self, node_id: int, name: str) -> str | None:
        """The dynamic value of `name` in force on broker `node_id` (None: none set)."""
        return self.node_layer(node_id).get(name, self.default.get(name))

    # --- changes ---
    def layer(self, resource_name: str) -> dict[str, str]:
        return self.default if resource_name == "" else self.node_layer(resource_name)

    def check_resource(self, resource_name: str, node_id: int | None = None) -> None:
        """`node_id`: the broker whose listener got the request (None: the ServerConfig's)."""
        own = self.cfg.node_id if node_id is None else node_id
        if resource_name != "" and resource_name != str(own):
            raise BrokerConfigChangeError(
                "INVALID_REQUEST", f"Unexpected broker id, expected {own}, but received {resource_name}")

    def incremental(self, resource_name: str, ops: list[tuple[str, int, str | None]],
                    node_id: int | None = None) -> dict[str, str]:
        """The resource's dynamic configs after SET/DELETE/APPEND/SUBTRACT `ops`, checked as Kafka
        checks them; nothing changes until `replace`."""
        self.check_resource(resource_name, node_id)
        out = dict(self.layer(resource_name))
        for name, op, value in ops:
            entry = bc.BY_NAME.get(name)
            if op in (APPEND, SUBTRACT) and (entry is None or entry.type != "list"):
                raise BrokerConfigChangeError(
                    "INVALID_CONFIG", f"Config value {'append' if op == APPEND else 'subtract'} is not allowed "
                                      f"for config key: {name}")
            if op == DELETE:
                out.pop(name, None)
            elif op == SET:
                out[name] = value
            elif op in (APPEND, SUBTRACT):
                items = [i for i in out.get(name, "").split(",") if i]
                new = [i.strip() for i in (value or "").split(",") if i.strip()]
                items = items + [i for i in new if i not in items] if op == APPEND else [i for i in items if i not in new]
                out[name] = ",".join(items)
            else:
                raise BrokerConfigChangeError("INVALID_REQUEST", f"Unknown operation type {op}")
        self.validate(resource_name, out, [name for name, _, _ in ops])
        return out

    def validate(self, resource_name: str, configs: dict[str, str], names=None) -> None:
        """Kafka's order: configs it cannot change at all, per-broker ones at the default level,
        then each value."""
        names = list(configs) if names is None else names
        fixed = [n for n in names if n in bc.BY_NAME and n not in DYNAMIC and n not in PER_BROKER_ONLY]
        if fixed:
            raise BrokerConfigChangeError("INVALID_REQUEST",
                                          f"Cannot update these configs dynamically: [{', '.join(fixed)}]")
        if resource_name == "":
            per_broker = [n for n in names if n in PER_BROKER_ONLY]
            if per_broker:
                raise BrokerConfigChangeError(
                    "INVALID_REQUEST", "Cannot update these configs at default cluster level, broker id must be "
                                       f"specified: [{', '.join(per_broker)}]")
        elif "min.insync.replicas" in names:
            raise BrokerConfigChangeError("INVALID_CONFIG",
                                          "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
        not_here = [n for n in names if n in NOT_AT_RUN_TIME]
        if not_here:
            raise BrokerConfigChangeError("INVALID_REQUEST",
                                          f"kcoord does not change these configs at run time: [{', '.join(not_here)}] "
                                          "(set them at start: --config, --config-file)")
        for name in names:
            if name in configs and name in bc.BY_NAME:
                try:
                    bc.BY_NAME[name].parse(configs[name])
                except bc.ConfigError as err:
                    raise BrokerConfigChangeError(
                        "INVALID_REQUEST", f"Invalid value {configs[name]} for configuration {name}: "
                                           f"{_kafka_reason(bc.BY_NAME[name], err)}") from None

    def replace(self, resource_name: str, configs: dict[str, str]) -> None:
        """The resource's dynamic configs become `configs` (validated): persisted, then in force."""
        if resource_name == "":
            self.default = dict(configs)
        else:
            self.nodes[resource_name] = dict(configs)
        self._save()
        self._apply()

    def _apply(self) -> None:
        for name, static in self.static.items():
            entry = bc.BY_NAME[name]
            text = self.node.get(name, self.default.get(name))
            value = static if text is None else entry.parse(text)
            if entry.set is not None:
                continue  # not among DYNAMIC today
            setattr(self.cfg, entry.field, value)
        for listener in self.listeners:
            listener(self.cfg)

    # --- DescribeConfigs ---
    def synonyms(self, name: str, node_id: int | None = None) -> list[dict]:
        out = []
        node = self.node if node_id is None else self.node_layer(node_id)
        if name in node:
            out.append({"name": name, "value": node[name], "source": DYNAMIC_BROKER_CONFIG})
        if name in self.default:
            out.append({"name": name, "value": self.default[name], "source": DYNAMIC_DEFAULT_BROKER_CONFIG})
        return out

    def unknown(self, layer: dict[str, str]) -> list[str]:
        return sorted(n for n in layer if n not in bc.BY_NAME)


def _kafka_reason(entry, err: bc.ConfigError) -> str:
    if err.reason == "not an integer" or err.reason == "out of range for its type":
        return f"Not a number of type {entry.type.upper()}"
    if err.reason.startswith("must be at least"):
        return f"Value must be at least {entry.at_least}"
    if err.reason.startswith("must be at most"):
        return f"Value must be no more than {entry.at_most}"
    return err.reason
