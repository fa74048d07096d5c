"""`kcoord groups` for share groups (KIP-932): ShareGroupDescribe asked of the group's coordinator,
and DescribeShareGroupOffsets (each share-partition's start offset and lag) where the broker serves
it, on any broker: kcoord or Kafka.

A share group's partitions are shared: several members may hold the same one, each reading the
records the broker hands it. The start offset is where the share-partition's undelivered or
unacknowledged records begin; the lag, how many records from there are not yet acknowledged.
"""
from __future__ import annotations

from kcoord.cli.streams_groups import described, listed_epochs
from kcoord.protocol_client import Admin, ProtocolError
from wire.errors import ErrorCode

SHARE_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS = 77, 90

MEMBER_HEADER = ["MEMBER-ID", "CLIENT-ID", "HOST", "RACK", "EPOCH", "SUBSCRIBED", "ASSIGNMENT"]
OFFSETS_HEADER = ["TOPIC", "PARTITION", "START-OFFSET", "LAG"]


def describe(admin: Admin, group_id: str):
    """The group's ShareGroupDescribe DescribedGroup; None when it is no share group or its
    coordinator does not serve the API."""
    return described(admin, group_id, SHARE_GROUP_DESCRIBE, 1, "ShareGroupDescribe")


def epochs(admin: Admin, group_id: str) -> tuple[str, str]:
    return listed_epochs(describe(admin, group_id))


def _partitions(assignment) -> str:
    return ",".join(f"{t.topic_name}:{p}" for t in sorted(assignment.topic_partitions, key=lambda t: t.topic_name)
                    for p in sorted(t.partitions)) or "-"


def member_rows(d) -> list[list[str]]:
    return [[m.member_id, m.client_id, m.client_host, m.rack_id or "-", m.member_epoch,
             ",".join(sorted(m.subscribed_topic_names)) or "-", _partitions(m.assignment)] for m in d.members]


def offset_rows(admin: Admin, group_id: str) -> list[list[str]] | None:
    """Start offset and lag per share-partition; None where DescribeShareGroupOffsets is not served."""
    conn = admin.coordinator(group_id)
    versions = conn.versions.get(DESCRIBE_SHARE_GROUP_OFFSETS)
    if versions is None:
        return None
    [g] = conn.call(DESCRIBE_SHARE_GROUP_OFFSETS, min(versions[1], 1),
                    {"groups": [{"group_id": group_id, "topics": None}]}).groups
    if g.error_code:
        raise ProtocolError(f"DescribeShareGroupOffsets {group_id}: {ErrorCode(g.error_code).name}"
                            + (f" ({g.error_message})" if g.error_message else ""))
    rows = []
    for t in sorted(g.topics, key=lambda t: t.topic_name):
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            lag = p.get("lag", -1)
            rows.append([t.topic_name, p.partition_index, p.start_offset if p.start_offset >= 0 else "-",
                         lag if lag >= 0 else "-"])
    return rows


def print_described(admin: Admin, d, coordinator: int, table) -> None:
    print(f"group {d.group_id}: coordinator {coordinator}, state {d.group_state}, type share, group epoch "
          f"{d.group_epoch}, assignment epoch {d.assignment_epoch}, assignor {d.assignor_name}, "
          f"{len(d.members)} members")
    rows = member_rows(d)
    if rows:
        print(table(rows, MEMBER_HEADER))
    offsets = offset_rows(admin, d.group_id)
    if offsets:
        print()
        print(table(offsets, OFFSETS_HEADER))
