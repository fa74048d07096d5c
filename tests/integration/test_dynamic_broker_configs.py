"""Dynamic broker configs (AlterConfigs / IncrementalAlterConfigs on a BROKER resource), compared
with the reference Kafka 4.3.1: which of kcoord's modelled configs may change at run time, the
errors for the others, and how DescribeConfigs then reports them (sources and synonyms)."""
from __future__ import annotations

import time

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing.plugin import start_server
from wire.errors import ErrorCode

INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS, DESCRIBE_CONFIGS = 44, 33, 32
BROKER = 4
SET, DELETE, APPEND = 0, 1, 2
DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 2, 3, 5
BIG = "2147483647"


def _node(broker) -> str:
    return "1" if broker.kind == "kafka" else str(broker.config.node_id)


def _inc(conn, resource, ops, validate_only=False):
    a = conn.call(INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [{"resource_type": BROKER, "resource_name": resource,
                                                                 "configs": [{"name": n, "config_operation": op, "value": v}
                                                                             for n, op, v in ops]}],
                                                 "validate_only": validate_only})
    r = a.responses[0]
    return ErrorCode(r.error_code).name, r.error_message


def _describe(conn, resource, keys):
    a = conn.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": BROKER, "resource_name": resource,
                                                       "configuration_keys": keys}],
                                        "include_synonyms": True, "include_documentation": False})
    r = a.results[0]
    assert r.error_code == 0, r
    return {e.name: (e.value, e.read_only, e.config_source, [(s.value, s.source) for s in e.synonyms])
            for e in r.configs}


def _eventually(fn, expected, timeout=10.0):
    # Kafka's controller answers an alter before the broker's metadata image has it.
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


NOT_DYNAMIC = ["group.initial.rebalance.delay.ms", "group.min.session.timeout.ms", "group.max.session.timeout.ms",
               "group.max.size", "offsets.retention.minutes", "offsets.retention.check.interval.ms",
               "offset.metadata.max.bytes", "offsets.topic.num.partitions", "num.partitions",
               "auto.create.topics.enable", "advertised.listeners", "socket.request.max.bytes",
               "connections.max.idle.ms", "node.id", "broker.id", "broker.rack", "default.replication.factor",
               "offsets.topic.replication.factor", "transaction.state.log.replication.factor"]


