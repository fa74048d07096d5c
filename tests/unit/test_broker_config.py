"""kcoord.broker_config: the Java properties parser, the Kafka-named table, flags/file/--config precedence,
and the DescribeConfigs entries built from it."""
import dataclasses
import logging

import pytest

from kcoord import broker_config as bc
from kcoord.cli import build_parser, config_from_args
from kcoord.config import ServerConfig
from kcoord.coordinator import ManualTimer, build_coordinator
from kcoord.log.topics import TopicStore

# Kafka 4.x's ConfigDef defaults (GroupCoordinatorConfig, ServerLogConfigs, SocketServerConfigs,
# BrokerSecurityConfigs, KRaftConfigs, ServerConfigs, LogConfig), written out here independently of the table.
KAFKA_DEFAULTS = {
    # GroupCoordinatorConfig's group.consumer.* (KIP-848).
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.max.size": "2147483647",
    "group.consumer.assignors": "uniform,range",
    "group.consumer.assignment.interval.ms": "1000",
    "group.consumer.regex.refresh.interval.ms": "600000",
    "group.consumer.migration.policy": "bidirectional",
    # GroupCoordinatorConfig's group.streams.* (KIP-1071).
    "group.streams.session.timeout.ms": "45000",
    "group.streams.min.session.timeout.ms": "45000",
    "group.streams.max.session.timeout.ms": "60000",
    "group.streams.heartbeat.interval.ms": "5000",
    "group.streams.min.heartbeat.interval.ms": "5000",
    "group.streams.max.heartbeat.interval.ms": "15000",
    "group.streams.max.size": "2147483647",
    "group.streams.num.standby.replicas": "0",
    "group.streams.max.standby.replicas": "2",
    "group.streams.initial.rebalance.delay.ms": "3000",
    "group.streams.assignment.interval.ms": "1000",
    "group.streams.min.assignment.interval.ms": "0",
    "group.streams.max.assignment.interval.ms": "15000",
    # GroupCoordinatorConfig's and ShareGroupConfig's group.share.* (KIP-932).
    "group.share.session.timeout.ms": "45000",
    "group.share.min.session.timeout.ms": "45000",
    "group.share.max.session.timeout.ms": "60000",
    "group.share.heartbeat.interval.ms": "5000",
    "group.share.min.heartbeat.interval.ms": "5000",
    "group.share.max.heartbeat.interval.ms": "15000",
    "group.share.max.size": "200",
    "group.share.assignors": "simple",
    "group.share.assignment.interval.ms": "1000",
    "group.share.min.assignment.interval.ms": "0",
    "group.share.max.assignment.interval.ms": "15000",
    "group.share.record.lock.duration.ms": "30000",
    "group.share.min.record.lock.duration.ms": "15000",
    "group.share.max.record.lock.duration.ms": "60000",
    "group.share.delivery.count.limit": "5",
    "group.share.min.delivery.count.limit": "2",
    "group.share.max.delivery.count.limit": "10",
    "group.share.partition.max.record.locks": "2000",
    "group.share.min.partition.max.record.locks": "100",
    "group.share.max.partition.max.record.locks": "4000",
    "group.share.max.share.sessions": "2000",
    "group.initial.rebalance.delay.ms": "3000",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.max.size": "2147483647",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "offset.metadata.max.bytes": "4096",
    "offsets.topic.num.partitions": "50",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "listeners": "PLAINTEXT://:9092",
    "advertised.listeners": None,
    "socket.request.max.bytes": "104857600",
    "max.connections": "2147483647",
    "max.connections.per.ip": "2147483647",
    "connections.max.idle.ms": "600000",
    "sasl.enabled.mechanisms": "GSSAPI",
    "node.id": "-1",
    "broker.id": "-1",
    "broker.rack": None,
    "message.max.bytes": "1048588",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    # TransactionLogConfig and TransactionStateManagerConfig (kafka-transaction-coordinator 4.3.1).
    "transaction.state.log.num.partitions": "50",
    "transaction.state.log.min.isr": "2",
    "transaction.max.timeout.ms": "900000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "10000",
    "transactional.id.expiration.ms": "604800000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "3600000",
    "broker.session.timeout.ms": "9000",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "300",
    "leader.imbalance.per.broker.percentage": "10",
    # QuotaConfig: Long.MAX_VALUE, no throttle.
    "leader.replication.throttled.rate": "9223372036854775807",
    "follower.replication.throttled.rate": "9223372036854775807",
    # ShareGroupConfig (kafka-group-coordinator) and ShareCoordinatorConfig (kafka-share-coordinator 4.3.1).
    "group.share.record.lock.duration.ms": "30000",
    "group.share.delivery.count.limit": "5",
    "group.share.partition.max.record.locks": "2000",
    "group.share.max.share.sessions": "2000",
    "share.coordinator.state.topic.num.partitions": "50",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "share.coordinator.snapshot.update.records.per.snapshot": "500",
}
# Where kcoord runs with something else, and must say why.
KCOORD_DIFFERS = {"listeners", "sasl.enabled.mechanisms", "node.id", "broker.id"}


