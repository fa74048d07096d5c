"""`kcoord groups` and `kcoord wait`: look at groups on any Kafka-compatible broker."""
from __future__ import annotations

import sys
import time

from kcoord.cli import share_groups, streams_groups
from kcoord.connect_protocol import ERRORS, decode_assignment, decode_metadata, held
from kcoord.protocol_client import Admin, ProtocolError, consumer_assignment


def add_parsers(sub) -> None:
    p = sub.add_parser("groups", help="list groups, or describe one like kafka-consumer-groups --describe")
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="HOST:PORT of any broker (default %(default)s)")
    p.add_argument("--describe", metavar="GROUP", default=None, help="show members, offsets and lag of GROUP")
    p.set_defaults(run=run_groups)

    w = sub.add_parser("wait", help="wait until a group reaches a state (for scripts)")
    w.add_argument("group")
    w.add_argument("--bootstrap", default="127.0.0.1:9092", help="HOST:PORT of any broker (default %(default)s)")
    w.add_argument("--state", default=None, help="Stable, Empty, PreparingRebalance, CompletingRebalance, Dead")
    w.add_argument("--members", type=int, default=None, help="exact number of members")
    w.add_argument("--timeout", type=float, default=60.0, help="seconds (default %(default)s)")
    w.set_defaults(run=run_wait)


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()
    return "\n".join([line(header)] + [line(r) for r in rows])


def describe_rows(admin: Admin, group_id: str) -> tuple[object, list[list[str]]]:
    group = admin.describe_group(group_id)
    owners = {}
    for m in group.members:
        # A consumer group's members come with their partitions (ConsumerGroupDescribe).
        for tp in getattr(m, "partitions", None) or consumer_assignment(m.member_assignment or b""):
            owners[tp] = m
    committed = admin.committed_offsets(group_id)
    partitions = sorted(set(committed) | set(owners))
    ends = admin.log_end_offsets(partitions)
    rows = []
    for tp in partitions:
        m = owners.get(tp)
        current = committed.get(tp)
        end = ends.get(tp)
        lag = end - current if current is not None and end is not None else None
        rows.append([group_id, tp[0], tp[1], "-" if current is None else current, "-" if end is None else end,
                     "-" if lag is None else lag, m.member_id if m else "-",
                     (m.get("group_instance_id") or "-") if m else "-", m.client_id if m else "-",
                     m.client_host if m else "-"])
    return group, rows


def _names(items: list[str]) -> str:
    return ",".join(items) or "-"


def connect_rows(group) -> tuple[list[str], list[list[str]]]:
    """One row per Connect worker: its url and config offset (JoinGroup metadata) and what the
    leader assigned it (SyncGroup assignment), decoded."""
    rows, notes = [], []
    for m in group.members:
        meta = decode_metadata(m.member_metadata or b"")
        a = decode_assignment(m.member_assignment or b"")
        connectors, tasks = held(meta, a)
        rows.append([m.member_id, m.get("group_instance_id") or "-", m.client_host,
                     meta.url if meta and meta.url else "-", "-" if meta is None else meta.config_offset,
                     _names(connectors), _names(tasks),
                     _names(a.connectors + a.tasks) if a else "-",
                     _names(a.revoked_connectors + a.revoked_tasks) if a else "-", a.delay if a else "-"])
        if a is not None and a.leader and not notes:
            notes.append(f"leader {a.leader} at {a.leader_url}, config offset {a.config_offset}, "
                         f"assignment version {a.version}")
        if a is not None and a.error:
            notes.append(f"member {m.member_id}: assignment error {a.error} ({ERRORS.get(a.error, '?')})")
    return notes, rows


# CONNECTORS/TASKS: what the worker runs; ASSIGNED/REVOKED: what the last round's assignment
# added and took away (eager: ASSIGNED is everything it runs).
CONNECT_HEADER = ["MEMBER-ID", "INSTANCE-ID", "HOST", "WORKER-URL", "CONFIG-OFFSET", "CONNECTORS", "TASKS",
                  "ASSIGNED", "REVOKED", "DELAY-MS"]


def run_groups(args) -> int:
    try:
        with Admin(args.bootstrap) as admin:
            if args.describe is None:
                groups, problems = admin.groups_by_coordinator()
                # ListGroups tells no epochs: a streams or share group's come from its describe
                # API, '-' for the other kinds.
                described = {"streams": streams_groups.epochs, "share": share_groups.epochs}
                rows = [[*g, *(described[g[1]](admin, g[0]) if g[1] in described else ("-", "-"))]
                        for g in groups]
                print(table(rows, ["GROUP", "PROTOCOL-TYPE", "STATE", "COORDINATOR", "GROUP-EPOCH",
                                   "ASSIGNMENT-EPOCH"]) if groups else "no groups")
                for problem in problems:   # the groups it coordinates are missing above
                    print(f"kcoord groups: cannot list the groups of {problem}", file=sys.stderr)
                return 1 if problems else 0
            streams = streams_groups.describe(admin, args.describe)
            if streams is not None:
                streams_groups.print_described(admin, streams, admin.coordinator_id(args.describe), table)
                return 0
            share = share_groups.describe(admin, args.describe)
            if share is not None:
                share_groups.print_described(admin, share, admin.coordinator_id(args.describe), table)
                return 0
            group = admin.describe_group(args.describe)
            coordinator = f"coordinator {admin.coordinator_id(args.describe)}"
            if group.protocol_type == "connect":
                notes, rows = connect_rows(group)
                print(f"group {args.describe}: {coordinator}, state {group.group_state}, protocol type connect, "
                      f"protocol {group.protocol_data or '-'}, {len(group.members)} workers")
                for note in notes:
                    print(note)
                if rows:
                    print(table(rows, CONNECT_HEADER))
                return 0
            group, rows = describe_rows(admin, args.describe)
            print(f"group {args.describe}: {coordinator}, state {group.group_state}, protocol "
                  f"{group.protocol_data or '-'}, {len(group.members)} members")
            if rows:
                print(table(rows, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                    "MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST"]))
            for m in group.members:
                if not (getattr(m, "partitions", None) or consumer_assignment(m.member_assignment or b"")):
                    print(f"member {m.member_id} ({m.client_id}@{m.client_host}) holds no partitions")
            return 0
    except (OSError, ProtocolError) as err:
        print(f"kcoord groups: {err}", file=sys.stderr)
        return 1


def run_wait(args) -> int:
    deadline = time.monotonic() + args.timeout
    seen = "nothing yet"
    while True:
        try:
            with Admin(args.bootstrap) as admin:
                while True:
                    group = admin.describe_group(args.group)
                    seen = f"{group.group_state} with {len(group.members)} members"
                    if ((args.state is None or group.group_state == args.state)
                            and (args.members is None or len(group.members) == args.members)):
                        print(f"group {args.group} is {seen}")
                        return 0
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.2)
        except (OSError, ProtocolError) as err:
            seen = f"unreachable ({err})"
        if time.monotonic() >= deadline:
            print(f"kcoord wait: group {args.group} did not reach state={args.state} members={args.members} "
                  f"within {args.timeout:g}s; last seen: {seen}", file=sys.stderr)
            return 1
        time.sleep(0.5)
