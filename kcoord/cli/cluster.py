"""`kcoord broker` and `kcoord partition`: the brokers of a kcoord and who leads its partitions.

No Kafka API stops a broker or moves one partition's leader, so `broker list|stop|kill|start`
and `partition move` ask the admin endpoint of a kcoord (`kcoord serve --http`). `partition
elect` (ElectLeaders) and `partition balance` (Metadata) speak the Kafka protocol and work on
any Kafka cluster.

Exit status: 0 done; 1 the cluster refused or could not be reached; 2 bad input (an argument,
or a broker, topic or partition that does not exist), with one line saying which.
"""
from __future__ import annotations

import http.client
import json
import sys
from urllib.parse import quote

from kcoord.cli.balance import PartitionLeadership, topic_balance
from kcoord.cli.groups import table
from kcoord.cli.main import BadInput
from kcoord.config import parse_host_port
from kcoord.protocol_client import Admin, ProtocolError
from wire.errors import ErrorCode

ADMIN_DEFAULT = "127.0.0.1:8080"
BOOTSTRAP_DEFAULT = "127.0.0.1:9092"


class Refused(Exception):
    """The cluster refused or could not be reached; the text is the one line to print."""


def add_parsers(sub) -> None:
    b = sub.add_parser("broker", help="list, stop, kill or start the brokers of a kcoord (its admin endpoint)")
    bsub = b.add_subparsers(dest="broker_command", required=True)
    listing = bsub.add_parser("list", help="every broker: address, rack, running, fenced, controller, "
                                           "partitions led, groups coordinated")
    listing.add_argument("--json", action="store_true", help="print GET /brokers' JSON")
    for name, what in (("stop", "controlled shutdown: its partitions move first, then its listener closes"),
                       ("kill", "kill -9: listener and connections reset now, partitions move after "
                                "broker.session.timeout.ms"),
                       ("start", "listen again on the same address, back as a follower")):
        p = bsub.add_parser(name, help=what)
        p.add_argument("broker_id", type=int, metavar="ID")
    for p in bsub.choices.values():
        p.add_argument("--admin", default=ADMIN_DEFAULT, metavar="HOST:PORT",
                       help="kcoord's admin endpoint, kcoord serve --http (default %(default)s)")
        p.set_defaults(run=_run(_broker, "kcoord broker"))

    t = sub.add_parser("partition", help="move a partition's leader, elect preferred leaders, report how "
                                         "leadership spreads if a broker stops")
    tsub = t.add_subparsers(dest="partition_command", required=True)
    move = tsub.add_parser("move", help="make BROKER lead TOPIC's PARTITION (a kcoord's admin endpoint)")
    move.add_argument("topic", metavar="TOPIC")
    move.add_argument("partition", type=int, metavar="PARTITION")
    move.add_argument("broker_id", type=int, metavar="BROKER")
    move.add_argument("--admin", default=ADMIN_DEFAULT, metavar="HOST:PORT",
                      help="kcoord's admin endpoint, kcoord serve --http (default %(default)s)")
    move.set_defaults(run=_run(_move, "kcoord partition move"))
    elect = tsub.add_parser("elect", help="leader election with ElectLeaders (any Kafka), like "
                                          "kafka-leader-election")
    elect.add_argument("partitions", nargs="*", metavar="TOPIC[:PARTITION]",
                       help="what to elect (default: every partition not led by its preferred leader)")
    elect.add_argument("--unclean", action="store_true",
                       help="give a leaderless partition to any running replica (default: preferred)")
    elect.set_defaults(run=_run(_elect, "kcoord partition elect"))
    balance = tsub.add_parser("balance", help="per topic: partitions led per broker now, and after each one "
                                              "broker stops (from Metadata: any Kafka)")
    balance.add_argument("--topic", action="append", default=None, metavar="TOPIC",
                         help="only this topic (repeatable; default: every topic)")
    balance.add_argument("--json", action="store_true", help="print JSON instead of a table")
    balance.set_defaults(run=_run(_balance, "kcoord partition balance"))
    for p in (elect, balance):
        p.add_argument("--bootstrap", default=BOOTSTRAP_DEFAULT, metavar="HOST:PORT",
                       help="any broker of the cluster, or several comma-separated (default %(default)s)")


def _run(command, prog: str):
    def run(args) -> int:
        try:
            return command(args)
        except BadInput as err:
            print(f"{prog}: {err}", file=sys.stderr, flush=True)
            return 2
        except Refused as err:
            print(f"{prog}: {err}", file=sys.stderr, flush=True)
            return 1
    return run


# ------------------------------------------------------------------ the admin endpoint
def _endpoint(args, method: str, path: str, body=None):
    """The admin endpoint's JSON answer; BadInput for a 404 (what it names does not exist),
    Refused for any other refusal or an endpoint it cannot reach."""
    try:
        host, port = parse_host_port(args.admin, default_port=8080)
    except ValueError:
        raise BadInput(f"--admin {args.admin} is not HOST:PORT") from None
    try:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        status, text = response.status, response.read()
        conn.close()
    except OSError as err:
        raise Refused(f"cannot reach --admin {args.admin}: {err.strerror or err}") from None
    try:
        answer = json.loads(text or b"null")
    except ValueError:
        raise Refused(f"--admin {args.admin} answered {status} with no JSON: is it kcoord's admin endpoint?") from None
    if status == 404:
        raise BadInput(answer.get("error") if isinstance(answer, dict) else f"{path}: not found")
    if status >= 400:
        raise Refused(answer.get("error") if isinstance(answer, dict) else f"{path}: HTTP {status}")
    return answer