def serve_config(*argv) -> ServerConfig:
    return config_from_args(build_parser().parse_args(["serve", *argv]))


# --- properties parser -----------------------------------------------------------------------

def test_properties_separators_comments_and_trimming():
    text = ("# a comment\n"
            "! another = comment\n"
            "\n"
            "a=1\n"
            "b : 2\n"
            "c 3\n"
            "  d =  4  \n"
            "e=\n"
            "f\n"
            "g=x=y:z\n"
            "h:=5\n"
            "\t i\t=\t6\n")
    assert bc.parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "", "f": "", "g": "x=y:z",
                                         "h": "=5", "i": "6"}


def test_properties_continuations_and_escapes():
    text = ("listeners=PLAINTEXT://127.0.0.1:9092,\\\n"
            "          CONTROLLER://127.0.0.1:9093\n"
            "path=C:\\\\dir\\\\\n"          # an escaped backslash at the end does not continue the line
            "next=1\n"
            "# a comment ending in a backslash \\\n"
            "after.comment=2\n"
            "key\\=with\\:seps=v\n"
            "uni=\\u0041\\tB\n"
            "last=open\\\n")
    assert bc.parse_properties(text) == {
        "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        "path": "C:\\dir\\", "next": "1", "after.comment": "2", "key=with:seps": "v", "uni": "A\tB",
        "last": "open"}


def test_properties_last_value_wins_and_crlf(tmp_path):
    f = tmp_path / "server.properties"
    f.write_bytes(b"a=1\r\na=2\r\nb=caf\xe9\r\n")
    assert bc.load_properties(str(f)) == {"a": "2", "b": "caf\u00e9"}


# --- the table -------------------------------------------------------------------------------

def test_every_kafka_default_is_kafkas():
    assert {c.name: c.kafka_default for c in bc.TABLE} == KAFKA_DEFAULTS


def test_kcoord_differs_from_kafka_only_where_it_says_why():
    differs = {c.name for c in bc.TABLE if c.default != c.kafka_default}
    assert differs == KCOORD_DIFFERS
    assert all(bc.BY_NAME[n].kcoord_default_reason for n in differs)


def test_servconfig_defaults_are_the_table_defaults():
    cfg = ServerConfig()
    for c in bc.TABLE:
        if c.field is not None and c.default is not None:
            assert c.to_string(getattr(cfg, c.field)) == c.default, c.name
    assert bc.describe(cfg)  # and every entry describes
    assert all(e["config_source"] == bc.DEFAULT_CONFIG for e in bc.describe(cfg)), \
        [e["name"] for e in bc.describe(cfg) if e["config_source"] != bc.DEFAULT_CONFIG]


def test_every_entry_is_documented_and_typed():
    for c in bc.TABLE:
        assert c.doc and c.type in ("boolean", "string", "int", "short", "long", "list", "listeners")
        if c.default is not None:
            c.parse(c.default)


@pytest.mark.parametrize("entry", [c for c in bc.TABLE if c.flag], ids=lambda c: c.name)
def test_flag_alias_sets_the_same_field_as_the_kafka_name(entry):
    sample = {"boolean": "false", "list": "PLAIN", "listeners": "127.0.0.1:9999", "string": "rack-a"}
    text = sample.get(entry.type, "7")
    if entry.type == "boolean":
        by_flag = serve_config("--no-" + entry.flag[2:])
    else:
        by_flag = serve_config(entry.flag, text)
    by_name = serve_config("--config", f"{entry.name}={text}")
    assert dataclasses.asdict(by_flag) == dataclasses.asdict(by_name)
    assert dataclasses.asdict(by_flag) != dataclasses.asdict(serve_config())


