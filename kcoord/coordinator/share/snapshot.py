"""A share group as plain data shaped like its records in __consumer_offsets (Kafka's
ShareGroupMetadata, MemberMetadata, TargetAssignmentMetadata, TargetAssignmentMember,
CurrentMemberAssignment and StatePartitionMetadata values), and back: what ShareGroupRecord
carries, what kcoord.log.consumer_offsets writes in Kafka's bytes and the loader reads back, and
the restore point a failed heartbeat returns to.

    {"group_id", "metadata": {"epoch", "metadata_hash"},
     "members": {member id: {"metadata": {"rack_id", "client_id", "client_host", "subscribed_topic_names"},
                             "assignment": {"member_epoch", "previous_member_epoch", "state",
                                            "assigned": {topic id: [partitions]}}}},
     "target": {"assignment_epoch", "assignment_timestamp_ms", "members": {member id: {topic id: [partitions]}}},
     "state_partitions": {"initializing": {topic id: {"name", "partitions"}},
                          "initialized": {topic id: {"name", "partitions"}}, "deleting": {topic id: name}}}

plus "removed_members" (member ids) on a ShareGroupRecord. Topic ids are text as str(uuid.UUID).
"""
from __future__ import annotations

from kcoord.coordinator.javaorder import RecordPartitions, record_list
from kcoord.coordinator.share.group import ShareGroup, ShareMember

# Kafka's share members are always STABLE (MemberState's code 0 in the record).
STABLE_STATE = 0


def snapshot(group: ShareGroup) -> dict:
    return {
        "group_id": group.group_id,
        "metadata": {"epoch": group.group_epoch, "metadata_hash": group.metadata_hash},
        "members": {m.member_id: {
            "metadata": {"rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
                         "subscribed_topic_names": list(m.subscribed_topic_names)},
            "assignment": {"member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
                           "state": STABLE_STATE,
                           "assigned": {t: record_list(ps) for t, ps in m.assigned.items()}}}
            for m in group.members.values()},
        "target": {"assignment_epoch": group.assignment_epoch,
                   "assignment_timestamp_ms": group.assignment_timestamp_ms,
                   "members": {mid: {t: record_list(ps) for t, ps in a.items()} for mid, a in group.target.items()}},
        "state_partitions": {"initializing": {},
                             "initialized": {t: {"name": name, "partitions": sorted(ps)}
                                             for t, (name, ps) in group.initialized.items()},
                             "deleting": {}},
    }


def restore(value: dict) -> ShareGroup:
    meta = value["metadata"]
    target = value.get("target") or {}
    group = ShareGroup(value["group_id"], group_epoch=meta["epoch"], metadata_hash=meta.get("metadata_hash", 0),
                       assignment_epoch=target.get("assignment_epoch", 0),
                       assignment_timestamp_ms=target.get("assignment_timestamp_ms", 0))
    for member_id, m in value.get("members", {}).items():
        md, a = m["metadata"], m["assignment"]
        group.put(ShareMember(member_id, md.get("rack_id"), md.get("client_id", ""), md.get("client_host", ""),
                              tuple(md.get("subscribed_topic_names") or ()), a["member_epoch"],
                              a["previous_member_epoch"],
                              {t: RecordPartitions(ps) for t, ps in (a.get("assigned") or {}).items()}))
    group.target = {mid: {t: RecordPartitions(ps) for t, ps in a.items()}
                    for mid, a in (target.get("members") or {}).items()}
    initialized = ((value.get("state_partitions") or {}).get("initialized") or {})
    group.initialized = {t: (i["name"], frozenset(i["partitions"])) for t, i in initialized.items()}
    return group
