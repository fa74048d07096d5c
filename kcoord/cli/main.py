"""`kcoord` command line: `kcoord serve`, `groups`, `wait`, `broker`, `partition`, `report`, `check`."""
from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import signal
import sys

from kcoord import broker_config
from kcoord.config import ServerConfig, parse_host_port


def _at_least(n: int):
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: not an integer") from None
        if value < n:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: must be at least {n}")
        return value
    convert.__name__ = "integer"
    return convert


def _config_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _kafka_flags(p) -> None:
    g = p.add_argument_group(
        "Kafka broker configs (each flag is an alias of the Kafka name shown; --config-file and --config "
        "take those names; precedence: defaults < --config-file < --config < flags)")
    g.add_argument("--config-file", default=None, metavar="FILE",
                   help="a Kafka server.properties; keys kcoord does not model are ignored with a warning")
    g.add_argument("--config", action="append", default=[], type=_config_pair, metavar="KEY=VALUE",
                   help="one Kafka broker config, e.g. group.min.session.timeout.ms=1000 (repeatable)")
    for entry in broker_config.TABLE:
        if entry.flag is None:
            continue
        default = entry.default if entry.default is not None else "none"
        if entry.type == "boolean":
            g.add_argument(entry.flag, action=argparse.BooleanOptionalAction, default=None,
                           help=f"{entry.name} (default {default})")
        else:
            metavar = {"int": "N", "long": "N", "listeners": "HOST:PORT", "list": "A,B"}.get(entry.type, "VALUE")
            g.add_argument(entry.flag, type=broker_config.flag_type(entry.flag), default=None, metavar=metavar,
                           help=f"{entry.name} (default {default})")


def _serve_parser(sub) -> None:
    p = sub.add_parser("serve", help="run the emulator")
    p.add_argument("--data-dir", default="none",
                   help="directory for durable state, or 'none' for in-memory only (default %(default)s)")
    p.add_argument("--fsync", choices=("always", "interval", "never"), default="interval",
                   help="when state writes are fsynced: after each write, every --fsync-interval-ms, or never "
                        "(default %(default)s; a killed process loses nothing either way, see docs/operations.md)")
    p.add_argument("--fsync-interval-ms", type=_at_least(1), default=100, help="(default %(default)s)")
    p.add_argument("--http", default=None, metavar="HOST:PORT",
                   help="serve the HTTP admin endpoint (/healthz, ...) on HOST:PORT (default: off)")
    p.add_argument("--journal", default=None, metavar="PATH",
                   help="coordinator event journal (JSON Lines): PATH, or 'none' to disable "
                        "(default: <data-dir>/journal/events.jsonl when --data-dir is set)")
    p.add_argument("--journal-max-bytes", type=_at_least(1), default=64 * 1024 * 1024,
                   help="rotate the journal at this size (default %(default)s)")
    p.add_argument("--journal-topic", default=None, metavar="NAME",
                   help="also append every journal line to topic NAME on this broker (key: group id; "
                        "created if missing), for `kcoord report --kafka` and any Kafka client (default: off)")
    p.add_argument("--faults", default=None, metavar="FILE",
                   help="fault rules active from start: a JSON or YAML list (see docs/faults.md)")
    p.add_argument("--fault", action="append", default=[], metavar="RULE",
                   help="one fault rule, e.g. api=Heartbeat,error=NOT_COORDINATOR,times=3 (repeatable)")
    _kafka_flags(p)
    cl = p.add_argument_group("several brokers in one process (docs/cluster.md)")
    cl.add_argument("--brokers", default="1", metavar="N|HOST:PORT,...",
                    help="how many brokers, on consecutive ports from --listen (each on a free port when it is "
                         "0), node ids 0..N-1; or each broker's HOST:PORT (default %(default)s: one broker, "
                         "node.id)")
    cl.add_argument("--broker-racks", default=None, metavar="RACK,...",
                    help="each broker's rack, in node id order (one broker: broker.rack)")
    cl.add_argument("--coordinator-load-ms", type=_at_least(0), default=100,
                    help="how long a broker takes to load the groups of a __consumer_offsets partition it comes "
                         "to lead; group requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS (default %(default)s)")
    cl.add_argument("--reassignment-copy-rate", type=_at_least(1), default=10 * 1024 * 1024, metavar="BYTES_PER_S",
                    help="how fast a replica added by a partition reassignment copies the partition, before the "
                         "replication throttles (default %(default)s)")
    lim = p.add_argument_group("limits without a Kafka name")
    lim.add_argument("--max-buffered-request-bytes", type=_at_least(1), default=64 * 1024,
                     help="pipelined request bytes read ahead per connection (default %(default)s)")
    sec = p.add_argument_group("security (off by default)")
    sec.add_argument("--sasl-users", default=None, metavar="FILE",
                     help="turn SASL on with users from FILE (name:password per line)")
    sec.add_argument("--tls-cert", default=None, metavar="PEM", help="turn TLS on with this certificate chain")
    sec.add_argument("--tls-key", default=None, metavar="PEM", help="private key of --tls-cert")
    sec.add_argument("--tls-client-ca", default=None, metavar="PEM",
                     help="require client certificates signed by this CA (ssl.client.auth=required)")
    sec.add_argument("--group-acls", default=None, metavar="FILE",
                     help="allow only what FILE's rules allow on groups ('principal operation group' lines); "
                          "turns ACLs on")
    sec.add_argument("--acls", action="store_true",
                     help="turn ACLs on (deny what no ACL allows); kafka-acls manages them at run time")
    sec.add_argument("--super-users", default=None, metavar="PRINCIPALS",
                     help="principals every ACL check allows, ';'-separated (Kafka's super.users), "
                          "e.g. 'User:admin;User:ops'")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ... (default %(default)s)")


