"""One event schema for both inputs, and the parsers that fill it.

Parsers are plain Python so the Spark job and the single-process baseline
(bench/report.py) run the very same code. A line that does not parse is never
an error: it is counted under a skip reason.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from kcoord.analytics import share
from kcoord.analytics.streams import task_text

FIELDS = ["time_ms", "source", "broker", "group_id", "kind", "generation", "state_before", "state_after",
          "member_id", "instance_id", "client_id", "client_host", "reason", "protocol", "members", "commits",
          "partition", "transactional_id", "producer_id", "result", "txn_partitions", "tasks", "counts"]

# Where a group's coordinator went away and came back (kcoord.analytics.failover). `partition` is the
# group's __consumer_offsets partition; `broker` the broker that loaded or unloaded it.
COORDINATOR_UNLOADED = "coordinator_unloaded"
COORDINATOR_LOADED = "coordinator_loaded"
# Kafka logs only: the broker became the partition's leader and began loading it, one row per group
# it then loaded (its "Scheduling loading" line names the partition, not the groups).
COORDINATOR_LOADING = "coordinator_loading"
# Kafka logs only, no group: a follower's replica fetcher lost its connection to this broker, the
# partition leader, which is how a killed broker shows in the logs of the others. Kept out of the
# events table; a failover window with no unload logged starts at it.
BROKER_DISCONNECTED = "_broker_disconnected"

# Skip reasons (counted per input).
SKIP_MALFORMED = "malformed"          # a journal line that is not a JSON object with kind/time/group
SKIP_UNRECOGNISED = "unrecognised"    # a group-coordinator log line whose message we do not know
SKIP_BAD_TIMESTAMP = "bad_timestamp"  # looks like log4j but the time does not parse
SKIP_NOT_LOG4J = "not_log4j"          # neither a log4j line nor a continuation we can attribute


def _int(value) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def event(time_ms, source, broker, group_id, kind, **kw) -> dict:
    row = dict.fromkeys(FIELDS)
    row.update(time_ms=time_ms, source=source, broker=broker, group_id=group_id, kind=kind)
    row.update(kw)
    return row


# ---------------------------------------------------------------- journal
def parse_journal_line(line: str, broker: str = "kcoord"):
    """-> event dict, or (skip reason, None) tuple when malformed; None for blank lines."""
    line = line.strip()
    if not line:
        return None
    try:
        rec = json.loads(line)
        kind = rec["kind"]
        time_ms = int(rec["time_ms"])
        if "transactional_id" in rec:
            return _transaction_event(rec, kind, time_ms, broker)
        group = rec["group_id"]
        if not isinstance(kind, str) or not isinstance(group, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        return (SKIP_MALFORMED, None)
    if kind == "offset_commits":
        return event(time_ms, "journal", broker, group, kind, commits=int(rec.get("commits") or 0))
    if kind == "offsets_committed":  # should not happen (the journal aggregates), but count it if it does
        return event(time_ms, "journal", broker, group, "offset_commits", commits=1)
    if kind == share.SHARE_RECORDS:
        return event(time_ms, "journal", broker, group, kind, member_id=rec.get("member_id"),
                     counts=share.counts_of(rec))
    gen = rec.get("generation")
    details = rec.get("details") if isinstance(rec.get("details"), dict) else {}
    if kind in (COORDINATOR_LOADED, COORDINATOR_UNLOADED):
        # which of kcoord's brokers: the journal's other records are the whole kcoord's
        if details.get("node") is not None:
            broker = f"broker-{details['node']}"
    # A streams member's tasks (kcoord.analytics.streams.task_text): the ones it is revoking.
    revoking = details.get("revoking") if kind == "tasks_revoking" else None
    return event(time_ms, "journal", broker, group, kind,
                 partition=_int(details.get("partition")),
                 tasks=f"revoking {task_text(revoking)}" if isinstance(revoking, dict) else None,
                 generation=int(gen) if gen is not None else None,
                 state_before=rec.get("state_before"), state_after=rec.get("state_after"),
                 member_id=rec.get("member_id"), instance_id=rec.get("instance_id"),
                 client_id=rec.get("client_id"), client_host=rec.get("client_host"),
                 reason=rec.get("reason"), protocol=rec.get("protocol"),
                 members=int(rec["members"]) if rec.get("members") is not None else None)


def _transaction_event(rec: dict, kind, time_ms: int, broker: str) -> dict:
    """A transaction's record: no group (`group_id` null), `generation` the producer epoch."""
    txn = rec["transactional_id"]
    if not isinstance(kind, str) or not isinstance(txn, str):
        raise TypeError
    return event(time_ms, "journal", broker, None, kind, transactional_id=txn,
                 producer_id=_int(rec.get("producer_id")), generation=_int(rec.get("producer_epoch")),
                 result=rec.get("result"), txn_partitions=_int(rec.get("partitions")))