def test_which_broker_configs_change_at_run_time_and_the_errors(broker_any):
    node = _node(broker_any)
    with Connection.to(broker_any.bootstrap) as conn:
        for name in NOT_DYNAMIC:
            for resource in (node, ""):
                assert _inc(conn, resource, [(name, SET, "1")], validate_only=True) == (
                    "INVALID_REQUEST", f"Cannot update these configs dynamically: [{name}]"), (name, resource)
        for name in ("max.connections", "max.connections.per.ip", "message.max.bytes",
                     "leader.replication.throttled.rate", "follower.replication.throttled.rate"):
            for resource in (node, ""):
                assert _inc(conn, resource, [(name, SET, "1048600")], validate_only=True) == ("NONE", None)
        assert _inc(conn, "", [("min.insync.replicas", SET, "1")], validate_only=True) == ("NONE", None)
        assert _inc(conn, node, [("min.insync.replicas", SET, "1")], validate_only=True) == (
            "INVALID_CONFIG", "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
        for name in ("listeners", "sasl.enabled.mechanisms"):
            assert _inc(conn, "", [(name, SET, "PLAIN")], validate_only=True) == (
                "INVALID_REQUEST", "Cannot update these configs at default cluster level, broker id must be "
                                   f"specified: [{name}]")
        assert _inc(conn, node, [("max.connections", SET, "-5")], validate_only=True) == (
            "INVALID_REQUEST", "Invalid value -5 for configuration max.connections: Value must be at least 0")
        assert _inc(conn, node, [("max.connections", SET, "abc")], validate_only=True) == (
            "INVALID_REQUEST", "Invalid value abc for configuration max.connections: Not a number of type INT")
        assert _inc(conn, node, [("max.connections", APPEND, "10")], validate_only=True) == (
            "INVALID_CONFIG", "Config value append is not allowed for config key: max.connections")
        assert _inc(conn, "7", [("max.connections", SET, "10")], validate_only=True) == (
            "INVALID_REQUEST", f"Unexpected broker id, expected {node}, but received 7")
        a = conn.call(ALTER_CONFIGS, 2, {"resources": [{"resource_type": BROKER, "resource_name": node, "configs": [
            {"name": "group.min.session.timeout.ms", "value": "10"}]}], "validate_only": True})
        assert (ErrorCode(a.responses[0].error_code).name, a.responses[0].error_message) == (
            "INVALID_REQUEST", "Cannot update these configs dynamically: [group.min.session.timeout.ms]")


def test_dynamic_values_are_described_with_kafkas_sources_and_synonyms(broker_any):
    node = _node(broker_any)
    keys = ["max.connections.per.ip", "message.max.bytes", "max.connections"]
    with Connection.to(broker_any.bootstrap) as conn:
        try:
            assert _inc(conn, node, [("max.connections.per.ip", SET, "1000"), ("message.max.bytes", SET, "1048600")]) \
                == ("NONE", None)
            assert _inc(conn, "", [("message.max.bytes", SET, "1048700"), ("max.connections", SET, "5000")]) \
                == ("NONE", None)
            expected = {
                "max.connections.per.ip": ("1000", False, DYNAMIC_BROKER, [("1000", DYNAMIC_BROKER), (BIG, DEFAULT)]),
                "message.max.bytes": ("1048600", False, DYNAMIC_BROKER, [
                    ("1048600", DYNAMIC_BROKER), ("1048700", DYNAMIC_DEFAULT), ("1048588", DEFAULT)]),
                "max.connections": ("5000", False, DYNAMIC_DEFAULT, [("5000", DYNAMIC_DEFAULT), (BIG, DEFAULT)]),
            }
            assert _eventually(lambda: _describe(conn, node, keys), expected) == expected
            assert _describe(conn, "", keys) == {
                "message.max.bytes": ("1048700", False, DYNAMIC_DEFAULT, [("1048700", DYNAMIC_DEFAULT)]),
                "max.connections": ("5000", False, DYNAMIC_DEFAULT, [("5000", DYNAMIC_DEFAULT)])}
            # AlterConfigs replaces the resource's dynamic configs as a whole.
            a = conn.call(ALTER_CONFIGS, 2, {"resources": [{"resource_type": BROKER, "resource_name": node, "configs": [
                {"name": "max.connections.per.ip", "value": "900"}]}], "validate_only": False})
            assert a.responses[0].error_code == 0
            expected["max.connections.per.ip"] = ("900", False, DYNAMIC_BROKER, [("900", DYNAMIC_BROKER), (BIG, DEFAULT)])
            expected["message.max.bytes"] = ("1048700", False, DYNAMIC_DEFAULT, [("1048700", DYNAMIC_DEFAULT),
                                                                                  ("1048588", DEFAULT)])
            assert _eventually(lambda: _describe(conn, node, keys), expected) == expected
        finally:  # the reference Kafka is shared by the session
            _inc(conn, node, [("max.connections.per.ip", DELETE, None), ("message.max.bytes", DELETE, None)])
            _inc(conn, "", [("message.max.bytes", DELETE, None), ("max.connections", DELETE, None)])
        expected = {"max.connections.per.ip": (BIG, False, DEFAULT, [(BIG, DEFAULT)]),
                    "message.max.bytes": ("1048588", False, DEFAULT, [("1048588", DEFAULT)]),
                    "max.connections": (BIG, False, DEFAULT, [(BIG, DEFAULT)])}
        assert _eventually(lambda: _describe(conn, node, keys), expected) == expected


def test_confluent_admin_client_alters_a_broker_config(broker_any):
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ConfigSource)

    node = _node(broker_any)
    admin = AdminClient({"bootstrap.servers": broker_any.bootstrap})
    resource = ConfigResource("BROKER", node, incremental_configs=[
        ConfigEntry("max.connections.per.ip", "800", incremental_operation=AlterConfigOpType.SET)])
    try:
        admin.incremental_alter_configs([resource])[resource].result(30)

        def described():
            r = ConfigResource("BROKER", node)
            entry = admin.describe_configs([r])[r].result(30)["max.connections.per.ip"]
            return entry.value, ConfigSource(entry.source).name, entry.is_read_only
        assert _eventually(described, ("800", "DYNAMIC_BROKER_CONFIG", False)) == ("800", "DYNAMIC_BROKER_CONFIG", False)
        bad = ConfigResource("BROKER", node, incremental_configs=[
            ConfigEntry("group.max.size", "5", incremental_operation=AlterConfigOpType.SET)])
        with pytest.raises(Exception) as err:
            admin.incremental_alter_configs([bad])[bad].result(30)
        assert "Cannot update these configs dynamically: [group.max.size]" in str(err.value)
    finally:
        undo = ConfigResource("BROKER", node, incremental_configs=[
            ConfigEntry("max.connections.per.ip", None, incremental_operation=AlterConfigOpType.DELETE)])
        admin.incremental_alter_configs([undo])[undo].result(30)


def _connections_kept(bootstrap: str, count: int) -> int:
    """How many of `count` connections opened at once the broker keeps (an ApiVersions answer each)."""
    kept, conns = 0, []
    try:
        for _ in range(count):
            try:
                conns.append(Connection.to(bootstrap, 3.0))
                kept += 1
            except Exception:
                pass
    finally:
        for c in conns:
            c.close()
    return kept


def test_a_dynamic_limit_takes_effect_and_survives_a_restart(tmp_path):
    thread = start_server(data_dir=str(tmp_path))
    try:
        assert _connections_kept(thread.bootstrap, 3) == 3
        with Connection.to(thread.bootstrap) as conn:
            assert _inc(conn, "", [("max.connections.per.ip", SET, "2")]) == ("NONE", None)
        assert _connections_kept(thread.bootstrap, 3) == 2
    finally:
        thread.stop()
    thread = start_server(data_dir=str(tmp_path))
    try:
        assert _connections_kept(thread.bootstrap, 3) == 2
        with Connection.to(thread.bootstrap) as conn:
            assert _describe(conn, "0", ["max.connections.per.ip"])["max.connections.per.ip"][:3] == (
                "2", False, DYNAMIC_DEFAULT)
            assert _inc(conn, "", [("max.connections.per.ip", DELETE, None)]) == ("NONE", None)
        assert _connections_kept(thread.bootstrap, 3) == 3
    finally:
        thread.stop()
