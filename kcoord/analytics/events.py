"""One event schema for both inputs, and the parsers that fill it.

Parsers are plain Python so the Spark job and the single-process baseline
(bench/report.py) run the very same code. A line that does not parse is never
an error: it is counted under a skip reason.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

FIELDS = ["time_ms", "source", "broker", "group_id", "kind", "generation", "state_before", "state_after",
          "member_id", "instance_id", "client_id", "client_host", "reason", "protocol", "members", "commits"]

# Skip reasons (counted per input).
SKIP_MALFORMED = "malformed"          # a journal line that is not a JSON object with kind/time/group
SKIP_UNRECOGNISED = "unrecognised"    # a group-coordinator log line whose message we do not know
SKIP_BAD_TIMESTAMP = "bad_timestamp"  # looks like log4j but the time does not parse
SKIP_NOT_LOG4J = "not_log4j"          # neither a log4j line nor a continuation we can attribute


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
        group = rec["group_id"]
        if not isinstance(kind, str) or not isinstance(group, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        return (SKIP_MALFORMED, None)
    if kind == "offset_commits":
        return event(time_ms, "journal", broker, group, kind, commits=int(rec.get("commits") or 0))
    if kind == "offsets_committed":  # should not happen (the journal aggregates), but count it if it does
        return event(time_ms, "journal", broker, group, "offset_commits", commits=1)
    gen = rec.get("generation")
    return event(time_ms, "journal", broker, group, kind,
                 generation=int(gen) if gen is not None else None,
                 state_before=rec.get("state_before"), state_after=rec.get("state_after"),
                 member_id=rec.get("member_id"), instance_id=rec.get("instance_id"),
                 client_id=rec.get("client_id"), client_host=rec.get("client_host"),
                 reason=rec.get("reason"), protocol=rec.get("protocol"),
                 members=int(rec["members"]) if rec.get("members") is not None else None)


# ---------------------------------------------------------------- Kafka server.log
# [2024-05-01 10:00:00,123] INFO [GroupCoordinator 1]: message (kafka.coordinator.group.GroupCoordinator)
# [2025-05-01 10:00:00,123] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] message (org...)
LOG4J = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*)$")
COORD_PREFIX = re.compile(r"^\[GroupCoordinator (?:id=)?(\d+)[^\]]*\]:? (.*)$")
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

    def parse(self, line: str):
        """-> event dict; (skip reason, None) for a line we cannot use; None for lines that are not ours."""
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
        if c is None:
            return None  # another component's line (log cleaner, controller, ...)
        broker_id, msg = c.groups()
        msg = LOGGER_SUFFIX.sub("", msg).strip()
        try:
            time_ms = _ts_ms(ts)
        except ValueError:
            return (SKIP_BAD_TIMESTAMP, None)
        broker = f"broker-{broker_id}"
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
        yield out


def sniff_kind(first_line: str) -> str:
    return "journal" if first_line.lstrip().startswith("{") else "kafka-log"