# ---------------------------------------------------------------- Kafka server.log
# [2024-05-01 10:00:00,123] INFO [GroupCoordinator 1]: message (kafka.coordinator.group.GroupCoordinator)
# [2025-05-01 10:00:00,123] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] message (org...)
LOG4J = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*)$")
# Kafka 4's shard lines name their __consumer_offsets partition in the prefix.
COORD_PREFIX = re.compile(r"^\[GroupCoordinator (?:id=)?(\d+)(?: topic=\S+ partition=(\d+))?[^\]]*\]:? (.*)$")
# Kafka 2.x/3.x load and unload __consumer_offsets partitions in GroupMetadataManager.
LOADER_PREFIX = re.compile(r"^\[GroupMetadataManager brokerId=(\d+)\] (.*)$")
# A follower's fetcher losing its partition leader: the first sign, in the others' logs, of a broker
# that died without a word.
FETCHER_LOST_LEADER = re.compile(r"^\[ReplicaFetcher replicaId=\d+, leaderId=(\d+), fetcherId=\d+\] "
                                 r"Node (\d+) disconnected\.?$")
LOGGER_SUFFIX = re.compile(r" \((?:kafka|org\.apache\.kafka)\.[\w.$]+\)\s*$")

_OFFSETS_TP = r"(?: \(__consumer_offsets-\d+\))?"
MEMBER_TOSTRING = re.compile(r"MemberMetadata\(memberId=([^,]+), groupInstanceId=(?:Some\(([^)]*)\)|None|[^,]*), "
                             r"clientId=([^,]*), clientHost=/?([^,]*),")

