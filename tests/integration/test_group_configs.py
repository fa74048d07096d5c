"""Per-group configs (GROUP config resources, type 32) on kcoord and on the reference Kafka:
Kafka's kafka-configs --entity-type groups --alter/--describe/--delete-config prints the same on
both, IncrementalAlterConfigs and AlterConfigs refuse the same changes with the same codes and
messages, DescribeConfigs gives the same entries (order, values, sources, synonyms, types), and
ListConfigResources lists the same groups; on kcoord alone, the configs survive a restart with
--data-dir. What the coordinators make of them: tests/unit/coordinator/test_group_configs_in_protocols.py,
and Kafka Streams itself in tests/integration/test_streams_groups.py (a standby promoted)."""
from __future__ import annotations

import uuid

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import (alter_resource_configs, describe_resource, own_configs, replace_resource_configs,
                                    wait_own_configs)
from kcoord.testing.kafka_tools import ToolSession, normalise
from kcoord.testing.plugin import start_server

pytestmark = pytest.mark.kcoord(node_id=1)   # the reference Kafka's node.id

LIST_CONFIG_RESOURCES = 74
GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture(scope="module")
def tools():
    with ToolSession() as session:
        yield session


@pytest.fixture
def both(kcoord_server, reference_kafka):
    return kcoord_server.bootstrap, reference_kafka.bootstrap


