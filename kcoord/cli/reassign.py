"""`kcoord reassign plan`, `score` and `apply`: plan partition reassignments for any
Kafka-compatible cluster (read over the admin protocol), measure a placement on the six
criteria of docs/reassignment.md, and carry a plan out.

`plan` prints Kafka's reassignment JSON for `kafka-reassign-partitions --execute` (and changes
nothing); `score` prints the six numbers for the cluster as it is, or as a plan would leave it;
`apply` moves the plan's partitions in batches (kcoord.reassign.apply), progress on stderr, a
summary line on stdout.
Exit status: 0 done; 1 one line on stderr says what was wrong (an unknown broker or topic, an
impossible rack constraint, an unreachable cluster, a plan that no longer matches the cluster,
a batch the cluster refused or that outlived --timeout); 2 a malformed argument (argparse, or a
--bootstrap that is not HOST:PORT); 130 / 143 an apply interrupted by Ctrl-C / SIGTERM (its
moves go on; the same command resumes it).
"""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from kcoord.cli.cluster import BOOTSTRAP_DEFAULT, Refused, _admin, _run
from kcoord.cli.main import _at_least
from kcoord.protocol_client import ProtocolError
from kcoord.reassign.apply import Settings
from kcoord.reassign.model import Cluster, PlanError, changed, parse_plan, parse_reassignment_json, reassignment_json
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
    a = rsub.add_parser("apply", help="carry out a plan in batches, with a throttle and progress; resumable")
    a.add_argument("--plan", required=True, metavar="FILE", help="the plan (Kafka's reassignment JSON)")
    a.add_argument("--batch", type=_at_least(1), default=Settings.batch, metavar="N",
                   help="partitions reassigned at a time (default %(default)s)")
    a.add_argument("--throttle", type=_at_least(1), default=None, metavar="BYTES_PER_S",
                   help="replication throttle while it runs, as kafka-reassign-partitions --throttle "
                        "(default: none set); cleared once the plan is complete")
    a.add_argument("--state", default=None, metavar="FILE",
                   help="where the batches done are kept (default: the plan's name with .state.json)")
    a.add_argument("--timeout", type=_at_least(1), default=None, metavar="S",
                   help="give up when a batch takes longer (its moves go on; default: wait)")
    a.add_argument("--no-base-check", dest="check_base", action="store_false",
                   help="apply a plan without kcoord's record of the replicas it was made against "
                        "(e.g. from kafka-reassign-partitions --generate) to the cluster as it is")
    a.add_argument("--bootstrap", default=BOOTSTRAP_DEFAULT, metavar="HOST:PORT",
                   help="any broker of the cluster, or several comma-separated (default %(default)s)")
    a.set_defaults(run=_run(_refusing(_apply), "kcoord reassign apply"))
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


def _cluster(args, options: Options) -> tuple[Cluster, str | None]:
    """The cluster as the planner sees it, and its id."""
    from kcoord.reassign.fetch import cluster_id, read_cluster

    with _admin(args) as admin:
        try:
            cluster, problems = read_cluster(admin, include_internal=bool(options.topics))
            identity = cluster_id(admin)
        except (OSError, ProtocolError) as err:
            raise Refused(f"reading --bootstrap {args.bootstrap}: {getattr(err, 'strerror', None) or err}") \
                from None
    for line in problems:
        print(f"warning: {line} (its replicas count as empty)", file=sys.stderr)
    return cluster, identity


def _plan(args) -> int:
    if not 0 <= args.tolerance < 1:
        raise Refused(f"--tolerance {args.tolerance}: expected a fraction from 0 up to 1")
    options = _options(args)
    cluster, identity = _cluster(args, options)
    planned = plan(cluster, options)
    moves = changed(cluster, planned)
    # The replicas each move starts from: `kcoord reassign apply` refuses the plan once they differ.
    text = json.dumps(reassignment_json(moves, {k: cluster.partition(k).replicas for k in moves}, identity))
    if args.output:
        with open(args.output, "w") as out:
            out.write(text + "\n")
    else:
        print(text)
    return 0


class _Terminated(Exception):
    """SIGTERM, raised where the apply is, as Ctrl-C raises KeyboardInterrupt."""


def _apply(args) -> int:
    from kcoord.reassign.apply import Applier, ApplyError, StateFile, default_state_path, fingerprint
    from kcoord.reassign.progress import Bar, Lines, summary_line

    plan = parse_plan(_read_plan(args.plan))
    state = StateFile.load(Path(args.state) if args.state else default_state_path(args.plan), fingerprint(plan))
    reporter = Bar(sys.stderr) if sys.stderr.isatty() else Lines(sys.stderr)
    settings = Settings(batch=args.batch, throttle=args.throttle, timeout=args.timeout, check_base=args.check_base)

    def terminated(signum, frame):
        raise _Terminated()

    with _admin(args) as admin:
        applier = Applier(admin, plan, state, settings, reporter)
        previous = signal.signal(signal.SIGTERM, terminated)
        try:
            summary = applier.run()
        except (KeyboardInterrupt, _Terminated) as stop:
            where = applier.current
            reporter.line("kcoord reassign apply: interrupted"
                          + (f" in batch {where.batch}/{where.batches}: its reassignments go on in the cluster"
                             if where else "")
                          + f"; run the same command again to resume (state: {state.path})")
            return 128 + (signal.SIGINT if isinstance(stop, KeyboardInterrupt) else signal.SIGTERM)
        except ApplyError as err:
            raise Refused(str(err)) from None
        except (OSError, ProtocolError) as err:
            raise Refused(f"--bootstrap {args.bootstrap}: {getattr(err, 'strerror', None) or err}; the same "
                          f"command goes on from where this one stopped (state: {state.path})") from None
        finally:
            signal.signal(signal.SIGTERM, previous)
    print(summary_line(summary))
    return 0


def _read_plan(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as err:
        raise Refused(f"--plan {path}: {err.strerror}") from None


def _score(args) -> int:
    options = _options(args)
    text = _read_plan(args.plan) if args.plan else None
    cluster, _ = _cluster(args, options)
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