PATTERNS = [
    ("rebalance_started", re.compile(
        r"^Preparing to rebalance group (?P<g>\S+) in state (?P<s>\w+) with old generation (?P<gen>-?\d+)"
        + _OFFSETS_TP + r" \(reason: (?P<reason>.*)\)\.?$")),
    # Kafka logs "Stabilized" when the join phase completes (CompletingRebalance); the group is
    # Stable only once the leader's assignment arrives.
    ("join_completed", re.compile(
        r"^Stabilized group (?P<g>\S+) generation (?P<gen>\d+)" + _OFFSETS_TP
        + r"(?: with (?P<n>\d+) members)?\.?$")),
    ("empty", re.compile(r"^Group (?P<g>\S+) with generation (?P<gen>\d+) is now empty" + _OFFSETS_TP + r"\.?$")),
    ("member_expired", re.compile(r"^Member (?P<m>\S+) in group (?P<g>\S+) has failed, removing it from the group\.?$")),
    ("member_expired", re.compile(r"^\[Group (?P<g>[^\]]+)\] Member (?P<m>\S+) has failed, removing it from the group\.?$")),
    ("pending_member_expired", re.compile(
        r"^Pending member (?P<m>\S+) in group (?P<g>\S+) has been removed after session timeout expiration\.?$")),
    # 3.x: "Member MemberMetadata(...) has left group G through explicit `LeaveGroup`[ request][; client reason: R]"
    ("member_left", re.compile(
        r"^Member (?P<member>.+?) has left group (?P<g>\S+) through explicit `LeaveGroup`(?: request)?"
        r"(?:; client reason: (?P<reason>.*?))?\.?$")),
    # 4.x: "[Group G] Member M has left group through explicit `LeaveGroup` request; client reason: R"
    ("member_left", re.compile(
        r"^\[Group (?P<g>[^\]]+)\] Member (?P<m>\S+) has left group through explicit `LeaveGroup`(?: request)?"
        r"(?:; client reason: (?P<reason>.*?))?\.?$")),
    # 2.x: "Member[group.instance.id Some(i), member.id M] in group G has left, removing it from the group"
    ("member_left", re.compile(
        r"^Member\[group\.instance\.id (?:Some\((?P<i>[^)]*)\)|None), member\.id (?P<m>[^\]]+)\] in group (?P<g>\S+) "
        r"has left, removing it from the group\.?$")),
    ("stable", re.compile(
        r"^Assignment received from leader(?: (?P<m>\S+))? for group (?P<g>\S+) for generation (?P<gen>\d+)"
        r"(?:\. The group has (?P<n>\d+) members, \d+ of which are static)?\.?$")),
    ("member_joined", re.compile(
        r"^Dynamic [Mm]ember with unknown member id joins group (?P<g>\S+) in (?P<s>\w+) state\. "
        r"Created a new member id (?P<m>\S+?)(?: and .*)?\.?$")),
    ("member_replaced", re.compile(
        r"^Static member (?P<i>\S+) of group (?P<g>\S+) with unknown member id rejoins, assigning new member id "
        r"(?P<m>[^\s,]+),? while old member id (?P<old>\S+?) will be removed\.?$")),
    ("member_replaced", re.compile(
        r"^Static member with groupInstanceId=(?P<i>\S+) and unknown member id joins group (?P<g>\S+) in (?P<s>\w+) "
        r"state\. Replacing previously mapped member (?P<old>\S+) with this groupInstanceId\.?$")),
    ("static_rejoin_no_rebalance", re.compile(
        r"^Static member which joins during Stable stage and doesn't affect selectProtocol will not trigger "
        r"rebalance\.?$")),
    ("dead", re.compile(r"^Group (?P<g>\S+) transitioned to Dead in generation (?P<gen>\d+)\.?$")),
]
# Loading and unloading a __consumer_offsets partition, in Kafka 4's CoordinatorRuntime words and in
# Kafka 2.x/3.x GroupMetadataManager's. A follower logs "Scheduling unloading" too (and then "Ignored
# unloading ... never loaded"), so only a named group's unload line counts as one.
PARTITION_LOAD_SCHEDULED = re.compile(
    r"^Scheduling loading of (?:metadata|offsets and group metadata) from __consumer_offsets-(?P<p>\d+)\b")
PARTITION_LOAD_FINISHED = re.compile(
    r"^Finished loading (?:of metadata|offsets and group metadata) from __consumer_offsets-(?P<p>\d+)\b")
PARTITION_UNLOAD_FINISHED = re.compile(r"^Finished unloading (?:metadata for )?__consumer_offsets-(?P<p>\d+)\b")
GROUP_LOADED = [
    # 4.x, with the partition in the line's prefix
    re.compile(r"^Loaded (?:classic|consumer|share|streams) group (?P<g>\S+) with (?P<n>\d+) members\.?$"),
    # 2.x/3.x GroupCoordinator, between its partition's "Scheduling loading" and "Finished loading"
    re.compile(r"^Loading group metadata for (?P<g>\S+) with generation (?P<gen>-?\d+)\.?$"),
]
GROUP_UNLOADED = [
    re.compile(r"^\[GroupId=(?P<g>[^\]]+)\] (?:Unloading group metadata for generation|"
               r"Unloaded group metadata for group epoch) (?P<gen>-?\d+)\.?$"),
    re.compile(r"^Unloading group metadata for (?P<g>\S+) with generation (?P<gen>-?\d+)\.?$"),
]