def _state(broker: dict) -> str:
    if broker["running"]:
        return "running"
    # Killed: the controller still counts it in until its session times out.
    return "stopped" if broker["fenced"] else "down, not yet fenced"


def _broker(args) -> int:
    if args.broker_command == "list":
        brokers = _endpoint(args, "GET", "/brokers")
        if args.json:
            print(json.dumps(brokers, indent=1))
            return 0
        print(table([[b["id"], f"{b['host']}:{b['port']}", b["rack"] or "-", _state(b),
                       "yes" if b["controller"] else "-", b["partitions_led"], b["groups_coordinated"]]
                      for b in brokers],
                     ["ID", "ADDRESS", "RACK", "STATE", "CONTROLLER", "LEADS", "GROUPS"]))
        return 0
    broker = _endpoint(args, "POST", f"/brokers/{args.broker_id}/{args.broker_command}")
    print(f"broker {broker['id']}: {_state(broker)}, leads {broker['partitions_led']} partitions")
    return 0


def _move(args) -> int:
    moved = _endpoint(args, "POST", f"/partitions/{quote(args.topic, safe='')}/{args.partition}/leader",
                      {"broker": args.broker_id})
    print(f"{moved['topic']}-{moved['partition']}: leader {moved['leader']} (epoch {moved['leader_epoch']}), "
          f"replicas {','.join(map(str, moved['replicas']))}, isr {','.join(map(str, moved['isr']))}")
    return 0


# ------------------------------------------------------------------ the Kafka protocol
def _admin(args) -> Admin:
    try:
        for address in args.bootstrap.split(","):
            parse_host_port(address.strip())
    except ValueError:
        raise BadInput(f"--bootstrap {args.bootstrap} is not HOST:PORT[,HOST:PORT...]") from None
    try:
        return Admin(args.bootstrap, timeout=30.0)
    except (OSError, ProtocolError) as err:
        raise Refused(f"cannot reach --bootstrap {args.bootstrap}: {getattr(err, 'strerror', None) or err}") from None


def _topics(admin: Admin, names: list[str] | None, bootstrap: str) -> dict[str, list]:
    """Topic -> its partitions (Metadata), of `names` or every topic; BadInput for one it lacks."""
    answer = admin.metadata(names)
    found = {t.name: sorted(t.partitions, key=lambda p: p.partition_index) for t in answer.topics
             if t.error_code == 0}
    for name in names or ():
        if name not in found:
            raise BadInput(f"no topic {name} on --bootstrap {bootstrap}")
    return found


def _parse_targets(specs: list[str]) -> tuple[dict[str, list[int]], list[str]]:
    """TOPIC:PARTITION arguments as topic -> partitions, and the TOPICs named whole."""
    wanted: dict[str, list[int]] = {}
    whole = []
    for spec in specs:
        topic, sep, partition = spec.rpartition(":")
        if not sep:
            whole.append(spec)
        elif topic and partition.isdigit():
            wanted.setdefault(topic, []).append(int(partition))
        else:
            raise BadInput(f"{spec}: expected TOPIC or TOPIC:PARTITION, PARTITION a number")
    return wanted, whole


def _elect(args) -> int:
    wanted, whole = _parse_targets(args.partitions)
    with _admin(args) as admin:
        for topic, partitions in _topics(admin, sorted(set(whole)), args.bootstrap).items() if whole else ():
            wanted[topic] = sorted({*wanted.get(topic, []), *(p.partition_index for p in partitions)})
        try:
            results = admin.elect_leaders(wanted if args.partitions else None, unclean=args.unclean)
        except (OSError, ProtocolError) as err:
            raise Refused(str(err)) from None
    kind = "unclean" if args.unclean else "preferred"
    if not results:
        print(f"no partition needed a {kind} leader election")
        return 0
    failed = False
    for topic, partition, code, message in sorted(results):
        if code == ErrorCode.NONE:
            print(f"{topic}-{partition}: {kind} leader elected")
            continue
        failed |= code != ErrorCode.ELECTION_NOT_NEEDED
        try:
            name = ErrorCode(code).name
        except ValueError:
            name = f"error {code}"
        print(f"{topic}-{partition}: {name}" + (f" ({message})" if message else ""))
    return 1 if failed else 0


def _leaders(counts: dict[int, int]) -> str:
    return " ".join(f"{b}:{n}" for b, n in sorted(counts.items())) or "-"


def _balance(args) -> int:
    with _admin(args) as admin:
        topics = _topics(admin, args.topic, args.bootstrap)
        running = set(admin.brokers())
    report = []
    for name in sorted(topics):
        partitions = [PartitionLeadership(p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
                      for p in topics[name]]
        now, after = topic_balance(partitions, running)
        report.append((name, len(partitions), now, after))
    if args.json:
        print(json.dumps({"brokers": sorted(running), "topics": [
            {"topic": name, "partitions": count, "now": now.to_json(),
             "stopped": {str(b): s.to_json() for b, s in after.items()}}
            for name, count, now, after in report]}, indent=1))
        return 0
    rows = []
    for name, _, now, after in report:
        for stopped, s in [("-", now), *after.items()]:
            rows.append([name, stopped, _leaders(s.leaders), s.leaderless,
                         "-" if s.max_minus_min is None else s.max_minus_min, "yes" if s.balanced else "no"])
    print(table(rows, ["TOPIC", "STOPPED", "LEADERS", "LEADERLESS", "MAX-MIN", "BALANCED"]) if rows
          else "no topics")
    return 0
