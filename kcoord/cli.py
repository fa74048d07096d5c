"""`kcoord` command line: `kcoord serve`, `groups`, `wait`, `report`, `check`."""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from kcoord.config import ServerConfig, parse_host_port


def _serve_parser(sub) -> None:
    p = sub.add_parser("serve", help="run the emulator")
    p.add_argument("--listen", default="127.0.0.1:9092", help="HOST:PORT to accept clients on (default %(default)s)")
    p.add_argument("--advertised", default=None,
                   help="HOST:PORT clients are told to connect to (default: the listen address)")
    p.add_argument("--data-dir", default="none",
                   help="directory for durable state, or 'none' for in-memory only (default %(default)s)")
    p.add_argument("--fsync", choices=("always", "interval", "never"), default="interval",
                   help="when state writes are fsynced: after each write, every --fsync-interval-ms, or never "
                        "(default %(default)s; a killed process loses nothing either way, see README)")
    p.add_argument("--fsync-interval-ms", type=int, default=100, help="(default %(default)s)")
    p.add_argument("--initial-rebalance-delay-ms", type=int, default=3000,
                   help="group.initial.rebalance.delay.ms (default %(default)s, as Kafka)")
    p.add_argument("--default-partitions", type=int, default=1,
                   help="num.partitions for auto-created topics (default %(default)s)")
    p.add_argument("--auto-create-topics", action=argparse.BooleanOptionalAction, default=True,
                   help="auto.create.topics.enable (default on)")
    p.add_argument("--http", default=None, metavar="HOST:PORT",
                   help="serve the HTTP admin endpoint (/healthz, ...) on HOST:PORT (default: off)")
    p.add_argument("--journal", default=None, metavar="PATH",
                   help="coordinator event journal (JSON Lines): PATH, or 'none' to disable "
                        "(default: <data-dir>/journal/events.jsonl when --data-dir is set)")
    p.add_argument("--journal-max-bytes", type=int, default=64 * 1024 * 1024,
                   help="rotate the journal at this size (default %(default)s)")
    p.add_argument("--faults", default=None, metavar="FILE",
                   help="fault rules active from start: a JSON or YAML list (see README, Fault injection)")
    p.add_argument("--fault", action="append", default=[], metavar="RULE",
                   help="one fault rule, e.g. api=Heartbeat,error=NOT_COORDINATOR,times=3 (repeatable)")
    lim = p.add_argument_group("limits (Kafka's broker config names and defaults)")
    lim.add_argument("--max-connections", type=int, default=2**31 - 1, help="max.connections")
    lim.add_argument("--max-connections-per-ip", type=int, default=2**31 - 1, help="max.connections.per.ip")
    lim.add_argument("--connections-max-idle-ms", type=int, default=600000,
                     help="connections.max.idle.ms (default %(default)s; -1: never)")
    lim.add_argument("--socket-request-max-bytes", type=int, default=100 * 1024 * 1024,
                     help="socket.request.max.bytes, the largest request frame (default %(default)s)")
    lim.add_argument("--max-buffered-request-bytes", type=int, default=64 * 1024,
                     help="pipelined request bytes read ahead per connection (default %(default)s)")
    lim.add_argument("--group-max-size", type=int, default=2**31 - 1, help="group.max.size")
    sec = p.add_argument_group("security (off by default)")
    sec.add_argument("--sasl-users", default=None, metavar="FILE",
                     help="turn SASL on with users from FILE (name:password per line)")
    sec.add_argument("--sasl-mechanisms", default="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                     help="sasl.enabled.mechanisms (default %(default)s)")
    sec.add_argument("--tls-cert", default=None, metavar="PEM", help="turn TLS on with this certificate chain")
    sec.add_argument("--tls-key", default=None, metavar="PEM", help="private key of --tls-cert")
    sec.add_argument("--tls-client-ca", default=None, metavar="PEM",
                     help="require client certificates signed by this CA (ssl.client.auth=required)")
    sec.add_argument("--group-acls", default=None, metavar="FILE",
                     help="allow only what FILE's rules allow on groups ('principal operation group' lines)")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ... (default %(default)s)")


def _report_parser(sub) -> None:
    p = sub.add_parser("report", help="rebalance analytics (PySpark) over kcoord journals and Kafka server logs")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="journal files, Kafka server.log files (.gz too) or directories of them")
    p.add_argument("--out", required=True, help="output directory (Parquet tables and report.html)")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default %(default)s)")
    p.add_argument("--since", default=None, help="only events at or after this time (ISO 8601, UTC if no zone)")
    p.add_argument("--until", default=None, help="only events before this time (ISO 8601, UTC if no zone)")
    p.add_argument("--log-level", default="WARNING", help="console log level (default %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcoord", description="Kafka-compatible group coordinator emulator")
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    from kcoord import cli_groups

    cli_groups.add_parsers(sub)
    from kcoord.conformance import record_cli

    record_cli.add_parsers(sub)
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
    p.add_argument("--json", action="store_true", help="print the JSON report (see README) instead of a table")
    p.add_argument("--log-level", default="WARNING")