# Lines of the group coordinator we recognise as group-related but do not model: counted, not fatal.
GROUP_HINT = re.compile(r"\bgroup\b", re.IGNORECASE)


def _ts_ms(text: str) -> int:
    # log4j's default server.log layout has no zone; kafka brokers in the wild run on UTC
    dt = datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


class KafkaLogParser:
    """Stateful per input stream: a 'will not trigger rebalance' line names no group, so it is
    attributed to the static rejoin that the same broker logged just before it."""

    def __init__(self):
        self.last_static_group: str | None = None
        # (broker, partition) -> when that broker began loading it
        self.loading_since: dict[tuple[str, int], int] = {}
        # broker -> group lines of Kafka 2.x/3.x waiting for the partition the loader finishes next
        # (its single scheduler thread loads or unloads one partition at a time)
        self.unplaced: dict[str, list[dict]] = {}

    def finish(self) -> list[dict]:
        """Rows still held at the end of the input: group loads and unloads whose partition never
        finished loading in it."""
        rows = [row for held in self.unplaced.values() for row in held]
        self.unplaced.clear()
        return rows

    def parse(self, line: str):
        """-> event dict, or a list of them; (skip reason, None) for a line we cannot use; None for
        lines that are not ours."""
        line = line.rstrip("\r\n")
        if not line.strip():
            return None
        m = LOG4J.match(line)
        if m is None:
            # stack traces and wrapped messages: not a coordinator event, but a malformed head line is
            return None if line[:1] in (" ", "\t") or line.startswith(("Caused by", "java.", "org.")) \
                else (SKIP_NOT_LOG4J, None)
        ts, _level, rest = m.groups()
        c = COORD_PREFIX.match(rest)
        if c is not None:
            broker_id, partition, msg = c.groups()
        else:
            c = LOADER_PREFIX.match(rest)
            if c is None:
                return self._lost_leader(ts, LOGGER_SUFFIX.sub("", rest).strip())
            (broker_id, msg), partition = c.groups(), None
        msg = LOGGER_SUFFIX.sub("", msg).strip()
        try:
            time_ms = _ts_ms(ts)
        except ValueError:
            return (SKIP_BAD_TIMESTAMP, None)
        broker = f"broker-{broker_id}"
        moved = self._coordinator_move(time_ms, broker, None if partition is None else int(partition), msg)
        if moved is not False:
            return moved
        if c.re is LOADER_PREFIX:
            return None  # the 2.x/3.x loader's other lines (expired offsets, ...)
        for kind, rx in PATTERNS:
            p = rx.match(msg)
            if p is None:
                continue
            d = p.groupdict()
            group = d.get("g") or self.last_static_group
            if group is None:
                return (SKIP_UNRECOGNISED, None)
            row = event(time_ms, "kafka-log", broker, group, kind,
                        generation=int(d["gen"]) if d.get("gen") else None,
                        member_id=d.get("m"), instance_id=d.get("i") or None, reason=d.get("reason"))
            if row["instance_id"]:
                row["instance_id"] = _unwrap_option(row["instance_id"])
            if kind == "rebalance_started":
                row["state_before"], row["state_after"] = d.get("s"), "PreparingRebalance"
            elif kind in ("join_completed", "stable"):
                row["state_after"] = "CompletingRebalance" if kind == "join_completed" else "Stable"
                row["members"] = int(d["n"]) if d.get("n") else None
            elif kind == "empty":
                row["state_after"] = "Empty"
            elif kind == "member_left" and d.get("member"):
                mm = MEMBER_TOSTRING.match(d["member"])
                if mm:
                    row["member_id"], row["instance_id"], row["client_id"], row["client_host"] = mm.groups()
                else:
                    row["member_id"] = d["member"]
            elif kind == "member_replaced":
                row["reason"] = f"replaces {d.get('old')}"
                self.last_static_group = group
            if row["member_id"] and not row["client_id"]:
                from kcoord.analytics.rebalances import client_of
                row["client_id"] = client_of(row["member_id"])
            if kind != "member_replaced" and kind != "static_rejoin_no_rebalance":
                self.last_static_group = None
            return row
        if GROUP_HINT.search(msg) and ("rebalance" in msg.lower() or "member" in msg.lower()):
            return (SKIP_UNRECOGNISED, None)
        return None  # offsets loading, metadata cache etc.: not a membership event


    @staticmethod
    def _lost_leader(ts: str, msg: str):
        f = FETCHER_LOST_LEADER.match(msg)
        if f is None or f.group(1) != f.group(2):
            return None  # another component's line (log cleaner, controller, ...)
        try:
            time_ms = _ts_ms(ts)
        except ValueError:
            return (SKIP_BAD_TIMESTAMP, None)
        return event(time_ms, "kafka-log", f"broker-{f.group(1)}", "", BROKER_DISCONNECTED)

    def _coordinator_move(self, time_ms: int, broker: str, partition: int | None, msg: str):
        """The rows of a load or unload line (None if it makes none yet); False: not such a line."""
        p = PARTITION_LOAD_SCHEDULED.match(msg)
        if p:
            self.loading_since[(broker, int(p["p"]))] = time_ms
            return None
        p = PARTITION_LOAD_FINISHED.match(msg) or PARTITION_UNLOAD_FINISHED.match(msg)
        if p:
            loaded = p.re is PARTITION_LOAD_FINISHED
            index = int(p["p"])
            held = self.unplaced.pop(broker, [])
            rows = [r for r in held if (r["kind"] == COORDINATOR_LOADED) == loaded]
            if len(rows) < len(held):
                self.unplaced[broker] = [r for r in held if (r["kind"] == COORDINATOR_LOADED) != loaded]
            out = []
            for row in rows:
                out += self._placed(row, index)
            if loaded:
                self.loading_since.pop((broker, index), None)
            return out or None
        for kind, patterns in ((COORDINATOR_LOADED, GROUP_LOADED), (COORDINATOR_UNLOADED, GROUP_UNLOADED)):
            for rx in patterns:
                p = rx.match(msg)
                if p is None:
                    continue
                d = p.groupdict()
                row = event(time_ms, "kafka-log", broker, d["g"], kind,
                            generation=int(d["gen"]) if d.get("gen") else None,
                            members=int(d["n"]) if d.get("n") else None)
                if partition is None:
                    self.unplaced.setdefault(broker, []).append(row)
                    return None
                return self._placed(row, partition)
        return False

    def _placed(self, row: dict, partition: int) -> list[dict]:
        """`row` on its partition, and for a load, when its broker began loading that partition."""
        row["partition"] = partition
        if row["kind"] != COORDINATOR_LOADED:
            return [row]
        since = self.loading_since.get((row["broker"], partition))
        if since is None:
            return [row]
        return [event(since, "kafka-log", row["broker"], row["group_id"], COORDINATOR_LOADING,
                      partition=partition), row]


def _unwrap_option(text: str) -> str:
    # Kafka 2.x prints Scala Options: Some(instance-1)
    return text[5:-1] if text.startswith("Some(") and text.endswith(")") else text


def parse_lines(lines, kind: str, broker: str, skips: dict | None = None):
    """Yields event dicts from one input's lines; counts skips into `skips`."""
    parser = KafkaLogParser() if kind == "kafka-log" else None
    for line in lines:
        out = parse_journal_line(line, broker) if parser is None else parser.parse(line)
        if out is None:
            continue
        if isinstance(out, tuple):
            if skips is not None:
                skips[out[0]] = skips.get(out[0], 0) + 1
            continue
        if isinstance(out, list):
            yield from out
        else:
            yield out
    if parser is not None:
        yield from parser.finish()


def sniff_kind(first_line: str) -> str:
    return "journal" if first_line.lstrip().startswith("{") else "kafka-log"