def _name(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"   # the reference Kafka lives for the whole session


def _on_both(both, call, *args, **kwargs):
    answers = [call(b, *args, **kwargs) for b in both]
    assert answers[0] == answers[1], f"kcoord {answers[0]}, Kafka {answers[1]}"
    return answers[0]


def _configs_tool(tools, both, group: str, *args: str, code: int = 0) -> tuple[str, str]:
    """kafka-configs on the group on both brokers: the same exit code, the same normalised output."""
    k, ref = (tools.run("configs", b, "--entity-type", "groups", "--entity-name", group, *args) for b in both)
    out = [(normalise(r.stdout), normalise(r.stderr)) for r in (k, ref)]
    assert (k.code, ref.code) == (code, code), (k, ref)
    assert out[0] == out[1], f"kcoord:\n{out[0]}\nkafka:\n{out[1]}"
    return out[0]


def _wait(both, group: str, configs: dict[str, str]) -> None:
    for b in both:
        wait_own_configs(b, GROUP, group, configs)


def test_kafka_configs_alters_describes_and_deletes_a_groups_configs(tools, both):
    group = _name("gc-tool")
    out, _ = _configs_tool(tools, both, group, "--describe")
    assert out == f"The group '{group}' doesn't exist and doesn't have dynamic config."
    out, _ = _configs_tool(tools, both, group, "--alter", "--add-config",
                           "streams.num.standby.replicas=1,consumer.session.timeout.ms=50000")
    assert out == f"Completed updating config for group {group}."
    _wait(both, group, {"streams.num.standby.replicas": "1", "consumer.session.timeout.ms": "50000"})
    out, _ = _configs_tool(tools, both, group, "--describe")
    assert out.splitlines() == [
        f"Dynamic configs for group {group} are:",
        "consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms"
        "=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}",
        "streams.num.standby.replicas=1 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:streams.num.standby.replicas=1, "
        "DEFAULT_CONFIG:group.streams.num.standby.replicas=0}"]
    out, _ = _configs_tool(tools, both, group, "--describe", "--all")
    assert len(out.splitlines()) == 1 + 17   # every GroupConfig name of Kafka 4.3.1
    assert "share.auto.offset.reset=latest sensitive=false synonyms={DEFAULT_CONFIG:share.auto.offset.reset=latest}" \
        in out
    _configs_tool(tools, both, group, "--alter", "--delete-config", "consumer.session.timeout.ms")
    _wait(both, group, {"streams.num.standby.replicas": "1"})
    _configs_tool(tools, both, group, "--alter", "--delete-config", "streams.num.standby.replicas")
    _wait(both, group, {})
    out, _ = _configs_tool(tools, both, group, "--describe")
    assert out == f"The group '{group}' doesn't exist and doesn't have dynamic config."


@pytest.mark.parametrize("config,message", [
    ("foo=1", "InvalidConfigurationException: Unknown group config name: foo"),
    ("streams.num.standby.replicas=3", "InvalidConfigurationException: streams.num.standby.replicas must be less "
                                       "than or equal to group.streams.max.standby.replicas"),
    ("consumer.session.timeout.ms=abc", "InvalidConfigurationException: Invalid value abc for configuration "
                                        "consumer.session.timeout.ms: Not a number of type INT"),
])
def test_kafka_configs_refuses_bad_group_configs_with_kafkas_message(tools, both, config, message):
    group = _name("gc-refused")
    _, err = _configs_tool(tools, both, group, "--alter", "--add-config", config, code=1)
    assert message in err


def _alter(bootstrap: str, name: str, ops, validate_only: bool = False) -> tuple[str, str | None]:
    return alter_resource_configs(bootstrap, GROUP, name, ops, validate_only)


def _replace(bootstrap: str, name: str, pairs) -> tuple[str, str | None]:
    return replace_resource_configs(bootstrap, GROUP, name, pairs)


def _invalid(name: str, value: str, reason: str) -> tuple[str, str]:
    return "INVALID_CONFIG", f"Invalid value {value} for configuration {name}: {reason}"


def test_changes_are_checked_as_kafka_checks_them(both):
    group = _name("gc-checks")
    refused = {
        (("nope", SET, "1"),): ("INVALID_CONFIG", "Unknown group config name: nope"),
        (("consumer.session.timeout.ms", SET, " x"),): _invalid("consumer.session.timeout.ms", " x",
                                                                "Not a number of type INT"),
        (("consumer.session.timeout.ms", SET, "99999999999"),): _invalid(
            "consumer.session.timeout.ms", "99999999999", "Not a number of type INT"),
        (("consumer.session.timeout.ms", SET, "0"),): _invalid("consumer.session.timeout.ms", "0",
                                                               "Value must be at least 1"),
        (("consumer.session.timeout.ms", SET, "1000"),): (
            "INVALID_CONFIG", "consumer.session.timeout.ms must be greater than or equal to "
                              "group.consumer.min.session.timeout.ms"),
        # Kafka checks a heartbeat interval's bounds before the session timeout's.
        (("consumer.heartbeat.interval.ms", SET, "20000"), ("consumer.session.timeout.ms", SET, "1")): (
            "INVALID_CONFIG", "consumer.heartbeat.interval.ms must be less than or equal to "
                              "group.consumer.max.heartbeat.interval.ms"),
        (("consumer.assignment.interval.ms", SET, "15001"),): (
            "INVALID_CONFIG", "consumer.assignment.interval.ms must be less than or equal to "
                              "group.consumer.max.assignment.interval.ms"),
        (("share.record.lock.duration.ms", SET, "999"),): _invalid("share.record.lock.duration.ms", "999",
                                                                   "Value must be at least 1000"),
        (("share.delivery.count.limit", SET, "11"),): (
            "INVALID_CONFIG", "share.delivery.count.limit must be less than or equal to "
                              "group.share.max.delivery.count.limit"),
        (("share.isolation.level", SET, "READ_COMMITTED"),): _invalid(
            "share.isolation.level", "READ_COMMITTED", "String must be one of: read_committed, read_uncommitted"),
        (("share.renew.acknowledge.enable", SET, "yes"),): _invalid(
            "share.renew.acknowledge.enable", "yes", "Expected value to be either true or false"),
        (("share.auto.offset.reset", SET, "by_duration:-PT1H"),): _invalid(
            "share.auto.offset.reset", "by_duration:-PT1H",
            "Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either "
            "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
        (("streams.num.standby.replicas", SET, "-1"),): _invalid("streams.num.standby.replicas", "-1",
                                                                 "Value must be at least 0"),
        (("streams.session.timeout.ms", SET, "70000"),): (
            "INVALID_CONFIG", "streams.session.timeout.ms must be less than or equal to "
                              "group.streams.max.session.timeout.ms"),
        # Kafka's controller has no config schema for groups: no config is a list there.
        (("streams.num.standby.replicas", APPEND, "1"),): (
            "INVALID_CONFIG", "Can't APPEND to key streams.num.standby.replicas because its type is not LIST."),
        (("streams.num.standby.replicas", SET, None),): ("INVALID_REQUEST",
                                                         "Null value not supported for : streams.num.standby.replicas"),
        (("streams.num.standby.replicas", SET, "1"), ("streams.num.standby.replicas", DELETE, None)): (
            "INVALID_REQUEST", "Error due to duplicate config keys"),
    }
    for ops, expected in refused.items():
        assert _on_both(both, _alter, group, list(ops)) == expected, ops
    assert _on_both(both, _alter, "", [("streams.num.standby.replicas", SET, "1")]) == (
        "INVALID_REQUEST", "Default group resources are not allowed.")
    # Nothing refused changed anything; validate_only changes nothing either.
    assert _on_both(both, _alter, group, [("streams.num.standby.replicas", SET, "1")], validate_only=True) == (
        "NONE", None)
    assert _on_both(both, own_configs, GROUP, group) == {}

    accepted = [("share.auto.offset.reset", SET, " by_duration:P1DT2H "), ("share.isolation.level", SET, "read_committed"),
                ("share.renew.acknowledge.enable", SET, "FALSE"), ("streams.initial.rebalance.delay.ms", SET, "+0")]
    assert _on_both(both, _alter, group, accepted) == ("NONE", None)
    _wait(both, group, {"share.auto.offset.reset": "by_duration:P1DT2H", "share.isolation.level": "read_committed",
                        "share.renew.acknowledge.enable": "false", "streams.initial.rebalance.delay.ms": "0"})


def test_alter_configs_replaces_a_groups_configs(both):
    group = _name("gc-replace")
    assert _on_both(both, _replace, group, [("streams.num.standby.replicas", "2"),
                                            ("consumer.heartbeat.interval.ms", "6000")]) == ("NONE", None)
    _wait(both, group, {"streams.num.standby.replicas": "2", "consumer.heartbeat.interval.ms": "6000"})
    assert _on_both(both, _replace, group, [("streams.session.timeout.ms", "50000")]) == ("NONE", None)
    _wait(both, group, {"streams.session.timeout.ms": "50000"})
    assert _on_both(both, _replace, group, [("streams.session.timeout.ms", None)]) == (
        "INVALID_REQUEST", "Null value not supported for : streams.session.timeout.ms")
    assert _on_both(both, _replace, group, []) == ("NONE", None)
    _wait(both, group, {})


def _describe(bootstrap: str, group: str, keys=None) -> list:
    return describe_resource(bootstrap, GROUP, group, keys)


def test_describe_configs_lists_every_config_with_kafkas_sources_and_synonyms(both):
    group = _name("gc-describe")
    _on_both(both, _alter, group, [("streams.num.standby.replicas", SET, " 1"),
                                   ("share.isolation.level", SET, "read_committed")])
    _wait(both, group, {"streams.num.standby.replicas": "1", "share.isolation.level": "read_committed"})
    described = _on_both(both, _describe, group)   # in Kafka's order, which is its HashMap's
    entries = {e[0]: e for e in described[2]}
    assert entries["streams.num.standby.replicas"] == (
        "streams.num.standby.replicas", "1", False, 8, False, 3,
        [("streams.num.standby.replicas", "1", 8), ("group.streams.num.standby.replicas", "0", 5)])
    assert entries["share.isolation.level"][3] == 8
    assert entries["consumer.heartbeat.interval.ms"] == (
        "consumer.heartbeat.interval.ms", "5000", False, 5, False, 3, [("group.consumer.heartbeat.interval.ms",
                                                                        "5000", 5)])
    assert len(entries) == 17
    assert _on_both(both, _describe, group, ["streams.num.standby.replicas", "nope"])[2] == [
        entries["streams.num.standby.replicas"]]
    # A group without configs of its own (existing or not) has the broker's: each own value's
    # next synonym.
    assert _on_both(both, _describe, _name("gc-absent"))[2] == [
        (e[0], e[6][1][1], False, 5, False, e[5], e[6][1:]) if e[3] == 8 else e for e in described[2]]
    assert _on_both(both, _describe, "") == ["INVALID_REQUEST", "Group name must not be empty", []]


def _listed(bootstrap: str) -> list[str]:
    with Connection.to(bootstrap) as conn:
        answer = conn.call(LIST_CONFIG_RESOURCES, 1, {"resource_types": [GROUP]})
    assert answer.error_code == 0
    return [r.resource_name for r in answer.config_resources]


def test_list_config_resources_lists_the_groups_with_configs(both):
    with_configs, without = _name("gc-listed"), _name("gc-unlisted")
    _on_both(both, _alter, with_configs, [("consumer.heartbeat.interval.ms", SET, "6000")])
    _wait(both, with_configs, {"consumer.heartbeat.interval.ms": "6000"})
    assert [sorted(n for n in _listed(b) if n in (with_configs, without)) for b in both] == [[with_configs]] * 2


def test_group_configs_survive_a_restart(tmp_path):
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _alter(server.bootstrap, "kept", [("streams.num.standby.replicas", SET, "1")]) == ("NONE", None)
        assert _alter(server.bootstrap, "gone", [("consumer.heartbeat.interval.ms", SET, "6000")]) == ("NONE", None)
        assert _alter(server.bootstrap, "gone", [("consumer.heartbeat.interval.ms", DELETE, None)]) == ("NONE", None)
        assert _alter(server.bootstrap, "refused", [("streams.num.standby.replicas", SET, "9")])[0] == "INVALID_CONFIG"
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _listed(server.bootstrap) == ["kept"]
        assert own_configs(server.bootstrap, GROUP, "kept") == {"streams.num.standby.replicas": "1"}
        # The coordinators read it too: the group's assignment configs are the group's.
        assert server.app.coordinator.runtime.group_configs.effective("kept") == {"streams.num.standby.replicas": 1}
    finally:
        server.stop()


def test_group_configs_need_describe_configs_and_alter_configs_on_the_group(tmp_path):
    """As Kafka's ConfigHelper and ControllerApis authorize them: on the GROUP resource named, not
    the cluster; Describe or Read on the group is not enough."""
    acls = tmp_path / "acls.txt"
    acls.write_text("User:ANONYMOUS All cfg-ok\nUser:ANONYMOUS Describe cfg-described\nUser:ANONYMOUS Read cfg-read\n")
    server = start_server(group_acls_file=str(acls))
    try:
        assert _alter(server.bootstrap, "cfg-ok", [("streams.num.standby.replicas", SET, "1")]) == ("NONE", None)
        assert _describe(server.bootstrap, "cfg-ok", ["streams.num.standby.replicas"])[:2] == ["NONE", ""]
        denied = ("GROUP_AUTHORIZATION_FAILED", "Group authorization failed.")
        for group in ("cfg-described", "cfg-read", "cfg-other"):
            assert _alter(server.bootstrap, group, [("streams.num.standby.replicas", SET, "1")]) == denied
            assert _replace(server.bootstrap, group, [("streams.num.standby.replicas", "1")]) == denied
            assert _describe(server.bootstrap, group) == [*denied, []]
        # The broker's own checks come first, as Kafka's broker makes them before it forwards.
        assert _alter(server.bootstrap, "cfg-other", [("streams.num.standby.replicas", SET, None)]) == (
            "INVALID_REQUEST", "Null value not supported for : streams.num.standby.replicas")
    finally:
        server.stop()
