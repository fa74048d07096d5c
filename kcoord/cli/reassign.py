"""`kcoord reassign plan` and `kcoord reassign score`: plan partition reassignments for any
Kafka-compatible cluster (read over the admin protocol) and measure a placement on the six
criteria of docs/reassignment.md.

`plan` prints Kafka's reassignment JSON for `kafka-reassign-partitions --execute` (and changes
nothing); `score` prints the six numbers for the cluster as it is, or as a plan would leave it.
Exit status: 0 done; 1 one line on stderr says what was wrong (an unknown broker or topic, an
impossible rack constraint, an unreachable cluster, a plan that no longer matches the cluster);
2 a malformed argument (argparse, or a --bootstrap that is not HOST:PORT).
"""
from __future__ import annotations

import json
import sys

from kcoord.cli.cluster import BOOTSTRAP_DEFAULT, Refused, _admin, _run
from kcoord.protocol_client import ProtocolError
from kcoord.reassign.model import Cluster, PlanError, changed, parse_reassignment_json, reassignment_json
from kcoord.reassign.plan import OBJECTIVES, Options, plan, target_brokers
from kcoord.reassign.score import score


def add_parsers(sub) -> None:
    r = sub.add_parser("reassign", help="plan partition reassignments (Kafka's JSON) and score placements")
    rsub = r.add_subparsers(dest="reassign_command", required=True)
    p = rsub.add_parser("plan", help="print a reassignment plan (kafka-reassign-partitions --execute JSON)")
    p.add_argument("--objective", default="bytes", choices=OBJECTIVES,
                   help="balance storage by partition bytes or by replica count alone (default %(default)s)")
    p.add_argument("--tolerance", type=float, default=Options.tolerance, metavar="FRACTION",
                   help="a byte spread up to this fraction of a broker's mean share counts as balanced "
                        "(default %(default)s)")
    p.add_argument("--output", default=None, metavar="FILE", help="write the JSON here instead of stdout")
    p.set_defaults(run=_run(_refusing(_plan), "kcoord reassign plan"))
    s = rsub.add_parser("score", help="the six criteria for the cluster now, or after --plan")
    s.add_argument("--plan", default=None, metavar="FILE", help="Kafka reassignment JSON to score")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(run=_run(_refusing(_score), "kcoord reassign score"))
    for each in (p, s):
        each.add_argument("--bootstrap", default=BOOTSTRAP_DEFAULT, metavar="HOST:PORT",
                          help="any broker of the cluster, or several comma-separated (default %(default)s)")
        each.add_argument("--add-broker", type=int, action="append", default=[], metavar="ID",
                          help="a registered broker to move replicas onto (repeatable)")
        each.add_argument("--remove-broker", type=int, action="append", default=[], metavar="ID",
                          help="a broker to move every replica off (repeatable)")
        each.add_argument("--topics", default=None, metavar="T,...",
                          help="only these topics (default: every topic but internal ones)")


def _refusing(command):
    """The command, a PlanError (the cluster cannot be planned as asked) becoming a refusal: exit 1."""
    def run(args) -> int:
        try:
            return command(args)
        except PlanError as err:
            raise Refused(str(err)) from None
    return run


def _options(args) -> Options:
    topics = None if args.topics is None else frozenset(t.strip() for t in args.topics.split(",") if t.strip())
    return Options(add=tuple(args.add_broker), remove=tuple(args.remove_broker), topics=topics,
                   objective=getattr(args, "objective", "bytes"),
                   tolerance=getattr(args, "tolerance", Options.tolerance))


def _cluster(args, options: Options) -> Cluster:
    from kcoord.reassign.fetch import read_cluster

    with _admin(args) as admin:
        try:
            cluster, problems = read_cluster(admin, include_internal=bool(options.topics))
        except (OSError, ProtocolError) as err:
            raise Refused(f"reading --bootstrap {args.bootstrap}: {getattr(err, 'strerror', None) or err}") \
                from None
    for line in problems:
        print(f"warning: {line} (its replicas count as empty)", file=sys.stderr)
    return cluster


def _plan(args) -> int:
    if not 0 <= args.tolerance < 1:
        raise Refused(f"--tolerance {args.tolerance}: expected a fraction from 0 up to 1")
    options = _options(args)
    cluster = _cluster(args, options)
    planned = plan(cluster, options)
    text = json.dumps(reassignment_json(changed(cluster, planned)))
    if args.output:
        with open(args.output, "w") as out:
            out.write(text + "\n")
    else:
        print(text)
    return 0


def _score(args) -> int:
    options = _options(args)
    text = None
    if args.plan:
        try:
            with open(args.plan) as f:
                text = f.read()
        except OSError as err:
            raise Refused(f"--plan {args.plan}: {err.strerror}") from None
    cluster = _cluster(args, options)
    targets = target_brokers(cluster, options)
    before = cluster.topics(options.topics) if options.topics is not None else cluster
    after = before.with_assignment(parse_reassignment_json(text)) if text is not None else before
    replanned = plan(after, Options(topics=options.topics, objective="bytes"))
    result = score(before, after, targets, replan_moves=len(changed(after, replanned)))
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    rows = [("bytes per broker (max)", result.bytes_max), ("bytes per broker (min)", result.bytes_min),
            ("bytes max/min", "inf" if result.bytes_ratio == float("inf") else f"{result.bytes_ratio:.3f}"),
            ("rack violations", result.rack_violations), ("partitions moved", result.partitions_moved),
            ("bytes moved", result.bytes_moved), ("leader spread", result.leader_spread),
            ("moves on re-planning", result.replan_moves),
            ("worst leader spread, one broker down", result.broker_down_spread)]
    width = max(len(name) for name, _ in rows)
    print("\n".join(f"{name:<{width}}  {value}" for name, value in rows))
    return 0

