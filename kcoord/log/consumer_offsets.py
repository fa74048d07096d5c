"""`__consumer_offsets` as Kafka keeps it: the coordinator's records in Kafka's own key and
value schemas, appended to the group's partition of an internal topic that consumers can
fetch like any other.

Every record of a coordinator operation (kcoord.coordinator.records) becomes one Kafka
record: the key is a big-endian int16 record type followed by the key struct, the value an
int16 version followed by the value struct, a tombstone has a null value. The schemas are
Kafka's group-coordinator message specs, written out here by hand:

    type 1 (0 in old logs)  OffsetCommitKey    group string, topic string, partition int32
    type 2                  GroupMetadataKey   group string
    OffsetCommitValue  v0   offset int64, metadata string, commitTimestamp int64
                       v1   + expireTimestamp int64 (after commitTimestamp)
                       v2   as v0
                       v3   + leaderEpoch int32 (after offset)
                       v4   as v3, flexible: compact metadata string, tagged fields (0: topicId uuid)
    GroupMetadataValue v0   protocolType string, generation int32, protocol string?, leader string?,
                            members [memberId, clientId, clientHost, sessionTimeout int32,
                                     subscription bytes, assignment bytes]
                       v1   + member rebalanceTimeout int32 (before sessionTimeout)
                       v2   + currentStateTimestamp int64 (before members)
                       v3   + member groupInstanceId string? (after memberId)

Consumer groups (KIP-848), written from the coordinator's `ConsumerGroupRecord` (one snapshot
of the group) as Kafka's records of the same facts, all flexible value version 0, keys
non-flexible (group string, then member string where there is one):

    type 3  ConsumerGroupMetadata          Epoch int32 (tag 0 MetadataHash: not written)
    type 5  ConsumerGroupMemberMetadata    InstanceId?, RackId?, ClientId, ClientHost,
                                           SubscribedTopicNames [], SubscribedTopicRegex?,
                                           RebalanceTimeoutMs int32, ServerAssignor?,
                                           tag 0 ClassicMemberMetadata? (SessionTimeoutMs int32,
                                           SupportedProtocols [Name, Metadata bytes])
    type 6  ConsumerGroupTargetAssignmentMetadata  AssignmentEpoch int32
    type 7  ConsumerGroupTargetAssignmentMember    TopicPartitions [TopicId uuid, Partitions []int32]
    type 8  ConsumerGroupCurrentMemberAssignment   MemberEpoch, PreviousMemberEpoch int32, State int8,
                                           AssignedPartitions [], PartitionsPendingRevocation []
                                           ([TopicId, Partitions, tag 0 AssignmentEpochs])

Each snapshot is written whole (compaction keeps the latest per key); a member gone since the
previous snapshot gets tombstones (types 8, 7, 5, in Kafka's order) and a deleted group those
of types 6 and 3. The regex records (type 16) are not written: kcoord resolves regexes anew.
`decode_key` refuses these types (the report skips them as "not a classic group record").

Streams groups (KIP-1071), written from the coordinator's `StreamsGroupRecord` the same way
(value version 0, flexible; keys as above), each list of tasks sorted by subtopology id then
partition as Kafka sorts them, key/value lists by key (a topology's in the member's order):

    type 17  StreamsGroupMetadata          Epoch int32, MetadataHash int64, tag 0
                                           ValidatedTopologyEpoch (unless -1), tag 1
                                           LastAssignmentConfigs [Key, Value] (unless empty)
    type 19  StreamsGroupMemberMetadata    InstanceId?, RackId?, ClientId, ClientHost,
                                           RebalanceTimeoutMs, TopologyEpoch int32, ProcessId,
                                           UserEndpoint? (Host, Port uint16), ClientTags [Key, Value]
    type 20  StreamsGroupTargetAssignmentMetadata  AssignmentEpoch int32, tag 0
                                           AssignmentTimestamp int64 (unless 0)
    type 21  StreamsGroupTargetAssignmentMember    Active/Standby/WarmupTasks [SubtopologyId, Partitions]
    type 22  StreamsGroupCurrentMemberAssignment   MemberEpoch, PreviousMemberEpoch int32, State int8,
                                           Active/Standby/WarmupTasks and the same three pending
                                           revocation (active ones with tag 0 AssignmentEpochs,
                                           unless empty)
    type 23  StreamsGroupTopology          Epoch int32, Subtopologies [SubtopologyId, SourceTopics,
                                           SourceTopicRegex, StateChangelogTopics [TopicInfo],
                                           RepartitionSinkTopics, RepartitionSourceTopics [TopicInfo],
                                           CopartitionGroups [three []int16]]

The snapshot (the coordinator's streams group model makes and loads exactly this; partitions
are ints):

    {"group_id", "metadata": {"epoch", "metadata_hash", "validated_topology_epoch",
                              "last_assignment_configs": {key: value}},
     "topology": None | {"epoch", "subtopologies": [{"subtopology_id", "source_topics",
         "source_topic_regex", "state_changelog_topics": [TopicInfo], "repartition_sink_topics",
         "repartition_source_topics": [TopicInfo], "copartition_groups": [{"source_topics",
         "source_topic_regex", "repartition_source_topics"}]}]},   # TopicInfo: {"name",
         "partitions", "replication_factor", "topic_configs": {key: value}}
     "members": {member id: {"metadata": {"instance_id", "rack_id", "client_id", "client_host",
                     "rebalance_timeout_ms", "topology_epoch", "process_id",
                     "user_endpoint": None | {"host", "port"}, "client_tags": {key: value}},
                 "assignment": {"member_epoch", "previous_member_epoch", "state",
                     "active": {subtopology: {partition: assignment epoch}}, "standby": {sid: [p]},
                     "warmup": {sid: [p]}, "active_pending_revocation": {sid: {p: epoch}},
                     "standby_pending_revocation": {sid: [p]}, "warmup_pending_revocation": {sid: [p]}}}},
     "target": {"assignment_epoch", "assignment_timestamp_ms",
                "members": {member id: {"active": {sid: [p]}, "standby": ..., "warmup": ...}}},
     "removed_members": [member id]}      # gone since the previous snapshot (tombstones)

"active_pending_revocation" may also be {sid: [p]}: the partitions then carry the member epoch,
which Kafka's loader assumes for a task without its epoch.

Share groups (KIP-932), types 10-15: kcoord.log.share_group_records.

Kafka 4.3 writes OffsetCommitValue v4 (v1 when the commit carried an explicit retention)
and GroupMetadataValue v3; so does kcoord. `decode_key`/`decode_value` read every version up
to those, and give the JSON shape Kafka's OffsetsMessageFormatter and
GroupMetadataMessageFormatter print (`{"key": {"type", "data"}, "value": {"version", "data"}}`,
bytes in base64, topic ids as Kafka prints them), so their output and this decoder's can be
compared as they are.

`OffsetsTopic` is the coordinator's record sink in front of durable state: the batches of one
operation go to disk in one write, and only then does
the partition hold them, so a client fetches exactly what was acknowledged.
"""
from __future__ import annotations

