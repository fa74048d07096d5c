"""Client-metrics subscriptions (KIP-714) over the raw protocol, on kcoord and on the reference
Kafka: IncrementalAlterConfigs and AlterConfigs on CLIENT_METRICS resources get the same
answers (error codes and messages), DescribeConfigs the same entries, ListConfigResources the
same listings but for the differences docs/deviations.md names; and on kcoord alone, the
subscriptions survive a restart with --data-dir. Kafka's own tools on them:
test_kafka_tools.py."""
from __future__ import annotations

import uuid

import pytest

from kcoord.protocol_client import Connection
from kcoord.testing.brokers import (alter_resource_configs, create_topic, describe_resource, replace_resource_configs,
                                    subscription, wait_subscription)
from kcoord.testing.plugin import start_server
from wire.errors import ErrorCode

pytestmark = pytest.mark.kcoord(node_id=1)  # the reference Kafka's node.id: broker resources compare as they are

LIST_CONFIG_RESOURCES = 74
CLIENT_METRICS, TOPIC, BROKER, BROKER_LOGGER, GROUP = 16, 2, 4, 8, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def both(kcoord_server, reference_kafka):
    return kcoord_server.bootstrap, reference_kafka.bootstrap


def _name(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"  # the reference Kafka lives for the whole session


def _alter(bootstrap: str, name: str, ops, validate_only: bool = False) -> tuple[str, str | None]:
    return alter_resource_configs(bootstrap, CLIENT_METRICS, name, ops, validate_only)


def _replace(bootstrap: str, name: str, pairs) -> tuple[str, str | None]:
    return replace_resource_configs(bootstrap, CLIENT_METRICS, name, pairs)


def _on_both(both, call, *args, **kwargs):
    answers = [call(b, *args, **kwargs) for b in both]
    assert answers[0] == answers[1], f"kcoord {answers[0]}, Kafka {answers[1]}"
    return answers[0]


def test_changes_are_checked_as_kafka_checks_them(both):
    name = _name("cm-checks")
    assert _on_both(both, _alter, name, [("interval.ms", SET, "1000"), ("metrics", SET, " a. , b. ")]) == ("NONE", None)
    for b in both:
        wait_subscription(b, name, {"interval.ms": "1000", "metrics": "a.,b."})  # as parsed: see below
    refused = {
        (("push.interval", SET, "1"),): ("INVALID_REQUEST", "Unknown client metrics configuration: push.interval"),
        (("interval.ms", SET, "abc"),): ("INVALID_CONFIG",
                                         "Invalid value abc for configuration interval.ms: Not a number of type INT"),
        (("interval.ms", SET, "99999999999"),): (
            "INVALID_CONFIG", "Invalid value 99999999999 for configuration interval.ms: Not a number of type INT"),
        (("interval.ms", SET, "99"),): (
            "INVALID_REQUEST", "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        (("interval.ms", SET, "3600001"),): (
            "INVALID_REQUEST", "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        (("metrics", SET, "a.,,b."),): ("INVALID_CONFIG", "Configuration 'metrics' values must not be empty."),
        (("match", SET, "client_id=a=b"),): ("INVALID_CONFIG", "Illegal client matching pattern: client_id=a=b"),
        (("match", SET, "client_idx=a"),): ("INVALID_CONFIG", "Illegal client matching pattern: client_idx=a"),
        (("match", SET, "client_id=["),): ("INVALID_CONFIG", "Illegal client matching pattern: client_id=["),
        (("match", SET, "client_id="),): ("INVALID_CONFIG", "Illegal client matching pattern: client_id="),
        # Kafka's controller has no config schema for client metrics: no config is a list there.
        (("metrics", APPEND, "c."),): ("INVALID_CONFIG", "Can't APPEND to key metrics because its type is not LIST."),
        (("match", SUBTRACT, "client_id=a"),): ("INVALID_CONFIG",
                                                "Can't SUBTRACT to key match because its type is not LIST."),
        (("push.interval", SUBTRACT, "5"),): ("INVALID_CONFIG",
                                              "Can't SUBTRACT to key push.interval because its type is not LIST."),
        (("interval.ms", SET, None),): ("INVALID_REQUEST", "Null value not supported for : interval.ms"),
        (("interval.ms", SET, "1000"), ("interval.ms", DELETE, None)): ("INVALID_REQUEST",
                                                                        "Error due to duplicate config keys"),
    }
    for ops, expected in refused.items():
        assert _on_both(both, _alter, name, list(ops)) == expected, ops
    assert _on_both(both, _alter, "", [("interval.ms", SET, "1000")]) == ("INVALID_REQUEST",
                                                                          "Subscription name can't be empty")
    # Nothing refused changed anything; validate_only changes nothing either.
    assert _on_both(both, _alter, name, [("interval.ms", SET, "2000")], validate_only=True) == ("NONE", None)
    assert _on_both(both, subscription, name) == {"interval.ms": "1000", "metrics": "a.,b."}

    ok = ("NONE", None)
    assert _on_both(both, _alter, name, [("match", SET, " client_software_name = Java , client_id=x.*")]) == ok
    for b in both:
        wait_subscription(b, name, {"interval.ms": "1000", "metrics": "a.,b.",
                                    "match": "client_software_name = Java,client_id=x.*"})
    assert _on_both(both, _alter, name, [(k, DELETE, None) for k in ("interval.ms", "metrics", "match")]) == ok
    for b in both:
        wait_subscription(b, name, {})


def test_alter_configs_replaces_a_subscription(both):
    name = _name("cm-replace")
    assert _on_both(both, _replace, name, [("interval.ms", "1000"), ("match", "client_id=a")]) == ("NONE", None)
    for b in both:
        wait_subscription(b, name, {"interval.ms": "1000", "match": "client_id=a"})
    assert _on_both(both, _replace, name, [("metrics", "m.")]) == ("NONE", None)
    for b in both:
        wait_subscription(b, name, {"metrics": "m."})
    assert _on_both(both, _replace, name, [("metrics", None)]) == ("INVALID_REQUEST",
                                                                   "Null value not supported for : metrics")
    assert _on_both(both, _replace, name, [("interval.ms", "1")])[0] == "INVALID_REQUEST"
    assert _on_both(both, _replace, name, []) == ("NONE", None)
    for b in both:
        wait_subscription(b, name, {})


def _describe(bootstrap: str, name: str, keys=None) -> list:
    return describe_resource(bootstrap, CLIENT_METRICS, name, keys, documentation=True)


def test_describe_configs_shows_defaults_sources_and_synonyms(both):
    name = _name("cm-describe")
    _on_both(both, _alter, name, [("interval.ms", SET, " 2000"), ("metrics", SET, "a. , b.,a.")])
    for b in both:
        # Values are shown as Kafka parses them: trimmed, the list's blanks and repeats gone.
        wait_subscription(b, name, {"interval.ms": "2000", "metrics": "a.,b."})
    described = _on_both(both, _describe, name)
    assert described == ["NONE", "", [
        ("interval.ms", "2000", False, 7, False, 3, "Metrics push interval in milliseconds",
         [("interval.ms", "2000", 7)]),
        ("match", "", False, 5, False, 7, "Client match criteria", []),
        ("metrics", "a.,b.", False, 7, False, 7, "Telemetry metric name prefix list", [("metrics", "a.,b.", 7)])]]
    assert _on_both(both, _describe, name, ["metrics", "nope"])[2] == [described[2][2]]
    assert _on_both(both, _describe, _name("cm-absent"))[2][0][:4] == ("interval.ms", "300000", False, 5)
    assert _on_both(both, _describe, "") == ["INVALID_REQUEST", "Client metrics subscription name must not be empty",
                                             []]


def _list(bootstrap: str, version: int, types=None) -> tuple[str, list[tuple[int, str]]]:
    with Connection.to(bootstrap) as conn:
        answer = conn.call(LIST_CONFIG_RESOURCES, version, {"resource_types": types or []})
    return ErrorCode(answer.error_code).name, [(r.get("resource_type", CLIENT_METRICS), r.resource_name)
                                               for r in answer.config_resources]


def test_list_config_resources(both):
    sub, topic = _name("cm-list"), _name("cm-list-topic")
    for b in both:
        create_topic(b, topic)
        assert _alter(b, sub, [("interval.ms", SET, "1000")]) == ("NONE", None)
        wait_subscription(b, sub, {"interval.ms": "1000"})
    mine = {sub, topic, "1"}
    listed = {}
    for version, types in ((0, None), (1, [CLIENT_METRICS]), (1, [TOPIC]), (1, [BROKER, CLIENT_METRICS]), (1, None)):
        answers = [_list(b, version, types) for b in both]
        assert answers[0][0] == answers[1][0] == "NONE", (version, types)
        ours = [sorted(r for r in listing if r[1] in mine) for _, listing in answers]
        # Kafka lists each broker's loggers too; kcoord has none to configure (docs/deviations.md).
        assert ours[1] == sorted(ours[0] + ([(BROKER_LOGGER, "1")] if types is None and version else [])), (
            version, types, ours)
        listed[version, tuple(types or ())] = ours[0]
    assert listed[0, ()] == listed[1, (CLIENT_METRICS,)] == [(CLIENT_METRICS, sub)]
    assert listed[1, (TOPIC,)] == [(TOPIC, topic)]
    assert listed[1, (BROKER, CLIENT_METRICS)] == [(BROKER, "1"), (CLIENT_METRICS, sub)]
    assert listed[1, ()] == [(TOPIC, topic), (BROKER, "1"), (CLIENT_METRICS, sub)]
    assert _list(both[0], 1, [GROUP]) == ("NONE", [])  # no group of this server has configs of its own
    for types in ([1], [TOPIC, 64]):
        assert [_list(b, 1, types) for b in both] == [("UNSUPPORTED_VERSION", [])] * 2


def test_subscriptions_survive_a_restart(tmp_path):
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _alter(server.bootstrap, "kept", [("interval.ms", SET, "1000"), ("match", SET, "client_id=a")]) \
            == ("NONE", None)
        assert _alter(server.bootstrap, "gone", [("metrics", SET, "m.")]) == ("NONE", None)
        assert _alter(server.bootstrap, "gone", [("metrics", DELETE, None)]) == ("NONE", None)
        assert _alter(server.bootstrap, "refused", [("interval.ms", SET, "1")])[0] == "INVALID_REQUEST"
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _list(server.bootstrap, 0) == ("NONE", [(CLIENT_METRICS, "kept")])
        assert subscription(server.bootstrap, "kept") == {"interval.ms": "1000", "match": "client_id=a"}
        assert _alter(server.bootstrap, "later", [("metrics", SET, "x.")]) == ("NONE", None)
        server.app.storage.compact()  # the compacted log keeps each live subscription once
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        assert sorted(_list(server.bootstrap, 0)[1]) == [(CLIENT_METRICS, "kept"), (CLIENT_METRICS, "later")]
        assert subscription(server.bootstrap, "later") == {"metrics": "x."}
    finally:
        server.stop()
