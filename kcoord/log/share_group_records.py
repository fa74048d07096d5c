"""Share groups (KIP-932) in __consumer_offsets: the coordinator's ShareGroupRecord snapshot
(kcoord.coordinator.share.snapshot describes it) as Kafka 4.3.1's record types 10-15, and back.

Every value is version 0, flexible; keys are the version-0 keys of the other group records
(type int16, GroupId, MemberId where the type has one):

    type 10  ShareGroupMemberMetadata           RackId?, ClientId, ClientHost, SubscribedTopicNames
    type 11  ShareGroupMetadata                 Epoch int32, MetadataHash int64
    type 12  ShareGroupTargetAssignmentMetadata AssignmentEpoch int32, tag 0 AssignmentTimestamp (unless 0)
    type 13  ShareGroupTargetAssignmentMember   TopicPartitions [TopicId, Partitions]
    type 14  ShareGroupCurrentMemberAssignment  MemberEpoch, PreviousMemberEpoch int32, State int8,
                                                AssignedPartitions [TopicId, Partitions]
    type 15  ShareGroupStatePartitionMetadata   InitializingTopics, InitializedTopics
                                                [TopicId, TopicName, Partitions], DeletingTopics [TopicId, TopicName]

A snapshot is written whole, in the order Kafka's heartbeat writes the records: a removed
member's tombstones (14, 13, 10), the members' metadata, the group's epoch, the target (each
member's, then its metadata), the current assignments, the state partition metadata. A deleted
group's tombstones come as ShareGroup.createGroupTombstoneRecords writes them: 14s, 13s, 12,
10s, 15, 11. Subscribed topic names are written as the member holds them (Kafka's HashSet
order), target partitions in the assignor's order; the topics of record 15 sorted by id
(Kafka's walk a HashMap of topic ids: one topic has the same bytes, several may differ in order).
"""
from __future__ import annotations

import struct
import uuid

from kcoord.log import consumer_offsets as co

SHARE_MEMBER_METADATA, SHARE_GROUP_METADATA, SHARE_TARGET_METADATA = 10, 11, 12
SHARE_TARGET_MEMBER, SHARE_CURRENT_ASSIGNMENT, SHARE_STATE_PARTITION_METADATA = 13, 14, 15
SHARE_RECORD_TYPES = frozenset(range(10, 16))

_NO_TAGS = b"\x00"


def _key(kind: int, group_id: str, member: str | None = None) -> bytes:
    return struct.pack(">h", kind) + co._str(group_id) + (b"" if member is None else co._str(member))


def _member_value(meta: dict) -> bytes:
    return (struct.pack(">h", 0) + co._cnullable(meta.get("rack_id")) + co._cstr(meta["client_id"])
            + co._cstr(meta["client_host"]) + co._carray([co._cstr(n) for n in meta["subscribed_topic_names"]])
            + _NO_TAGS)


def _metadata_value(meta: dict) -> bytes:
    return struct.pack(">hiq", 0, meta["epoch"], meta["metadata_hash"]) + _NO_TAGS


def _target_member_value(parts: dict) -> bytes:
    return struct.pack(">h", 0) + co._topic_partitions(parts, False, as_listed=True) + _NO_TAGS


def _current_value(a: dict) -> bytes:
    return (struct.pack(">hiib", 0, a["member_epoch"], a["previous_member_epoch"], a["state"])
            + co._topic_partitions(a["assigned"], False, as_listed=True) + _NO_TAGS)


def _state_partitions_value(sp: dict) -> bytes:
    def infos(topics: dict) -> bytes:
        return co._carray([uuid.UUID(t).bytes + co._cstr(i["name"]) + co._int32s(sorted(i["partitions"])) + _NO_TAGS
                           for t, i in sorted(topics.items())])
    deleting = co._carray([uuid.UUID(t).bytes + co._cstr(name) + _NO_TAGS
                           for t, name in sorted((sp.get("deleting") or {}).items())])
    return (struct.pack(">h", 0) + infos(sp.get("initializing") or {}) + infos(sp.get("initialized") or {})
            + deleting + _NO_TAGS)


def share_group_records(value: dict | None, group_id: str, previous: dict | None) -> list[tuple[bytes, bytes | None]]:
    """Kafka's records for one share group snapshot (None: the group was deleted); `previous`:
    the snapshot written before, whose members no longer present (and the snapshot's
    `removed_members`) get tombstones."""
    def key(kind: int, member: str | None = None) -> bytes:
        return _key(kind, group_id, member)

    members = {} if value is None else value["members"]
    before = (previous or {}).get("members", {})
    gone = [m for m in dict.fromkeys([*before, *(value or {}).get("removed_members", ())]) if m not in members]
    if value is None:
        return ([(key(SHARE_CURRENT_ASSIGNMENT, m), None) for m in gone]
                + [(key(SHARE_TARGET_MEMBER, m), None) for m in gone] + [(key(SHARE_TARGET_METADATA), None)]
                + [(key(SHARE_MEMBER_METADATA, m), None) for m in gone]
                + [(key(SHARE_STATE_PARTITION_METADATA), None), (key(SHARE_GROUP_METADATA), None)])
    out: list[tuple[bytes, bytes | None]] = []
    for m in gone:
        out += [(key(SHARE_CURRENT_ASSIGNMENT, m), None), (key(SHARE_TARGET_MEMBER, m), None),
                (key(SHARE_MEMBER_METADATA, m), None)]
    for member_id, member in members.items():
        out.append((key(SHARE_MEMBER_METADATA, member_id), _member_value(member["metadata"])))
    out.append((key(SHARE_GROUP_METADATA), _metadata_value(value["metadata"])))
    target = value["target"]
    for member_id, parts in target["members"].items():
        out.append((key(SHARE_TARGET_MEMBER, member_id), _target_member_value(parts)))
    out.append((key(SHARE_TARGET_METADATA),
                co._target_metadata_value(target["assignment_epoch"], target.get("assignment_timestamp_ms", 0))))
    for member_id, member in members.items():
        out.append((key(SHARE_CURRENT_ASSIGNMENT, member_id), _current_value(member["assignment"])))
    out.append((key(SHARE_STATE_PARTITION_METADATA), _state_partitions_value(value["state_partitions"])))
    return out