def test_precedence_defaults_file_config_flags(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("group.max.size=10\nnum.partitions=2\nmax.connections=30\n")
    cfg = serve_config("--config-file", str(f), "--config", "num.partitions=3", "--config", "max.connections=40",
                       "--max-connections", "50")
    assert (cfg.group_max_size, cfg.default_partitions, cfg.max_connections) == (10, 3, 50)
    assert cfg.offsets_topic_partitions == 50
    assert cfg.static_broker_configs == {"group.max.size": "10", "num.partitions": "3", "max.connections": "50"}


@pytest.mark.parametrize("pair, reason", [
    ("group.min.session.timeout.ms=abc", "not an integer"),
    ("group.max.size=0", "must be at least 1"),
    ("group.initial.rebalance.delay.ms=-5", "must be at least 0"),
    ("num.partitions=2147483648", "out of range"),
    ("auto.create.topics.enable=yes", "not a boolean"),
    ("offsets.retention.minutes=0", "must be at least 1"),
    ("max.connections=-1", "must be at least 0"),
    ("listeners=PLAINTEXT://host", "no port"),
])
def test_bad_values_name_key_value_and_reason(pair, reason):
    with pytest.raises(bc.ConfigError) as err:
        serve_config("--config", pair)
    assert str(err.value).startswith(pair + ": ") and reason in str(err.value)


def test_bad_flag_value_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", "--initial-rebalance-delay-ms", "-5"])
    assert exit_.value.code == 2
    assert "group.initial.rebalance.delay.ms: must be at least 0" in capsys.readouterr().err


def test_unsupported_sasl_mechanisms_are_dropped_and_refused_only_with_sasl_on(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="kcoord"):
        assert serve_config("--config", "sasl.enabled.mechanisms=GSSAPI,PLAIN").sasl_mechanisms == ("PLAIN",)
        assert serve_config("--config", "sasl.enabled.mechanisms=GSSAPI").sasl_mechanisms == ()
    # Only kcoord's own records: a client an earlier test in this worker left behind can be
    # collected here, and asyncio logs its unclosed tasks into the same caplog.
    assert [r.getMessage() for r in caplog.records if r.name.startswith("kcoord")] == ["ignoring GSSAPI in sasl.enabled.mechanisms "
                                                        "(not supported by kcoord)"] * 2
    users = tmp_path / "users"
    users.write_text("alice:secret\n")
    with pytest.raises(bc.ConfigError, match="^sasl.enabled.mechanisms=GSSAPI: SASL is on"):
        serve_config("--config", "sasl.enabled.mechanisms=GSSAPI", "--sasl-users", str(users))


def test_kraft_listeners_pick_the_client_listener():
    cfg = serve_config("--config", "listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093",
                       "--config", "controller.listener.names=CONTROLLER",
                       "--config", "advertised.listeners=PLAINTEXT://broker.example:9092")
    assert (cfg.listen_host, cfg.listen_port) == ("127.0.0.1", 19092)
    assert cfg.advertised == ("broker.example", 9092)
    # The controller listener may come first.
    cfg = serve_config("--config", "listeners=CONTROLLER://:9093,BROKER://:9092",
                       "--config", "controller.listener.names=CONTROLLER")
    assert (cfg.listen_host, cfg.listen_port) == ("0.0.0.0", 9092)
    assert cfg.advertised == ("0.0.0.0", 9092)


def test_listen_flag_overrides_listeners_from_the_file(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("listeners=PLAINTEXT://0.0.0.0:9092\n")
    cfg = serve_config("--config-file", str(f), "--listen", "127.0.0.1:0")
    assert (cfg.listen_host, cfg.listen_port) == ("127.0.0.1", 0)


def test_listen_flags_keep_their_host_port_form():
    cfg = serve_config("--listen", "0.0.0.0:19092", "--advertised", "kcoord")
    assert (cfg.listen_host, cfg.listen_port, cfg.advertised) == ("0.0.0.0", 19092, ("kcoord", 9092))
    cfg = serve_config("--listen", "[::1]:9093")
    assert (cfg.listen_host, cfg.listen_port) == ("::1", 9093)
    assert bc.describe(cfg, ["listeners"])[0]["value"] == "PLAINTEXT://[::1]:9093"


def test_node_id_and_broker_id():
    assert serve_config("--config", "broker.id=3").node_id == 3
    assert serve_config("--config", "node.id=4", "--config", "broker.id=4").node_id == 4
    with pytest.raises(bc.ConfigError, match="must equal node.id"):
        serve_config("--config", "node.id=4", "--config", "broker.id=5")


def test_unknown_keys_warn_once_each(caplog):
    with caplog.at_level(logging.WARNING, logger="kcoord"):
        cfg = serve_config("--config", "process.roles=broker,controller", "--config", "log.dirs=/tmp/x",
                           "--config", "log.retention.hours=1", "--config", "num.partitions=2")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("kcoord")]
    assert lines.count("ignoring config process.roles (not modelled by kcoord)") == 1
    assert lines.count("ignoring config log.retention.hours (not modelled by kcoord)") == 1
    assert sum("ignoring config log.dirs" in line and "--data-dir" in line for line in lines) == 1
    assert len(lines) == 3 and cfg.default_partitions == 2 and cfg.data_dir is None


def test_session_limits_and_offsets_reach_the_coordinator():
    cfg = serve_config("--config", "group.min.session.timeout.ms=1000", "--config", "group.max.session.timeout.ms=5000",
                       "--config", "offsets.retention.minutes=2", "--config", "offset.metadata.max.bytes=10",
                       "--config", "offsets.retention.check.interval.ms=1234", "--group-max-size", "3")
    core = build_coordinator(cfg, TopicStore(), ManualTimer()).runtime
    c = core.config
    assert (c.min_session_timeout_ms, c.max_session_timeout_ms, c.max_group_size) == (1000, 5000, 3)
    assert (c.offsets_retention_ms, c.offsets_retention_check_interval_ms, c.offset_metadata_max_bytes) == \
        (120000, 1234, 10)


def test_streams_group_configs_reach_the_coordinator():
    cfg = serve_config("--config", "group.streams.session.timeout.ms=50000",
                       "--config", "group.streams.heartbeat.interval.ms=6000", "--config", "group.streams.max.size=7",
                       "--config", "group.streams.num.standby.replicas=1",
                       "--config", "group.streams.max.standby.replicas=3",
                       "--config", "group.streams.initial.rebalance.delay.ms=0",
                       "--config", "group.streams.assignment.interval.ms=0")
    c = build_coordinator(cfg, TopicStore(), ManualTimer()).runtime.config
    assert (c.streams_session_timeout_ms, c.streams_heartbeat_interval_ms, c.streams_max_size) == (50000, 6000, 7)
    assert (c.streams_num_standby_replicas, c.streams_max_standby_replicas, c.streams_initial_rebalance_delay_ms,
            c.streams_assignment_interval_ms) == (1, 3, 0, 0)


@pytest.mark.parametrize("pairs, refused", [
    # GroupCoordinatorConfig's requirements, in its words.
    (["group.streams.session.timeout.ms=44999"],
     "group.streams.session.timeout.ms=44999: must be greater than or equal to group.streams.min.session.timeout.ms"),
    (["group.streams.session.timeout.ms=60001"],
     "group.streams.session.timeout.ms=60001: must be less than or equal to group.streams.max.session.timeout.ms"),
    (["group.streams.max.session.timeout.ms=40000"], "group.streams.max.session.timeout.ms=40000: must be greater "
                                                     "than or equal to group.streams.min.session.timeout.ms"),
    (["group.streams.heartbeat.interval.ms=4000"], "group.streams.heartbeat.interval.ms=4000: must be greater than "
                                                   "or equal to group.streams.min.heartbeat.interval.ms"),
    (["group.streams.heartbeat.interval.ms=15001"], "group.streams.heartbeat.interval.ms=15001: must be less than "
                                                    "or equal to group.streams.max.heartbeat.interval.ms"),
    (["group.streams.max.heartbeat.interval.ms=50000", "group.streams.heartbeat.interval.ms=45000"],
     "group.streams.heartbeat.interval.ms=45000: must be less than group.streams.session.timeout.ms"),
    (["group.streams.assignment.interval.ms=15001"], "group.streams.assignment.interval.ms=15001: must be less "
                                                     "than or equal to group.streams.max.assignment.interval.ms"),
    (["group.streams.num.standby.replicas=3"],
     "group.streams.num.standby.replicas=3: must be less than or equal to group.streams.max.standby.replicas"),
    (["group.streams.num.standby.replicas=-1"], "group.streams.num.standby.replicas=-1: must be at least 0"),
    (["group.streams.max.size=0"], "group.streams.max.size=0: must be at least 1"),
])
def test_streams_group_configs_are_checked_as_kafka_checks_them(pairs, refused):
    with pytest.raises(bc.ConfigError) as err:
        serve_config(*[arg for pair in pairs for arg in ("--config", pair)])
    assert str(err.value).startswith(refused), str(err.value)


def test_share_group_configs_reach_the_coordinator_and_are_no_longer_warned_about(caplog):
    with caplog.at_level(logging.WARNING, logger="kcoord"):
        cfg = serve_config("--config", "group.share.session.timeout.ms=50000",
                           "--config", "group.share.heartbeat.interval.ms=6000", "--config", "group.share.max.size=7",
                           "--config", "group.share.assignment.interval.ms=0",
                           "--config", "group.share.record.lock.duration.ms=20000")
    assert caplog.records == []
    c = build_coordinator(cfg, TopicStore(), ManualTimer()).runtime.config
    assert (c.share_session_timeout_ms, c.share_heartbeat_interval_ms, c.share_max_size,
            c.share_assignment_interval_ms) == (50000, 6000, 7, 0)
    assert cfg.group_share_record_lock_duration_ms == 20000


@pytest.mark.parametrize("pairs, refused", [
    # GroupCoordinatorConfig's and ShareGroupConfig's requirements, in their words.
    (["group.share.session.timeout.ms=44999"],
     "group.share.session.timeout.ms=44999: must be greater than or equal to group.share.min.session.timeout.ms"),
    (["group.share.max.heartbeat.interval.ms=50000", "group.share.heartbeat.interval.ms=45000"],
     "group.share.heartbeat.interval.ms=45000: must be less than group.share.session.timeout.ms"),
    (["group.share.max.size=1001"], "group.share.max.size=1001: must be at most 1000"),
    (["group.share.delivery.count.limit=1"], "group.share.delivery.count.limit=1: must be at least 2"),
    (["group.share.max.delivery.count.limit=5", "group.share.delivery.count.limit=6"],
     "group.share.max.delivery.count.limit=5: must be greater than or equal to group.share.delivery.count.limit"),
    (["group.share.record.lock.duration.ms=10000"],
     "group.share.record.lock.duration.ms=10000: must be greater than or equal to "
     "group.share.min.record.lock.duration.ms"),
    (["group.share.max.share.sessions=100"],
     "group.share.max.share.sessions=100: must be greater than or equal to group.share.max.size"),
])
def test_share_group_configs_are_checked_as_kafka_checks_them(pairs, refused):
    with pytest.raises(bc.ConfigError) as err:
        serve_config(*[arg for pair in pairs for arg in ("--config", pair)])
    assert str(err.value).startswith(refused), str(err.value)


# --- DescribeConfigs -------------------------------------------------------------------------

def test_describe_sources_synonyms_and_documentation():
    cfg = serve_config("--config", "group.min.session.timeout.ms=1000", "--config", "num.partitions=1")
    entries = {e["name"]: e for e in bc.describe(cfg, include_synonyms=True, include_documentation=True)}
    e = entries["group.min.session.timeout.ms"]
    assert (e["value"], e["config_source"], e["is_default"], e["read_only"]) == ("1000", bc.STATIC_BROKER_CONFIG,
                                                                                  False, True)
    assert e["synonyms"] == [{"name": e["name"], "value": "1000", "source": bc.STATIC_BROKER_CONFIG},
                             {"name": e["name"], "value": "6000", "source": bc.DEFAULT_CONFIG}]
    assert e["config_type"] == 3 and "session timeout" in e["documentation"]
    # Given in the file with the default value: still static, as Kafka reports it.
    assert entries["num.partitions"]["config_source"] == bc.STATIC_BROKER_CONFIG
    d = entries["group.max.session.timeout.ms"]
    assert (d["value"], d["config_source"], d["is_default"]) == ("1800000", bc.DEFAULT_CONFIG, True)
    assert d["synonyms"] == [{"name": d["name"], "value": "1800000", "source": bc.DEFAULT_CONFIG}]
    assert entries["max.connections"]["read_only"] is False  # dynamic in Kafka
    assert entries["advertised.listeners"]["value"] is None and entries["advertised.listeners"]["synonyms"] == []


def test_describe_filters_keys_and_omits_synonyms_unless_asked():
    cfg = ServerConfig(group_min_session_timeout_ms=1000)  # set in code, as the pytest plugin does
    entries = bc.describe(cfg, ["group.min.session.timeout.ms", "no.such.key", "num.partitions"])
    assert [e["name"] for e in entries] == ["group.min.session.timeout.ms", "num.partitions"]
    assert entries[0]["config_source"] == bc.STATIC_BROKER_CONFIG and entries[0]["synonyms"] == []
    assert entries[0]["documentation"] is None
    assert entries[1]["config_source"] == bc.DEFAULT_CONFIG