import base64
import functools
import struct
import time
import uuid
from typing import Callable, Iterable

from kcoord.coordinator.config import offsets_partition_for
from kcoord.coordinator.offsets.committed import CommittedOffset
from kcoord.coordinator.records import (ConsumerGroupRecord, GroupMetadataRecord, OffsetCommitRecord, Record,
                                        ShareGroupRecord, StreamsGroupRecord, TxnOffsetCommitRecord)
from wire import records as R

TOPIC = "__consumer_offsets"
# The configs Kafka gives the topic when it creates it (all reported as the topic's own).
TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}

LEGACY_OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY, GROUP_METADATA_KEY = 0, 1, 2
OFFSET_COMMIT_VALUE_VERSION, OFFSET_COMMIT_VALUE_WITH_EXPIRY = 4, 1
GROUP_METADATA_VALUE_VERSION = 3
NO_TIMESTAMP = -1
# A partition is compacted in memory once it holds this many bytes and twice what it held
# after its last compaction (with a data dir, also whenever durable state compacts its log).
COMPACT_MIN_BYTES = 256 * 1024


class OffsetsRecordError(ValueError):
    """Bytes that are not a group coordinator record kcoord can read."""


# ---- primitive writers and readers ---------------------------------------------------------

def _str(value: str) -> bytes:
    data = value.encode("utf-8")
    return struct.pack(">h", len(data)) + data


def _nullable_str(value: str | None) -> bytes:
    return struct.pack(">h", -1) if value is None else _str(value)


def _bytes(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def _take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise OffsetsRecordError(f"{what} runs past the end ({len(self.data)} bytes) at byte {self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int(self, fmt: str, what: str) -> int:
        return struct.unpack(fmt, self._take(struct.calcsize(fmt), what))[0]

    def str(self, what: str, nullable: bool = False) -> str | None:
        n = self.int(">h", what)
        if n == -1 and nullable:
            return None
        return self._take(n, what).decode("utf-8")

    def uvarint(self, what: str) -> int:
        value = shift = 0
        while True:
            b = self._take(1, what)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise OffsetsRecordError(f"{what}: a varint longer than 5 bytes at byte {self.pos}")

    def compact_str(self, what: str) -> str:
        n = self.uvarint(what)
        if n == 0:
            raise OffsetsRecordError(f"{what}: null where a string is required")
        return self._take(n - 1, what).decode("utf-8")

    def tagged_fields(self, what: str) -> dict[int, bytes]:
        return {self.uvarint(what): self._take(self.uvarint(what), what) for _ in range(self.uvarint(what))}

    def bytes(self, what: str) -> bytes:
        return self._take(self.int(">i", what), what)

    def done(self, what: str) -> None:
        if self.pos != len(self.data):
            raise OffsetsRecordError(f"{len(self.data) - self.pos} bytes left over after {what}")


# ---- keys ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _offset_key_head(group: str, topic: str) -> bytes:
    # A group commits the same few topics over and over: their key's head is made once.
    return struct.pack(">h", OFFSET_COMMIT_KEY) + _str(group) + _str(topic)


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _offset_key_head(group, topic) + _I32.pack(partition)


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA_KEY) + _str(group)


def group_key(data: bytes) -> tuple[int, str, str | None]:
    """(record type, group id, member id or None) of a group record's key: every type starts with
    the group id, the member records' keys go on with the member id."""
    r = _Reader(data)
    kind, group = r.int(">h", "key type"), r.str("group")
    return kind, group, (r.str("member") if r.pos < len(data) else None)


def decode_key_if_classic(data: bytes) -> dict | None:
    """decode_key's answer for an offset commit or a classic group's metadata; None for the
    consumer group (KIP-848) records that share the topic."""
    if len(data) >= 2 and struct.unpack_from(">h", data)[0] not in (LEGACY_OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY,
                                                                      GROUP_METADATA_KEY):
        return None
    return decode_key(data)


def decode_key(data: bytes) -> dict:
    """{"type": N, "data": {...}} with Kafka's field names."""
    r = _Reader(data)
    kind = r.int(">h", "key type")
    if kind in (LEGACY_OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY):
        out = {"group": r.str("group"), "topic": r.str("topic"), "partition": r.int(">i", "partition")}
    elif kind == GROUP_METADATA_KEY:
        out = {"group": r.str("group")}
    else:
        raise OffsetsRecordError(f"key type {kind} is not a classic group record (1: offset commit, 2: group)")
    r.done("the key")
    return {"type": kind, "data": out}


# ---- values --------------------------------------------------------------------------------

def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def offset_commit_value(value: CommittedOffset, topic_id: uuid.UUID | None = None) -> bytes:
    """Kafka's choice of version: v1 when the commit carried an explicit expiry, otherwise v4
    (flexible: a compact metadata string, the topic id as tagged field 0 when known)."""
    return _offset_commit_value(value, _topic_id_tag(topic_id))


def _offset_commit_value(value: CommittedOffset, tags: bytes) -> bytes:
    """offset_commit_value with the value's tagged fields (`_topic_id_tag`) already encoded."""
    if value.expire_ms is not None:
        return (struct.pack(">hq", OFFSET_COMMIT_VALUE_WITH_EXPIRY, value.offset) + _str(value.metadata or "")
                + struct.pack(">qq", value.commit_ms, value.expire_ms))
    metadata = value.metadata
    if not metadata:
        # Most commits carry no metadata: its compact length alone (1), in the one pack.
        return _V4_NO_METADATA.pack(OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch, 1,
                                    value.commit_ms) + tags
    text = metadata.encode("utf-8")
    return (_V4_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch) + _uvarint(len(text) + 1)
            + text + _I64.pack(value.commit_ms) + tags)


