"""`kcoord record`: a recording proxy in front of one broker (see kcoord.conformance.recorder)."""
from __future__ import annotations

import sys


def add_parsers(sub) -> None:
    p = sub.add_parser("record", help="proxy a broker and write every request/response exchange as JSON lines")
    p.add_argument("--upstream", required=True, metavar="HOST:PORT", help="the broker to proxy")
    p.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT",
                   help="where clients connect (default %(default)s: a free port, printed on start)")
    p.add_argument("--advertised", default=None, metavar="HOST:PORT",
                   help="the address written into Metadata/FindCoordinator/DescribeCluster answers "
                        "(default: the listen address)")
    p.add_argument("--out", required=True, metavar="FILE", help="transcript (JSON lines, appended)")
    p.add_argument("--log-level", default="WARNING")
    p.set_defaults(run=run_record)


def run_record(args) -> int:
    from kcoord.conformance.rawclient import parse_bootstrap
    from kcoord.conformance.recorder import run_forever

    upstream = parse_bootstrap(args.upstream)
    listen = parse_bootstrap(args.listen)
    advertised = parse_bootstrap(args.advertised) if args.advertised else None

    def ready(address):
        print(f"kcoord record: {address[0]}:{address[1]} -> {upstream[0]}:{upstream[1]}, writing {args.out}",
              flush=True)

    try:
        return run_forever(upstream, listen, args.out, on_ready=ready, advertised=advertised)
    except OSError as err:
        print(f"kcoord record: {err}", file=sys.stderr)
        return 1