def config_from_args(args) -> ServerConfig:
    host, port = parse_host_port(args.listen)
    cfg = ServerConfig(listen_host=host, listen_port=port,
                       data_dir=None if args.data_dir in (None, "none") else args.data_dir,
                       fsync=args.fsync, fsync_interval_ms=args.fsync_interval_ms,
                       auto_create_topics=args.auto_create_topics,
                       default_partitions=args.default_partitions,
                       initial_rebalance_delay_ms=args.initial_rebalance_delay_ms,
                       max_connections=args.max_connections, max_connections_per_ip=args.max_connections_per_ip,
                       connections_max_idle_ms=args.connections_max_idle_ms,
                       max_frame_bytes=args.socket_request_max_bytes,
                       max_buffered_request_bytes=args.max_buffered_request_bytes,
                       group_max_size=args.group_max_size, sasl_users_file=args.sasl_users,
                       sasl_mechanisms=tuple(m.strip() for m in args.sasl_mechanisms.split(",") if m.strip()),
                       tls_cert_file=args.tls_cert, tls_key_file=args.tls_key,
                       tls_client_ca_file=args.tls_client_ca, group_acls_file=args.group_acls)
    cfg.journal = args.journal
    cfg.journal_max_bytes = args.journal_max_bytes
    if args.http:
        cfg.http_host, cfg.http_port = parse_host_port(args.http, default_port=8080)
    if args.faults:
        from kcoord.faults import load_rules_file

        cfg.fault_rules.extend(load_rules_file(args.faults))
    cfg.fault_rules.extend(args.fault)
    if args.advertised:
        cfg.advertised_host, cfg.advertised_port = parse_host_port(args.advertised)
    return cfg


async def _serve(cfg: ServerConfig) -> int:
    from kcoord.app import Kcoord

    try:
        app = Kcoord(cfg)
        host, port = await app.start()
    except (ValueError, OSError) as err:  # a bad users/ACL/rules file, a busy port, an unreadable data dir
        print(f"kcoord: cannot start: {err}", file=sys.stderr, flush=True)
        return 1
    print(f"kcoord listening on {host}:{port}", flush=True)
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
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=getattr(args, "log_level", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.command == "serve":
        try:
            import uvloop  # optional: faster event loop when installed
        except ImportError:
            return asyncio.run(_serve(config_from_args(args)))
        return uvloop.run(_serve(config_from_args(args)))
    if args.command == "report":
        from kcoord.analytics.job import run_report

        return run_report(args.inputs, args.out, master=args.master, since=args.since, until=args.until)
    if args.command == "check":
        from kcoord.conformance import check

        if args.list:
            print("\n".join(check.all_scenarios()))
            return 0
        clients = [] if args.clients in ("", "none") else [c.strip() for c in args.clients.split(",")]
        unknown = set(clients) - set(check.CLIENTS)
        if unknown:
            print(f"unknown clients {sorted(unknown)}; known: {', '.join(check.CLIENTS)}", file=sys.stderr)
            return args.run(args)
        scenarios = None if not args.scenarios else [s.strip() for s in args.scenarios.split(",")]
        results = check.run_check(args.bootstrap, clients, scenarios)
        print(check.report_json(args.bootstrap, results) if args.json else check.report_table(results))
        return 0 if check.passed(results) else 1
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