_V4_HEAD = struct.Struct(">hqi")
_V4_NO_METADATA = struct.Struct(">hqiBq")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@functools.lru_cache(maxsize=1024)
def _topic_id_tag(topic_id: uuid.UUID | None) -> bytes:
    """The value's tagged fields: none, or the topic id as tag 0."""
    return b"\x00" if topic_id is None or topic_id.int == 0 else b"\x01\x00\x10" + topic_id.bytes


def group_metadata_value(group: dict) -> bytes:
    """GroupMetadataValue v3 from the coordinator's group record: each member's subscription
    is its metadata for the group's protocol, as Kafka writes it."""
    protocol = group.get("protocol_name")
    out = [struct.pack(">h", GROUP_METADATA_VALUE_VERSION), _str(group.get("protocol_type") or ""),
           struct.pack(">i", group["generation"]), _nullable_str(protocol), _nullable_str(group.get("leader_id")),
           struct.pack(">q", group.get("state_ms") if group.get("state_ms") is not None else NO_TIMESTAMP),
           struct.pack(">i", len(group["members"]))]
    for m in group["members"]:
        subscription = next((meta for name, meta in m["protocols"] if name == protocol), b"")
        out += [_str(m["member_id"]), _nullable_str(m["instance_id"]), _str(m["client_id"] or ""),
                _str(m["client_host"] or ""), struct.pack(">ii", m["rebalance_timeout_ms"], m["session_timeout_ms"]),
                _bytes(subscription), _bytes(m["assignment"] or b"")]
    return b"".join(out)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _topic_id_text(raw: bytes) -> str:
    """A topic id as Kafka prints one: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_offset_value(r: _Reader, version: int) -> dict:
    if version > OFFSET_COMMIT_VALUE_VERSION:
        raise OffsetsRecordError(f"OffsetCommitValue v{version} is newer than v{OFFSET_COMMIT_VALUE_VERSION}")
    out = {"offset": r.int(">q", "offset")}
    if version >= 3:
        out["leaderEpoch"] = r.int(">i", "leaderEpoch")
    out["metadata"] = r.compact_str("metadata") if version >= 4 else r.str("metadata")
    out["commitTimestamp"] = r.int(">q", "commitTimestamp")
    if version == 1:
        out["expireTimestamp"] = r.int(">q", "expireTimestamp")
    if version >= 4:
        tags = r.tagged_fields("tagged fields")
        raw = tags.get(0, bytes(16))
        if len(raw) != 16:
            raise OffsetsRecordError(f"topicId (tag 0) has {len(raw)} bytes, not 16")
        out["topicId"] = _topic_id_text(raw)
    return out


def _decode_group_value(r: _Reader, version: int) -> dict:
    if version > GROUP_METADATA_VALUE_VERSION:
        raise OffsetsRecordError(f"GroupMetadataValue v{version} is newer than v{GROUP_METADATA_VALUE_VERSION}")
    out = {"protocolType": r.str("protocolType"), "generation": r.int(">i", "generation"),
           "protocol": r.str("protocol", nullable=True), "leader": r.str("leader", nullable=True)}
    if version >= 2:
        out["currentStateTimestamp"] = r.int(">q", "currentStateTimestamp")
    members = []
    for _ in range(r.int(">i", "members")):
        m = {"memberId": r.str("memberId")}
        if version >= 3:
            m["groupInstanceId"] = r.str("groupInstanceId", nullable=True)
        m["clientId"] = r.str("clientId")
        m["clientHost"] = r.str("clientHost")
        if version >= 1:
            m["rebalanceTimeout"] = r.int(">i", "rebalanceTimeout")
        m["sessionTimeout"] = r.int(">i", "sessionTimeout")
        m["subscription"] = _b64(r.bytes("subscription"))
        m["assignment"] = _b64(r.bytes("assignment"))
        members.append(m)
    out["members"] = members
    return out


def decode_value(key: dict, data: bytes | None) -> dict | None:
    """{"version": N, "data": {...}}, or None for a tombstone."""
    if data is None:
        return None
    r = _Reader(data)
    version = r.int(">h", "value version")
    if key["type"] == GROUP_METADATA_KEY:
        out = _decode_group_value(r, version)
    else:
        out = _decode_offset_value(r, version)
    r.done("the value")
    return {"version": version, "data": out}


def decode(key: bytes, value: bytes | None) -> dict:
    """One record of the topic, as Kafka's formatters print it (tombstone: value None)."""
    k = decode_key(key)
    return {"key": k, "value": decode_value(k, value)}


def decode_records(blob: bytes) -> Iterable[tuple[int, dict]]:
    """(offset, decoded record) for every record in a fetched records blob (transaction markers,
    which are not group records, left out)."""
    for batch in R.iter_batches(blob):
        if batch.is_control:
            continue
        for record in R.decode_records(batch):
            yield record.offset, decode(record.key, record.value)


# ---- consumer groups (KIP-848) in Kafka's form ----------------------------------------------

