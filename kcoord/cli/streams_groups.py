"""`kcoord groups` for streams groups (KIP-1071): StreamsGroupDescribe asked of the group's
coordinator, on any broker that serves it, kcoord or Kafka.

StreamsGroupDescribe tells neither a member's reconciliation state nor why a group is NotReady:
a member whose tasks and epoch are its target's is `stable`, any other `reconciling`; a NotReady
group's missing topics are its topology's topics that Metadata does not know.
"""
from __future__ import annotations

from kcoord.protocol_client import Admin, ProtocolError
from wire.errors import ErrorCode

STREAMS_GROUP_DESCRIBE = 89

MEMBER_HEADER = ["MEMBER-ID", "PROCESS-ID", "CLIENT-ID", "HOST", "EPOCH", "STATE", "ENDPOINT", "ACTIVE",
                 "STANDBY", "WARMUP", "TARGET-ACTIVE", "TARGET-STANDBY", "TARGET-WARMUP"]
TOPOLOGY_HEADER = ["SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SOURCE", "REPARTITION-SINK", "CHANGELOG"]


def described(admin: Admin, group_id: str, api_key: int, version: int, name: str):
    """The group as a modern group's describe API (`name`, `api_key` at `version`) tells it; None
    when the group is of another type or its coordinator does not serve the API."""
    conn = admin.coordinator(group_id)
    if conn.versions.get(api_key) is None:
        return None
    d = conn.call(api_key, version, {"group_ids": [group_id], "include_authorized_operations": False}).groups[0]
    if d.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    if d.error_code:
        raise ProtocolError(f"{name} {group_id}: {ErrorCode(d.error_code).name}"
                            + (f" ({d.error_message})" if d.error_message else ""))
    return d


def describe(admin: Admin, group_id: str):
    """The group's StreamsGroupDescribe DescribedGroup; None when it is no streams group or its
    coordinator does not serve the API."""
    return described(admin, group_id, STREAMS_GROUP_DESCRIBE, 0, "StreamsGroupDescribe")


def listed_epochs(d) -> tuple[str, str]:
    """(group epoch, assignment epoch) of a listed group as described, '-' each if it went meanwhile."""
    return ("-", "-") if d is None else (str(d.group_epoch), str(d.assignment_epoch))


def epochs(admin: Admin, group_id: str) -> tuple[str, str]:
    return listed_epochs(describe(admin, group_id))


def tasks(task_ids) -> str:
    """Tasks as Kafka Streams names them: subtopology_partition, comma-separated."""
    return ",".join(f"{t.subtopology_id}_{p}" for t in task_ids or [] for p in sorted(t.partitions)) or "-"


def _same(a, b) -> bool:
    return all(tasks(getattr(a, k)) == tasks(getattr(b, k)) for k in ("active_tasks", "standby_tasks", "warmup_tasks"))


def member_rows(d) -> list[list[str]]:
    rows = []
    for m in d.members:
        state = ("stable" if m.member_epoch == d.assignment_epoch and _same(m.assignment, m.target_assignment)
                 else "reconciling")
        endpoint = f"{m.user_endpoint.host}:{m.user_endpoint.port}" if m.user_endpoint else "-"
        rows.append([m.member_id, m.process_id, m.client_id, m.client_host, m.member_epoch, state, endpoint,
                     tasks(m.assignment.active_tasks), tasks(m.assignment.standby_tasks),
                     tasks(m.assignment.warmup_tasks), tasks(m.target_assignment.active_tasks),
                     tasks(m.target_assignment.standby_tasks), tasks(m.target_assignment.warmup_tasks)])
    return rows


def _topic_infos(infos) -> str:
    # A topic's partitions are known once the broker validated the topology against the topics.
    return ",".join(f"{t.name}({t.partitions})" if t.partitions else t.name for t in infos) or "-"


def topology_rows(d) -> list[list[str]]:
    if d.topology is None:
        return []
    return [[s.subtopology_id, ",".join(s.source_topics) or "-", _topic_infos(s.repartition_source_topics),
             ",".join(s.repartition_sink_topics) or "-", _topic_infos(s.state_changelog_topics)]
            for s in d.topology.subtopologies]


def missing_topics(admin: Admin, d) -> tuple[list[str], list[str]]:
    """(source topics, internal topics) of the group's topology that the cluster does not have."""
    if d.topology is None:
        return [], []
    sources = {t for s in d.topology.subtopologies for t in s.source_topics}
    internal = {t.name for s in d.topology.subtopologies
                for t in (*s.repartition_source_topics, *s.state_changelog_topics)}
    wanted = sorted(sources | internal)
    if not wanted:
        return [], []
    absent = {t.name for t in admin.metadata(wanted).topics if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    return sorted(absent & sources), sorted(absent & internal)


def status_lines(admin: Admin, d) -> list[str]:
    """Why a group is not ready, as its members' heartbeats are told."""
    if d.group_state != "NotReady":
        return []
    if d.topology is None:
        return ["not ready: no topology yet"]
    sources, internal = missing_topics(admin, d)
    lines = [f"not ready: missing source topics {','.join(sources)}"] if sources else []
    if internal:
        lines.append(f"not ready: missing internal topics {','.join(internal)}")
    return lines or ["not ready: its topics are being validated (or are partitioned incorrectly)"]


def print_described(admin: Admin, d, coordinator: int, table) -> None:
    topology_epoch = d.topology.epoch if d.topology else -1
    print(f"group {d.group_id}: coordinator {coordinator}, state {d.group_state}, type streams, group epoch "
          f"{d.group_epoch}, assignment epoch {d.assignment_epoch}, topology epoch {topology_epoch}, "
          f"{len(d.members)} members")
    for line in status_lines(admin, d):
        print(line)
    rows = member_rows(d)
    if rows:
        print(table(rows, MEMBER_HEADER))
    topology = topology_rows(d)
    if topology:
        print()
        print(table(topology, TOPOLOGY_HEADER))