def _report_parser(sub) -> None:
    p = sub.add_parser("report", help="rebalance analytics (PySpark) over kcoord journals, Kafka server logs "
                                      "and __consumer_offsets")
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="journal files, Kafka server.log files (.gz too) or directories of them")
    p.add_argument("--kafka", default=None, metavar="HOST:PORT",
                   help="read --topic and/or --offsets-topic from this broker (kcoord or Kafka) with Spark's "
                        "Kafka source")
    p.add_argument("--topic", default=None, metavar="NAME",
                   help="the journal topic (kcoord serve --journal-topic NAME); __consumer_offsets means "
                        "--offsets-topic")
    p.add_argument("--offsets-topic", action="store_true",
                   help="read the broker's __consumer_offsets (the group coordinator's own records, decoded "
                        "with Kafka's schemas): generations, their members and offset commits, once")
    p.add_argument("--follow", action="store_true",
                   help="keep the tables and report current as the topic grows (Spark structured streaming) "
                        "until SIGINT/SIGTERM; needs --kafka and --topic, takes no INPUT")
    p.add_argument("--interval", type=float, default=5.0, metavar="SECONDS",
                   help="--follow: how often to look for new records (default %(default)s)")
    p.add_argument("--max-batches", type=_at_least(1), default=None, metavar="N",
                   help="--follow: stop after N micro-batches with records (default: run until stopped)")
    p.add_argument("--out", required=True, help="output directory (Parquet tables and report.html)")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default %(default)s)")
    p.add_argument("--since", default=None, help="only events at or after this time (ISO 8601, UTC if no zone)")
    p.add_argument("--until", default=None, help="only events before this time (ISO 8601, UTC if no zone)")
    p.add_argument("--log-level", default="WARNING", help="console log level (default %(default)s)")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only `command`'s when it is "serve": a server has no use for
    the other commands' modules and parsers, whose import and set-up delay its start-up
    (~0.09 s of `import kcoord.app` plus the whole parser's 0.46 s here)."""
    parser = argparse.ArgumentParser(prog="kcoord", description="Kafka-compatible group coordinator emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    if command == "serve":
        return parser
    from kcoord.cli import groups as cli_groups

    cli_groups.add_parsers(sub)
    from kcoord.cli import cluster as cli_cluster

    cli_cluster.add_parsers(sub)
    from kcoord.cli import record as record_cli

    record_cli.add_parsers(sub)
    from kcoord.cli import reassign as reassign_cli

    reassign_cli.add_parsers(sub)
    _report_parser(sub)
    _check_parser(sub)
    return parser


def _check_parser(sub) -> None:
    p = sub.add_parser("check", help="run the group-coordination conformance suite against a broker")
    p.add_argument("--bootstrap", required=True, metavar="HOST:PORT")
    p.add_argument("--clients", default="kafka-python,aiokafka,confluent,java",
                   help="comma-separated stock clients for the client scenarios, or 'none' (default %(default)s)")
    p.add_argument("--scenarios", default=None, help="comma-separated scenario names (default: all)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--json", action="store_true",
                   help="print the JSON report (see docs/conformance.md) instead of a table")
    p.add_argument("--log-level", default="WARNING")


def config_from_args(args) -> ServerConfig:
    """The ServerConfig of `kcoord serve`'s arguments; logs the config keys it ignores.
    Raises broker_config.ConfigError for a bad value and OSError for an unreadable --config-file."""
    file_props = broker_config.load_properties(args.config_file) if args.config_file else {}
    flags = {}
    for entry in broker_config.TABLE:
        value = getattr(args, _dest(entry.flag), None) if entry.flag else None
        if value is not None:
            flags[entry.name] = entry.to_string(value)
    resolved = broker_config.resolve(file_props, dict(args.config), flags)
    cfg = ServerConfig(data_dir=None if args.data_dir in (None, "none") else args.data_dir,
                       fsync=args.fsync, fsync_interval_ms=args.fsync_interval_ms,
                       max_buffered_request_bytes=args.max_buffered_request_bytes,
                       sasl_users_file=args.sasl_users, tls_cert_file=args.tls_cert, tls_key_file=args.tls_key,
                       tls_client_ca_file=args.tls_client_ca, group_acls_file=args.group_acls,
                       acls=args.acls, super_users=tuple(
                           p.strip() for p in (args.super_users or "").split(";") if p.strip()))
    broker_config.apply(cfg, resolved)
    _apply_cluster_args(cfg, args)
    broker_config.check_consistency(cfg)
    broker_config.log_warnings(resolved)
    cfg.journal = args.journal
    cfg.journal_max_bytes = args.journal_max_bytes
    if args.journal_topic is not None:
        from kcoord.journal import check_journal_topic

        try:
            check_journal_topic(args.journal_topic)
        except ValueError as err:
            raise BadInput(f"invalid --journal-topic {args.journal_topic}: {err}") from None
        cfg.journal_topic = args.journal_topic
    if args.http:
        cfg.http_host, cfg.http_port = parse_host_port(args.http, default_port=8080)
    if args.faults:
        from kcoord.faults import FaultRuleError, load_rules_file

        try:
            cfg.fault_rules.extend(load_rules_file(args.faults))
        except (ValueError, FaultRuleError) as err:  # json's errors are ValueErrors
            raise BadInput(f"invalid --faults {args.faults}: {err}") from None
    cfg.fault_rules.extend(args.fault)
    return cfg


def _apply_cluster_args(cfg: ServerConfig, args) -> None:
    text = (args.brokers or "1").strip()
    if text.isdigit():
        cfg.brokers = int(text)
        if cfg.brokers < 1:
            raise BadInput(f"--brokers {text}: a cluster needs at least one broker")
    else:
        try:
            cfg.broker_addresses = tuple(parse_host_port(item.strip()) for item in text.split(",") if item.strip())
        except ValueError:
            raise BadInput(f"--brokers {text}: a count, or HOST:PORT for each broker") from None
        if len(set(cfg.broker_addresses)) != len(cfg.broker_addresses):
            raise BadInput(f"--brokers {text}: two brokers on one address")
        cfg.brokers = len(cfg.broker_addresses)
    if args.broker_racks is not None:
        cfg.broker_racks = tuple(r.strip() for r in args.broker_racks.split(","))
        if len(cfg.broker_racks) != cfg.brokers:
            raise BadInput(f"--broker-racks {args.broker_racks}: {len(cfg.broker_racks)} racks for "
                           f"{cfg.brokers} brokers")
    if cfg.brokers > 1 and cfg.listen_port and cfg.listen_port + cfg.brokers - 1 > 65535:
        raise BadInput(f"--brokers {cfg.brokers} from port {cfg.listen_port}: ports run past 65535")
    cfg.coordinator_load_ms = args.coordinator_load_ms
    cfg.reassignment_copy_bytes_per_second = args.reassignment_copy_rate


class BadInput(Exception):
    """A command-line input kcoord cannot use; its text is the one line to print."""


# Flags naming files kcoord reads at start: an unreadable one is named in one line.
_FILE_FLAGS = ("config_file", "faults", "sasl_users", "tls_cert", "tls_key", "tls_client_ca", "group_acls")


def _check_files(args) -> None:
    for dest in _FILE_FLAGS:
        path = getattr(args, dest, None)
        if path is None:
            continue
        try:
            with open(path, "rb"):
                pass
        except OSError as err:
            raise BadInput(f"cannot read --{dest.replace('_', '-')} {path}: {err.strerror or err}") from None


def _check_report_args(args) -> None:
    """What `kcoord report` can refuse before it starts Spark (seconds of JVM start-up)."""
    from kcoord.analytics.job import list_inputs, parse_time

    from kcoord.analytics.job import OFFSETS_TOPIC

    if args.topic == OFFSETS_TOPIC:
        args.topic, args.offsets_topic = None, True
    if args.kafka is not None and args.topic is None and not args.offsets_topic:
        raise BadInput(f"--kafka {args.kafka} needs --topic NAME or --offsets-topic too")
    if args.kafka is None and (args.topic is not None or args.offsets_topic):
        given = f"--topic {args.topic}" if args.topic is not None else "--offsets-topic"
        raise BadInput(f"{given} needs --kafka too")
    if args.follow and args.offsets_topic:
        raise BadInput(f"--follow follows a journal topic; {OFFSETS_TOPIC} is read once (drop --follow)")
    if args.follow and args.kafka is None:
        raise BadInput("--follow needs --kafka HOST:PORT and --topic NAME")
    if args.follow and args.inputs:
        raise BadInput(f"--follow reads only the topic; INPUT {args.inputs[0]} was given too")
    if not args.follow and args.max_batches is not None:
        raise BadInput(f"--max-batches {args.max_batches} needs --follow")
    if args.interval <= 0:
        raise BadInput(f"--interval {args.interval:g} must be positive")
    if not args.inputs and args.kafka is None:
        raise BadInput("nothing to read: give INPUT files or directories, or --kafka HOST:PORT --topic NAME")
    for flag, value in (("--since", args.since), ("--until", args.until)):
        try:
            parse_time(value)
        except ValueError:
            raise BadInput(f"{flag} {value} is not an ISO 8601 time") from None
    try:
        list_inputs(args.inputs)
    except FileNotFoundError as err:
        raise BadInput(str(err)) from None
    if args.kafka is not None:
        _check_topic(args.kafka, args.topic if args.topic is not None else OFFSETS_TOPIC)
        if args.topic is not None and args.offsets_topic:
            _check_topic(args.kafka, OFFSETS_TOPIC)


def _check_topic(kafka: str, topic: str) -> None:
    from kcoord.protocol_client import Admin, ProtocolError

    try:
        parse_host_port(kafka)
    except ValueError:
        raise BadInput(f"--kafka {kafka} is not HOST:PORT") from None
    try:
        with Admin(kafka, timeout=10.0) as admin:
            partitions = admin.topic_partitions(topic)
    except (OSError, ProtocolError) as err:
        raise BadInput(f"cannot reach --kafka {kafka}: {getattr(err, 'strerror', None) or err}") from None
    if partitions is None and topic == "__consumer_offsets":
        raise BadInput(f"--offsets-topic: --kafka {kafka} has no {topic} yet (a broker creates it when a group "
                       f"first looks up its coordinator)")
    if partitions is None:
        raise BadInput(f"--topic {topic}: no such topic on --kafka {kafka} (kcoord serve --journal-topic "
                       f"{topic} creates it)")


def _report(args) -> int:
    from kcoord.analytics import job
    from kcoord.testing.spark_kafka import SparkKafkaUnavailable

    try:
        if not args.follow:
            return job.run_report(args.inputs, args.out, master=args.master, since=args.since, until=args.until,
                                  kafka=args.kafka, topic=args.topic, offsets_topic=args.offsets_topic)
        import threading

        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        return job.run_follow(args.kafka, args.topic, args.out, master=args.master, since=args.since,
                              until=args.until, interval_s=args.interval, max_batches=args.max_batches, stop=stop)
    except SparkKafkaUnavailable as err:
        print(f"kcoord report: Spark's Kafka source is unavailable: {err}", file=sys.stderr, flush=True)
        return 1


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


async def _serve(cfg: ServerConfig) -> int:
    from kcoord.app import Kcoord

    try:
        app = Kcoord(cfg)
        host, port = await app.start()
    except (ValueError, OSError) as err:  # a bad users/ACL/rules file, a busy port, an unreadable data dir
        print(f"kcoord: cannot start: {err}", file=sys.stderr, flush=True)
        return 1
    print(f"kcoord listening on {host}:{port}", flush=True)
    for server in app.servers[1:]:
        print(f"kcoord broker {server.broker.node_id} listening on {server.host}:{server.port}", flush=True)
    if app.http is not None:
        print(f"kcoord admin endpoint on http://{app.http.host}:{app.http.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await app.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    logging.basicConfig(level=getattr(args, "log_level", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.command == "serve":
        # `kill -USR1 PID` prints every thread's stack to stderr: how to see where a server
        # that does not stop (or answer) is waiting, without stopping it.
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        try:
            _check_files(args)
            cfg = config_from_args(args)
        except broker_config.ConfigError as err:
            print(f"kcoord: invalid config {err}", file=sys.stderr, flush=True)
            return 2
        except BadInput as err:
            print(f"kcoord: {err}", file=sys.stderr, flush=True)
            return 2
        try:
            import uvloop  # optional: faster event loop when installed
        except ImportError:
            return asyncio.run(_serve(cfg))
        return uvloop.run(_serve(cfg))
    if args.command == "report":
        try:
            _check_report_args(args)
        except BadInput as err:
            print(f"kcoord report: {err}", file=sys.stderr, flush=True)
            return 2
        return _report(args)
    if args.command == "check":
        from kcoord.conformance import check

        if args.list:
            print("\n".join(check.all_scenarios()))
            return 0
        clients = [] if args.clients in ("", "none") else [c.strip() for c in args.clients.split(",")]
        unknown = set(clients) - set(check.CLIENTS)
        if unknown:
            print(f"kcoord check: unknown --clients {','.join(sorted(unknown))}; known: "
                  f"{', '.join(check.CLIENTS)} or none", file=sys.stderr)
            return 2
        scenarios = None if not args.scenarios else [s.strip() for s in args.scenarios.split(",")]
        unknown = set(scenarios or ()) - set(check.all_scenarios())
        if unknown:
            print(f"kcoord check: unknown --scenarios {','.join(sorted(unknown))} (kcoord check --list names them)",
                  file=sys.stderr)
            return 2
        results = check.run_check(args.bootstrap, clients, scenarios)
        print(check.report_json(args.bootstrap, results) if args.json else check.report_table(results))
        return 0 if check.passed(results) else 1
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