CONSUMER_GROUP_METADATA, CONSUMER_MEMBER_METADATA = 3, 5
CONSUMER_TARGET_METADATA, CONSUMER_TARGET_MEMBER, CONSUMER_CURRENT_ASSIGNMENT = 6, 7, 8
CONSUMER_REGULAR_EXPRESSION = 16
_MEMBER_STATE = {"stable": 0, "unrevoked_partitions": 1, "unreleased_partitions": 2, "unknown": 127}
_NO_TAGS = b"\x00"


def _cstr(value: str) -> bytes:
    data = value.encode("utf-8")
    return _uvarint(len(data) + 1) + data


def _cnullable(value: str | None) -> bytes:
    return b"\x00" if value is None else _cstr(value)


def _carray(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


def _int32s(values) -> bytes:
    return _carray([struct.pack(">i", v) for v in values])


def _consumer_key(kind: int, group: str, member: str | None = None) -> bytes:
    # `member` is the second string of the key: a member id, or (type 16) a regular expression.
    return struct.pack(">h", kind) + _str(group) + (b"" if member is None else _str(member))


def _regex_value(topics, timestamp_ms: int) -> bytes:
    # Version is the metadata image offset the regex was resolved against in Kafka; kcoord has
    # no metadata log, and writes 0 (docs/deviations.md).
    return struct.pack(">h", 0) + _carray([_cstr(t) for t in sorted(topics)]) + struct.pack(">qq", 0, timestamp_ms) \
        + _NO_TAGS


def _topic_partitions(parts: dict, with_epochs: bool, as_listed: bool = False) -> bytes:
    """`as_listed`: topics and partitions in the order given (a target assignment, in the
    order the assignor gave, which is Kafka's record order); otherwise ascending."""
    items = []
    for topic_id, partitions in (parts.items() if as_listed else sorted(parts.items())):
        ordered = [int(p) for p in partitions] if as_listed else sorted(int(p) for p in partitions)
        tags = _NO_TAGS
        if with_epochs:
            epochs = _int32s([partitions[str(p)] if str(p) in partitions else partitions[p] for p in ordered])
            tags = _uvarint(1) + _uvarint(0) + _uvarint(len(epochs)) + epochs
        items.append(uuid.UUID(topic_id).bytes + _int32s(ordered) + tags)
    return _carray(items)


def _classic_member_tags(classic: dict | None) -> bytes:
    """Tag 0 of type 5, ClassicMemberMetadata (a member speaking JoinGroup/SyncGroup in a consumer
    group): a nullable struct, present as 1 then SessionTimeoutMs and SupportedProtocols."""
    if classic is None:
        # Kafka writes the null explicitly (tag 0, one byte: absent); without the tag its reader
        # would see an empty ClassicMemberMetadata rather than null.
        return _uvarint(1) + _uvarint(0) + _uvarint(1) + b"\x00"
    protocols = [_cstr(name) + _uvarint(len(meta) + 1) + meta + _NO_TAGS
                 for name, meta in ((n, base64.b64decode(m)) for n, m in classic["protocols"])]
    struct_bytes = b"\x01" + struct.pack(">i", classic["session_timeout_ms"]) + _carray(protocols) + _NO_TAGS
    return _uvarint(1) + _uvarint(0) + _uvarint(len(struct_bytes)) + struct_bytes


def consumer_group_records(value: dict | None, group_id: str, previous: dict | None) -> list[tuple[bytes, bytes | None]]:
    """Kafka's records for one consumer group snapshot (None: the group was deleted); `previous`:
    the snapshot written before, whose members no longer present get tombstones."""
    out: list[tuple[bytes, bytes | None]] = []
    members = [] if value is None else value["members"]
    present = {m["member_id"] for m in members}
    gone = [m["member_id"] for m in (previous or {}).get("members", []) if m["member_id"] not in present]
    for member_id in list(dict.fromkeys(gone + list((value or {}).get("removed_members", ())))):
        if member_id in present:
            continue
        out += [(_consumer_key(CONSUMER_CURRENT_ASSIGNMENT, group_id, member_id), None),
                (_consumer_key(CONSUMER_TARGET_MEMBER, group_id, member_id), None),
                (_consumer_key(CONSUMER_MEMBER_METADATA, group_id, member_id), None)]
    regexes = (value or {}).get("resolved_regexes", {})
    for regex in (previous or {}).get("resolved_regexes", {}):
        if regex not in regexes:  # no member subscribes to it any more
            out.append((_consumer_key(CONSUMER_REGULAR_EXPRESSION, group_id, regex), None))
    if value is None:
        return out + [(_consumer_key(CONSUMER_TARGET_METADATA, group_id), None),
                      (_consumer_key(CONSUMER_GROUP_METADATA, group_id), None)]
    v0 = struct.pack(">h", 0)
    for m in members:
        out.append((_consumer_key(CONSUMER_MEMBER_METADATA, group_id, m["member_id"]),
                    v0 + _cnullable(m["instance_id"]) + _cnullable(m["rack_id"]) + _cstr(m["client_id"] or "")
                    + _cstr(m["client_host"] or "") + _carray([_cstr(n) for n in m["subscribed_topic_names"]])
                    + _cnullable(m["subscribed_topic_regex"]) + struct.pack(">i", m["rebalance_timeout_ms"])
                    + _cnullable(m["server_assignor"]) + _classic_member_tags(m.get("classic"))))
    # As in Kafka, a resolution's records come before the group epoch it bumps.
    for regex, topics in sorted(regexes.items()):
        out.append((_consumer_key(CONSUMER_REGULAR_EXPRESSION, group_id, regex),
                    _regex_value(topics, value.get("regex_refresh_ms", 0))))
    out.append((_consumer_key(CONSUMER_GROUP_METADATA, group_id),
                v0 + struct.pack(">i", value["group_epoch"]) + _NO_TAGS))
    for member_id, parts in value["target"].items():
        out.append((_consumer_key(CONSUMER_TARGET_MEMBER, group_id, member_id),
                    v0 + _topic_partitions({t: list(ps) for t, ps in parts.items()}, False, as_listed=True)
                    + _NO_TAGS))
    out.append((_consumer_key(CONSUMER_TARGET_METADATA, group_id),
                v0 + struct.pack(">i", value["assignment_epoch"]) + _NO_TAGS))
    for m in members:
        out.append((_consumer_key(CONSUMER_CURRENT_ASSIGNMENT, group_id, m["member_id"]),
                    v0 + struct.pack(">iib", m["member_epoch"], m["previous_member_epoch"],
                                     _MEMBER_STATE.get(m["state"], 127))
                    + _topic_partitions(m["assigned"], True) + _topic_partitions(m["pending_revocation"], True)
                    + _NO_TAGS))
    return out


# ---- streams groups (KIP-1071) in Kafka's form -----------------------------------------------

STREAMS_GROUP_METADATA, STREAMS_MEMBER_METADATA = 17, 19
STREAMS_TARGET_METADATA, STREAMS_TARGET_MEMBER, STREAMS_CURRENT_ASSIGNMENT, STREAMS_TOPOLOGY = 20, 21, 22, 23
STREAMS_RECORD_TYPES = frozenset({STREAMS_GROUP_METADATA, STREAMS_MEMBER_METADATA, STREAMS_TARGET_METADATA,
                                  STREAMS_TARGET_MEMBER, STREAMS_CURRENT_ASSIGNMENT, STREAMS_TOPOLOGY})
# Kafka's default of ValidatedTopologyEpoch (tag 0 of type 17): not written when it is the value.
NO_VALIDATED_TOPOLOGY = -1


def java_order(text: str) -> bytes:
    """Sort key of Java's String.compareTo (UTF-16 code units), which Kafka's records sort by."""
    return text.encode("utf-16-be", "surrogatepass")


def _tagged(fields: list[tuple[int, bytes]]) -> bytes:
    """A flexible struct's tagged fields, ascending tags, each already encoded."""
    return _uvarint(len(fields)) + b"".join(_uvarint(tag) + _uvarint(len(data)) + data for tag, data in fields)


def _key_values(pairs: dict, sort: bool) -> bytes:
    """[Key, Value] structs (ClientTags, LastAssignmentConfigs, TopicConfigs)."""
    items = sorted(pairs.items(), key=lambda kv: java_order(kv[0])) if sort else pairs.items()
    return _carray([_cstr(k) + _cstr(v) + _NO_TAGS for k, v in items])


def _task_ids(tasks: dict, member_epoch: int | None = None) -> bytes:
    """[SubtopologyId, Partitions] sorted by subtopology id then partition, as Kafka sorts them.
    `member_epoch` given: the active tasks of a current assignment, whose per-partition epochs
    ({partition: epoch}) go in tag 0 (AssignmentEpochs); a plain list of partitions there gets
    the member epoch for each, the epoch Kafka's loader assumes where the tag is missing."""
    items = []
    for sid, partitions in sorted(tasks.items(), key=lambda kv: java_order(kv[0])):
        ordered = sorted(int(p) for p in partitions)
        tags = _NO_TAGS
        if member_epoch is not None and ordered:   # no partitions: the tag's default, not written
            epochs = partitions if isinstance(partitions, dict) else dict.fromkeys(ordered, member_epoch)
            tags = _tagged([(0, _int32s([epochs[p] for p in ordered]))])
        items.append(_cstr(sid) + _int32s(ordered) + tags)
    return _carray(items)


def _topic_info(info: dict) -> bytes:
    return (_cstr(info["name"]) + struct.pack(">ih", info["partitions"], info["replication_factor"])
            + _key_values(info.get("topic_configs") or {}, sort=False) + _NO_TAGS)


def _int16s(values) -> bytes:
    return _carray([struct.pack(">h", v) for v in values])


def _topology_value(topology: dict) -> bytes:
    """StreamsGroupTopologyValue: the heartbeat's topology, in the order the member sent it."""
    subtopologies = []
    for s in topology["subtopologies"]:
        copartition = [_int16s(g["source_topics"]) + _int16s(g["source_topic_regex"])
                       + _int16s(g["repartition_source_topics"]) + _NO_TAGS for g in s["copartition_groups"]]
        subtopologies.append(
            _cstr(s["subtopology_id"]) + _carray([_cstr(t) for t in s["source_topics"]])
            + _carray([_cstr(r) for r in s["source_topic_regex"]])
            + _carray([_topic_info(i) for i in s["state_changelog_topics"]])
            + _carray([_cstr(t) for t in s["repartition_sink_topics"]])
            + _carray([_topic_info(i) for i in s["repartition_source_topics"]]) + _carray(copartition) + _NO_TAGS)
    return struct.pack(">hi", 0, topology["epoch"]) + _carray(subtopologies) + _NO_TAGS


def _streams_member_value(meta: dict) -> bytes:
    endpoint = meta.get("user_endpoint")
    endpoint_bytes = b"\xff" if endpoint is None else \
        b"\x01" + _cstr(endpoint["host"]) + struct.pack(">H", endpoint["port"]) + _NO_TAGS
    return (struct.pack(">h", 0) + _cnullable(meta.get("instance_id")) + _cnullable(meta.get("rack_id"))
            + _cstr(meta["client_id"]) + _cstr(meta["client_host"])
            + struct.pack(">ii", meta["rebalance_timeout_ms"], meta["topology_epoch"]) + _cstr(meta["process_id"])
            + endpoint_bytes + _key_values(meta.get("client_tags") or {}, sort=True) + _NO_TAGS)


def _streams_metadata_value(meta: dict) -> bytes:
    tags = []
    if meta.get("validated_topology_epoch", NO_VALIDATED_TOPOLOGY) != NO_VALIDATED_TOPOLOGY:
        tags.append((0, struct.pack(">i", meta["validated_topology_epoch"])))
    if meta.get("last_assignment_configs"):
        # The spec's default is an empty list (a JSON null default), which is not written.
        tags.append((1, _key_values(meta["last_assignment_configs"], sort=True)))
    return struct.pack(">hiq", 0, meta["epoch"], meta["metadata_hash"]) + _tagged(tags)


def _target_metadata_value(epoch: int, timestamp_ms: int) -> bytes:
    return struct.pack(">hi", 0, epoch) + _tagged([(0, struct.pack(">q", timestamp_ms))] if timestamp_ms else [])


def _current_assignment_value(a: dict) -> bytes:
    epoch = a["member_epoch"]
    return (struct.pack(">hiib", 0, epoch, a["previous_member_epoch"], a["state"])
            + _task_ids(a["active"], epoch) + _task_ids(a["standby"]) + _task_ids(a["warmup"])
            + _task_ids(a["active_pending_revocation"], epoch) + _task_ids(a["standby_pending_revocation"])
            + _task_ids(a["warmup_pending_revocation"]) + _NO_TAGS)


def _target_member_value(tasks: dict) -> bytes:
    return (struct.pack(">h", 0) + _task_ids(tasks["active"]) + _task_ids(tasks["standby"])
            + _task_ids(tasks["warmup"]) + _NO_TAGS)


def streams_group_records(value: dict | None, group_id: str, previous: dict | None) -> list[tuple[bytes, bytes | None]]:
    """Kafka's records for one streams group snapshot (None: the group was deleted); `previous`:
    the snapshot written before, whose members no longer present (and the snapshot's
    `removed_members`) get tombstones. Kafka's order: a removed member's three tombstones
    (current assignment, target, metadata); then members' metadata, the topology, the group's
    metadata (epoch), each member's target, the target's metadata, each member's current
    assignment. A deleted group's tombstones come by type, as StreamsGroup writes them:
    current assignments, targets, target metadata, members, group metadata, topology."""
    def key(kind: int, member: str | None = None) -> bytes:
        return _consumer_key(kind, group_id, member)

    members = {} if value is None else value["members"]
    before = (previous or {}).get("members", {})
    gone = [m for m in dict.fromkeys([*before, *(value or {}).get("removed_members", ())]) if m not in members]
    if value is None:
        return ([(key(STREAMS_CURRENT_ASSIGNMENT, m), None) for m in gone]
                + [(key(STREAMS_TARGET_MEMBER, m), None) for m in gone] + [(key(STREAMS_TARGET_METADATA), None)]
                + [(key(STREAMS_MEMBER_METADATA, m), None) for m in gone]
                + [(key(STREAMS_GROUP_METADATA), None), (key(STREAMS_TOPOLOGY), None)])
    out: list[tuple[bytes, bytes | None]] = []
    for m in gone:
        out += [(key(STREAMS_CURRENT_ASSIGNMENT, m), None), (key(STREAMS_TARGET_MEMBER, m), None),
                (key(STREAMS_MEMBER_METADATA, m), None)]
    for member_id, member in members.items():
        out.append((key(STREAMS_MEMBER_METADATA, member_id), _streams_member_value(member["metadata"])))
    if value.get("topology") is not None:
        out.append((key(STREAMS_TOPOLOGY), _topology_value(value["topology"])))
    elif (previous or {}).get("topology") is not None:
        out.append((key(STREAMS_TOPOLOGY), None))
    out.append((key(STREAMS_GROUP_METADATA), _streams_metadata_value(value["metadata"])))
    target = value["target"]
    for member_id, tasks in target["members"].items():
        out.append((key(STREAMS_TARGET_MEMBER, member_id), _target_member_value(tasks)))
    out.append((key(STREAMS_TARGET_METADATA),
                _target_metadata_value(target["assignment_epoch"], target.get("assignment_timestamp_ms", 0))))
    for member_id, member in members.items():
        out.append((key(STREAMS_CURRENT_ASSIGNMENT, member_id), _current_assignment_value(member["assignment"])))
    return out


# ---- the coordinator's records in Kafka's form -----------------------------------------------

def kafka_record(record: Record, topic_id: uuid.UUID | None = None) -> tuple[str, bytes, bytes | None]:
    """(group id, key, value) of one coordinator record; `topic_id`: the committed topic's."""
    if isinstance(record, (OffsetCommitRecord, TxnOffsetCommitRecord)):
        key = offset_commit_key(record.group_id, record.topic, record.partition)
        if record.value is None:
            return record.group_id, key, None
        return record.group_id, key, offset_commit_value(record.value, topic_id)
    if isinstance(record, GroupMetadataRecord):
        key = group_metadata_key(record.group_id)
        return record.group_id, key, None if record.value is None else group_metadata_value(record.value)
    raise TypeError(f"no Kafka form for a {type(record).__name__}")


class OffsetsTopic:
    """The coordinator's record sink: each operation's records as one batch per
    `__consumer_offsets` partition, written (to durable state, when there is
    a data dir) before any partition holds them. The topic is created the first time a group
    needs it, as Kafka creates it on the first FindCoordinator.

    Offsets committed in a transaction (TxnOffsetCommitRecord) go in a transactional batch of
    their own carrying the producer's id and epoch (whose epoch the transaction coordinator has
    verified); `write_marker` ends the transaction. Compaction never runs while a partition has
    a transaction open (Kafka's cleaner stops at the last stable offset) and keeps what Kafka's
    keeps: committed transactions' records as any other, no aborted ones, no markers."""

    def __init__(self, topics, partitions: int, now_ms: Callable[[], int] | None = None):
        self.topics = topics          # kcoord.log.topics.TopicStore
        self.partitions = partitions  # offsets.topic.num.partitions, for a topic created here
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.durable = None           # kcoord.storage.DurableState, with a data dir
        # The partition count groups are hashed over: the topic's when this node first used it.
        # Kafka's coordinator too keeps the count it started with if the topic grows.
        self._count: tuple[object, int] | None = None
        self._compacted: dict[int, int] = {}  # partition -> its bytes after its last compaction
        self._sizes: dict[int, int] = {}      # partition -> its bytes (at least) since then
        # partition -> [the log end it accounts for, key -> (key, value, timestamp, offset) of the
        # latest record of each key, in log order, producer id -> the same of its transaction not
        # ended yet]: what compacting it would keep.
        self._live: dict[int, list] = {}
        # Each consumer and streams group's last snapshot written, for the tombstones of members
        # gone since.
        self._consumer_groups: dict[str, dict] = {}
        self._streams_groups: dict[str, dict] = {}
        self._share_groups: dict[str, dict] = {}

    def ensure(self):
        """The topic, created with Kafka's partition count and configs if it does not exist (the
        store's settings for it, where it has them: its replication factor too)."""
        topic = self.topics.get(TOPIC)
        if topic is None:
            if TOPIC in getattr(self.topics, "internal", {}):
                topic = self.topics.create(TOPIC)
            else:
                topic = self.topics.create(TOPIC, self.partitions, dict(TOPIC_CONFIGS))
        return topic

    def remember_consumer_group(self, group_id: str, value: dict) -> None:
        """A consumer group as a partition's records hold it (loaded by a coordinator): the
        tombstones of its next snapshot are worked out against it."""
        self._consumer_groups[group_id] = value

    def remember_streams_group(self, group_id: str, value: dict) -> None:
        """remember_consumer_group's counterpart for a streams group."""
        self._streams_groups[group_id] = value

    def remember_share_group(self, group_id: str, value: dict) -> None:
        """remember_consumer_group's counterpart for a share group."""
        self._share_groups[group_id] = value

    def partition_for(self, group_id: str, topic) -> int:
        if self._count is None or self._count[0] != topic.topic_id:
            self._count = (topic.topic_id, len(topic.partitions))
        return offsets_partition_for(group_id, self._count[1])

    def append(self, records: list[Record]) -> None:
        """All of `records` or none: an exception leaves every partition as it was."""
        topic = self.ensure()
        now = self.now_ms()
        grouped: dict[int, list[tuple[bytes, bytes | None]]] = {}   # partition -> (key, value), all at `now`
        written: dict[str, dict | None] = {}
        written_streams: dict[str, dict | None] = {}
        written_share: dict[str, dict | None] = {}
        # A commit's records all name one group and few topics: the group's partition (Java's
        # String.hashCode of its id) and each topic's id are looked up once per append.
        partition_of: dict[str, int] = {}
        id_tags: dict[str, bytes] = {}   # topic -> its id as the value's tagged field
        # (partition, producer id, epoch) -> the (key, value) of a transaction's offsets
        transactional: dict[tuple[int, int, int], list[tuple[bytes, bytes | None]]] = {}
        for record in records:
            if type(record) is OffsetCommitRecord:   # the commonest by far: encoded here directly
                group_id, name = record.group_id, record.topic
                tags = id_tags.get(name)
                if tags is None:
                    committed = self.topics.get(name)
                    tags = id_tags[name] = _topic_id_tag(None if committed is None else committed.topic_id)
                key = offset_commit_key(group_id, name, record.partition)
                value = None if record.value is None else _offset_commit_value(record.value, tags)
            elif isinstance(record, ConsumerGroupRecord):
                previous = written[record.group_id] if record.group_id in written \
                    else self._consumer_groups.get(record.group_id)
                entries = grouped.setdefault(self.partition_for(record.group_id, topic), [])
                if record.replaces_classic:
                    # The classic group of this id ends here (its offsets stay), as Kafka writes it.
                    entries.append((group_metadata_key(record.group_id), None))
                entries.extend(consumer_group_records(record.value, record.group_id, previous))
                written[record.group_id] = record.value
                continue
            elif isinstance(record, StreamsGroupRecord):
                previous = written_streams[record.group_id] if record.group_id in written_streams \
                    else self._streams_groups.get(record.group_id)
                grouped.setdefault(self.partition_for(record.group_id, topic), []).extend(
                    streams_group_records(record.value, record.group_id, previous))
                written_streams[record.group_id] = record.value
                continue
            elif isinstance(record, ShareGroupRecord):
                previous = written_share[record.group_id] if record.group_id in written_share \
                    else self._share_groups.get(record.group_id)
                grouped.setdefault(self.partition_for(record.group_id, topic), []).extend(
                    sgr.share_group_records(record.value, record.group_id, previous))
                written_share[record.group_id] = record.value
                continue
            elif type(record) is TxnOffsetCommitRecord:
                committed = self.topics.get(record.topic)
                group_id, key, value = kafka_record(record, None if committed is None else committed.topic_id)
                index = self.partition_for(group_id, topic)
                transactional.setdefault((index, record.producer_id, record.producer_epoch), []).append((key, value))
                continue
            else:
                group_id, key, value = kafka_record(record)
            index = partition_of.get(group_id)
            if index is None:
                index = partition_of[group_id] = self.partition_for(group_id, topic)
            entries = grouped.get(index)
            if entries is None:
                entries = grouped[index] = []
            entries.append((key, value))
        # (partition, batch, its (key, value)s, producer id or -1, epoch); a partition's batches at
        # consecutive offsets from its log end.
        batches = []
        ends: dict[int, int] = {}
        for index, entries in grouped.items():
            partition = topic.partitions[index]
            base = ends[index] = partition.high_watermark
            batches.append((index, R.build_plain_batch(entries, base, now, partition.leader_epoch), entries, -1, -1))
            ends[index] = base + len(entries)
        for (index, producer_id, epoch), entries in transactional.items():
            partition = topic.partitions[index]
            base = ends.get(index, partition.high_watermark)
            # Base sequence 0, as Kafka's coordinator builds its transactional batches.
            batches.append((index, R.build_batch([(k, v, now) for k, v in entries], base, producer_id=producer_id,
                                                 producer_epoch=epoch, base_sequence=0,
                                                 partition_leader_epoch=partition.leader_epoch, transactional=True),
                            entries, producer_id, epoch))
            ends[index] = base + len(entries)
        if self.durable is not None:
            self.durable.append_batches([(TOPIC, index, data) for index, data, *_ in batches])
        for snapshots, latest in ((self._consumer_groups, written), (self._streams_groups, written_streams),
                                  (self._share_groups, written_share)):
            for group_id, value in latest.items():
                if value is None:
                    snapshots.pop(group_id, None)
                else:
                    snapshots[group_id] = value
        for index, data, entries, producer_id, epoch in batches:
            partition = topic.partitions[index]
            base = partition.high_watermark
            if producer_id < 0:
                partition.put_built(data, len(entries), now)
            else:
                partition.put_built(data, len(entries), now, producer_id=producer_id, producer_epoch=epoch,
                                    transactional=True)
            live = self._live.get(index)
            if live is None and base == 0:
                # A partition that was empty has no history to read back: tracked from its first
                # record on, its first compaction need not decode everything it holds by then.
                live = self._live[index] = [0, {}, {}]
            if live is not None and live[0] == base:
                # A transaction's records wait for its marker to be kept or dropped.
                latest = live[1] if producer_id < 0 else live[2].setdefault(producer_id, {})
                for i, (key, value) in enumerate(entries, base):
                    latest.pop(key, None)
                    latest[key] = (key, value, now, i)   # re-inserted: log order
                live[0] = partition.high_watermark
            else:
                self._live.pop(index, None)
            self._grown(partition, len(data))
        if batches:
            self.topics.notify_appended()

    def write_marker(self, index: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                     commit: bool, timestamp_ms: int) -> int:
        """End `producer_id`'s transaction in partition `index` with its marker (durable first,
        through the partition: kcoord.log.partition.Partition.write_marker, whose AppendError
        it raises); returns the marker's offset."""
        partition = self.ensure().partitions[index]
        base = partition.high_watermark
        offset = partition.write_marker(producer_id, producer_epoch, coordinator_epoch, commit, timestamp_ms)
        live = self._live.get(index)
        if live is not None and live[0] == base:
            _end_transaction(live, producer_id, commit)
            live[0] = partition.high_watermark
        else:
            self._live.pop(index, None)
        self._grown(partition, len(partition.batches[-1].data))
        self.topics.notify_appended()
        return offset

    def _grown(self, partition, added: int) -> None:
        """`added` bytes more in `partition`: compacted once it is twice its compacted size."""
        index = partition.index
        # Counted here rather than summed over the partition's batches on every append; an
        # overcount (records deleted meanwhile) only brings the next compaction forward.
        size = self._sizes.get(index)
        size = self._sizes[index] = partition.size_bytes() if size is None else size + added
        if size >= max(COMPACT_MIN_BYTES, 2 * self._compacted.get(index, 0)) and self.compact_partition(partition):
            self._compacted[index] = self._sizes[index] = partition.size_bytes()

    def compact(self) -> None:
        """Compact every partition (durable state calls this before it rewrites its log)."""
        topic = self.topics.get(TOPIC)
        for partition in topic.partitions if topic is not None else ():
            live = self._live.get(partition.index)
            if (live is not None and live[0] == partition.high_watermark
                    and self._sizes.get(partition.index) == self._compacted.get(partition.index)):
                continue  # nothing appended since it was last compacted
            if self.compact_partition(partition):
                self._compacted[partition.index] = self._sizes[partition.index] = partition.size_bytes()

    def compact_partition(self, partition) -> bool:
        """Keep the latest record of each key, tombstones included, at its own offset (a
        batch of one record each), as Kafka's log cleaner keeps the latest; the offsets of
        the records dropped become gaps, as in a compacted Kafka log. A committed
        transaction's records count as any other (one older than the key's latest is dropped,
        as the coordinator does not apply it); an aborted one's and the markers go. Nothing is
        compacted while a transaction is open here: False.

        The latest record of each key is kept up to date as this topic appends (`_live`), so
        a partition nothing else wrote to since is compacted without decoding what it holds;
        one with a history unknown here (restored at start, or written by anyone else) is
        read back, as before, and tracked from then on."""
        if partition.open_transactions():
            return False
        live = self._live.get(partition.index)
        if live is None or live[0] != partition.high_watermark:
            live = self._live[partition.index] = _read_back(partition)
        if live[2]:
            return False   # a transaction the log holds no marker for: not to be decided here
        latest = live[1]
        for key in [k for k, r in latest.items() if r[3] < partition.log_start_offset]:
            del latest[key]
        kept = sorted(latest.values(), key=lambda r: r[3])   # a committed transaction's came in late
        partition.replace_batches([R.build_batch([(key, value, timestamp)], offset,
                                                 partition_leader_epoch=partition.leader_epoch)
                                   for key, value, timestamp, offset in kept])
        return True


def _read_back(partition) -> list:
    """`_live` of a partition worked out from the batches it holds."""
    live = [partition.high_watermark, {}, {}]
    for stored in partition.batches:
        batch = R.parse_batch(stored.data)
        if batch.is_control:
            _end_transaction(live, batch.producer_id, R.parse_marker(batch)[0])
            continue
        latest = live[2].setdefault(batch.producer_id, {}) if batch.is_transactional else live[1]
        for record in R.decode_records(batch):
            if record.offset >= partition.log_start_offset:
                latest.pop(record.key, None)
                # re-inserted: the dict stays in log order
                latest[record.key] = (record.key, record.value, record.timestamp, record.offset)
    return live


def _end_transaction(live: list, producer_id: int, commit: bool) -> None:
    """A marker in a partition `live` tracks: the transaction's records become the latest of
    their keys unless a later record of the key is already (Kafka's rule for transactional
    offsets), or go (abort)."""
    waiting = live[2].pop(producer_id, None)
    if not waiting or not commit:
        return
    latest = live[1]
    for key, entry in waiting.items():
        current = latest.get(key)
        if current is None or entry[3] > current[3]:
            latest.pop(key, None)
            latest[key] = entry


# At the end: share_group_records builds on this module's writers.
from kcoord.log import share_group_records as sgr  # noqa: E402
