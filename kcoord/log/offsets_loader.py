"""What a coordinator loads from one `__consumer_offsets` partition, as Kafka's loader replays it.

The partition's records, read in offset order from its log start, are the only durable form of
groups and offsets: each key's latest record wins and a tombstone removes the key. The classic
groups (GroupMetadata), the committed offsets (OffsetCommit) and the consumer groups of KIP-848
(types 3, 5, 6, 7, 8 and 16) that remain come back in the shapes the coordinator loads
(kcoord.coordinator: a classic group's metadata dict, a consumer group's snapshot, each
offset), and so do the streams groups of KIP-1071 (types 17 and 19-23, as the snapshot
kcoord.log.consumer_offsets describes). A group tombstone removes the group, not its offsets:
the coordinator writes an offset's tombstone itself wherever an offset goes (deletion, expiry),
as Kafka does.

Offsets committed in a transaction (a transactional batch, TxnOffsetCommit) wait for their
producer's marker: a commit marker applies them unless an offset written later in the log was
committed for the same partition meanwhile (Kafka's replayEndTransactionMarker compares record
offsets), an abort marker drops them, a tombstone of the partition drops them too, and those
still waiting at the end stay pending (the transaction coordinator will end them).

What the records do not carry comes from the moment of loading, as in Kafka: a classic group's
state starts at its currentStateTimestamp, members' sessions start afresh, a consumer group's
subscribed topic metadata and its assignor are worked out again from its members.
"""
from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass, field

from kcoord.coordinator.offsets.committed import CommittedOffset
from kcoord.coordinator.offsets.transactional import LoadedPending
from kcoord.log import consumer_offsets as co
from kcoord.log import share_group_records as sgr
from wire import records as R

_STATES = {v: k for k, v in co._MEMBER_STATE.items()}


class _Reader(co._Reader):
    """The flexible (compact) forms the consumer group values use."""

    def compact_nullable_str(self, what: str) -> str | None:
        n = self.uvarint(what)
        return None if n == 0 else self._take(n - 1, what).decode("utf-8")

    def compact_bytes(self, what: str) -> bytes:
        n = self.uvarint(what)
        return b"" if n == 0 else self._take(n - 1, what)

    def compact_len(self, what: str) -> int:
        n = self.uvarint(what)
        return 0 if n == 0 else n - 1

    def uuid(self, what: str) -> str:
        return str(uuid.UUID(bytes=self._take(16, what)))

    def int32s(self, what: str) -> list[int]:
        return [self.int(">i", what) for _ in range(self.compact_len(what))]

    def topic_partitions(self, what: str, with_epochs: bool) -> dict:
        """[TopicId, Partitions, tags] as topic id -> partitions in record order (with epochs:
        partition -> its assignment epoch, from tag 0)."""
        out = {}
        for _ in range(self.compact_len(what)):
            topic_id = self.uuid(what)
            partitions = self.int32s(what)
            tags = self.tagged_fields(what)
            if with_epochs:
                epochs = []
                if 0 in tags:
                    epochs = _Reader(tags[0]).int32s("AssignmentEpochs")
                out[topic_id] = {str(p): (epochs[i] if i < len(epochs) else 0) for i, p in enumerate(partitions)}
            else:
                out[topic_id] = partitions
        return out


def _member_identity(r: _Reader) -> dict:
    """The fields a consumer and a streams group member's metadata value both start with."""
    return {"instance_id": r.compact_nullable_str("InstanceId"), "rack_id": r.compact_nullable_str("RackId"),
            "client_id": r.compact_str("ClientId"), "client_host": r.compact_str("ClientHost")}


def _member_metadata(data: bytes) -> dict:
    r = _Reader(data)
    r.int(">h", "version")
    out = {**_member_identity(r),
           "subscribed_topic_names": [r.compact_str("SubscribedTopicNames")
                                      for _ in range(r.compact_len("SubscribedTopicNames"))],
           "subscribed_topic_regex": r.compact_nullable_str("SubscribedTopicRegex"),
           "rebalance_timeout_ms": r.int(">i", "RebalanceTimeoutMs"),
           "server_assignor": r.compact_nullable_str("ServerAssignor"), "classic": None}
    tags = r.tagged_fields("tagged fields")
    if tags.get(0, b"\x00")[:1] == b"\x01":
        c = _Reader(tags[0][1:])
        session = c.int(">i", "SessionTimeoutMs")
        protocols = []
        for _ in range(c.compact_len("SupportedProtocols")):
            name = c.compact_str("Name")
            meta = c.compact_bytes("Metadata")
            c.tagged_fields("tagged fields")
            protocols.append([name, base64.b64encode(meta).decode("ascii")])
        out["classic"] = {"session_timeout_ms": session, "protocols": protocols}
    return out


def _current_assignment(data: bytes) -> dict:
    r = _Reader(data)
    r.int(">h", "version")
    epoch, previous, state = r.int(">i", "MemberEpoch"), r.int(">i", "PreviousMemberEpoch"), r.int(">b", "State")
    return {"member_epoch": epoch, "previous_member_epoch": previous, "state": _STATES.get(state, "unknown"),
            "assigned": r.topic_partitions("AssignedPartitions", True),
            "pending_revocation": r.topic_partitions("PartitionsPendingRevocation", True)}


def _int32_value(data: bytes, what: str) -> int:
    r = _Reader(data)
    r.int(">h", "version")
    return r.int(">i", what)


def _target_member(data: bytes) -> dict:
    r = _Reader(data)
    r.int(">h", "version")
    return r.topic_partitions("TopicPartitions", False)


def _regex(data: bytes) -> tuple[list[str], int]:
    r = _Reader(data)
    r.int(">h", "version")
    topics = [r.compact_str("Topics") for _ in range(r.compact_len("Topics"))]
    r.int(">q", "Version")
    return topics, r.int(">q", "Timestamp")


# ---- streams groups (KIP-1071) ---------------------------------------------------------------

def _strings(r: _Reader, what: str) -> list[str]:
    return [r.compact_str(what) for _ in range(r.compact_len(what))]


def _key_values(r: _Reader, what: str) -> dict[str, str]:
    out = {}
    for _ in range(r.compact_len(what)):
        k = r.compact_str(what)
        out[k] = r.compact_str(what)
        r.tagged_fields(what)
    return out


def _task_ids(r: _Reader, what: str, member_epoch: int | None = None) -> dict:
    """{subtopology: [partitions]}; with `member_epoch` (active tasks of a current assignment)
    {subtopology: {partition: epoch}}, from tag 0, or the member epoch where it is missing or
    does not match the partitions (Kafka's loader does the same)."""
    out = {}
    for _ in range(r.compact_len(what)):
        sid = r.compact_str(what)
        partitions = r.int32s(what)
        tags = r.tagged_fields(what)
        if member_epoch is None:
            out[sid] = partitions
            continue
        epochs = _Reader(tags[0]).int32s("AssignmentEpochs") if 0 in tags else []
        if len(epochs) != len(partitions):
            epochs = [member_epoch] * len(partitions)
        out[sid] = dict(zip(partitions, epochs))
    return out


def _topic_infos(r: _Reader, what: str) -> list[dict]:
    out = []
    for _ in range(r.compact_len(what)):
        name = r.compact_str(what)
        partitions, replication = r.int(">i", what), r.int(">h", what)
        out.append({"name": name, "partitions": partitions, "replication_factor": replication,
                    "topic_configs": _key_values(r, what)})
        r.tagged_fields(what)
    return out


def _int16s(r: _Reader, what: str) -> list[int]:
    return [r.int(">h", what) for _ in range(r.compact_len(what))]


def _flexible_value(data: bytes, name: str, read) -> tuple[object, dict[int, bytes]]:
    """A flexible value: its version, the fields `read(reader)` returns, its tagged fields (by tag),
    and nothing after them."""
    r = _Reader(data)
    r.int(">h", "version")
    out = read(r)
    tags = r.tagged_fields("tagged fields")
    r.done(name)
    return out, tags


def _read_subtopology(r: _Reader) -> dict:
    s = {"subtopology_id": r.compact_str("SubtopologyId"), "source_topics": _strings(r, "SourceTopics"),
         "source_topic_regex": _strings(r, "SourceTopicRegex"),
         "state_changelog_topics": _topic_infos(r, "StateChangelogTopics"),
         "repartition_sink_topics": _strings(r, "RepartitionSinkTopics"),
         "repartition_source_topics": _topic_infos(r, "RepartitionSourceTopics"), "copartition_groups": []}
    for _ in range(r.compact_len("CopartitionGroups")):
        s["copartition_groups"].append({"source_topics": _int16s(r, "CopartitionGroups"),
                                        "source_topic_regex": _int16s(r, "CopartitionGroups"),
                                        "repartition_source_topics": _int16s(r, "CopartitionGroups")})
        r.tagged_fields("CopartitionGroups")
    r.tagged_fields("Subtopologies")
    return s


def _streams_topology(data: bytes) -> dict:
    return _flexible_value(data, "StreamsGroupTopologyValue", lambda r: {
        "epoch": r.int(">i", "Epoch"),
        "subtopologies": [_read_subtopology(r) for _ in range(r.compact_len("Subtopologies"))]})[0]


def streams_metadata_value(data: bytes) -> dict:
    out, tags = _flexible_value(data, "StreamsGroupMetadataValue", lambda r: {
        "epoch": r.int(">i", "Epoch"), "metadata_hash": r.int(">q", "MetadataHash"),
        "validated_topology_epoch": co.NO_VALIDATED_TOPOLOGY, "last_assignment_configs": {}})
    if 0 in tags:
        out["validated_topology_epoch"] = _Reader(tags[0]).int(">i", "ValidatedTopologyEpoch")
    if 1 in tags:
        out["last_assignment_configs"] = _key_values(_Reader(tags[1]), "LastAssignmentConfigs")
    return out


def _read_streams_member(r: _Reader) -> dict:
    out = {**_member_identity(r),
           "rebalance_timeout_ms": r.int(">i", "RebalanceTimeoutMs"), "topology_epoch": r.int(">i", "TopologyEpoch"),
           "process_id": r.compact_str("ProcessId"), "user_endpoint": None}
    if r.int(">b", "UserEndpoint") >= 0:
        out["user_endpoint"] = {"host": r.compact_str("UserEndpoint.Host"), "port": r.int(">H", "UserEndpoint.Port")}
        r.tagged_fields("UserEndpoint")
    out["client_tags"] = _key_values(r, "ClientTags")
    return out


def _streams_member(data: bytes) -> dict:
    return _flexible_value(data, "StreamsGroupMemberMetadataValue", _read_streams_member)[0]


def _read_streams_current(r: _Reader) -> dict:
    epoch = r.int(">i", "MemberEpoch")
    return {"member_epoch": epoch, "previous_member_epoch": r.int(">i", "PreviousMemberEpoch"),
            "state": r.int(">b", "State"), "active": _task_ids(r, "ActiveTasks", epoch),
            "standby": _task_ids(r, "StandbyTasks"), "warmup": _task_ids(r, "WarmupTasks"),
            "active_pending_revocation": _task_ids(r, "ActiveTasksPendingRevocation", epoch),
            "standby_pending_revocation": _task_ids(r, "StandbyTasksPendingRevocation"),
            "warmup_pending_revocation": _task_ids(r, "WarmupTasksPendingRevocation")}


def streams_current_assignment_value(data: bytes) -> dict:
    return _flexible_value(data, "StreamsGroupCurrentMemberAssignmentValue", _read_streams_current)[0]


def _streams_target_member(data: bytes) -> dict:
    return _flexible_value(data, "StreamsGroupTargetAssignmentMemberValue", lambda r: {
        "active": _task_ids(r, "ActiveTasks"), "standby": _task_ids(r, "StandbyTasks"),
        "warmup": _task_ids(r, "WarmupTasks")})[0]


def streams_target_metadata_value(data: bytes) -> tuple[int, int]:
    epoch, tags = _flexible_value(data, "StreamsGroupTargetAssignmentMetadataValue",
                                  lambda r: r.int(">i", "AssignmentEpoch"))
    return epoch, (_Reader(tags[0]).int(">q", "AssignmentTimestamp") if 0 in tags else 0)


class StreamsGroupParts:
    """One streams group's records as a partition replays them, each key's latest winning."""

    _MEMBER_RECORDS = {co.STREAMS_MEMBER_METADATA: ("members", _streams_member),
                       co.STREAMS_TARGET_MEMBER: ("target", _streams_target_member),
                       co.STREAMS_CURRENT_ASSIGNMENT: ("current", streams_current_assignment_value)}

    def __init__(self):
        self.metadata: dict | None = None
        self.topology: dict | None = None
        self.target_epoch: tuple[int, int] | None = None
        self.members: dict[str, dict] = {}
        self.target: dict[str, dict] = {}
        self.current: dict[str, dict] = {}

    def replay(self, kind: int, key: co._Reader, value: bytes | None) -> None:
        """One record of type `kind` (17, 19-23); `key` read up to the group id."""
        if kind == co.STREAMS_GROUP_METADATA:
            self.metadata = None if value is None else streams_metadata_value(value)
        elif kind == co.STREAMS_TOPOLOGY:
            self.topology = None if value is None else _streams_topology(value)
        elif kind == co.STREAMS_TARGET_METADATA:
            self.target_epoch = None if value is None else streams_target_metadata_value(value)
        else:
            field, decode = self._MEMBER_RECORDS[kind]
            member_id = key.str("member")
            held = getattr(self, field)
            held.pop(member_id, None)   # re-inserted: members keep the order of their latest records
            if value is not None:
                held[member_id] = decode(value)

    def snapshot(self, group_id: str) -> dict | None:
        """The coordinator's snapshot (kcoord.log.consumer_offsets describes it); None while the
        group's metadata record is missing (deleted, or never complete). A member is one with
        both its metadata and its current assignment, which Kafka writes together."""
        if self.metadata is None:
            return None
        epoch, timestamp = self.target_epoch or (0, 0)
        return {"group_id": group_id, "metadata": self.metadata, "topology": self.topology,
                "members": {m: {"metadata": meta, "assignment": self.current[m]}
                            for m, meta in self.members.items() if m in self.current},
                "target": {"assignment_epoch": epoch, "assignment_timestamp_ms": timestamp,
                           "members": dict(self.target)},
                "removed_members": []}


# ---- share groups (KIP-932) ------------------------------------------------------------------

def _share_member(data: bytes) -> dict:
    return _flexible_value(data, "ShareGroupMemberMetadataValue", lambda r: {
        "rack_id": r.compact_nullable_str("RackId"), "client_id": r.compact_str("ClientId"),
        "client_host": r.compact_str("ClientHost"), "subscribed_topic_names": _strings(r, "SubscribedTopicNames")})[0]


def _share_metadata(data: bytes) -> dict:
    return _flexible_value(data, "ShareGroupMetadataValue", lambda r: {
        "epoch": r.int(">i", "Epoch"), "metadata_hash": r.int(">q", "MetadataHash")})[0]


def _share_target_member(data: bytes) -> dict:
    return _flexible_value(data, "ShareGroupTargetAssignmentMemberValue",
                           lambda r: r.topic_partitions("TopicPartitions", False))[0]


def _share_current(data: bytes) -> dict:
    return _flexible_value(data, "ShareGroupCurrentMemberAssignmentValue", lambda r: {
        "member_epoch": r.int(">i", "MemberEpoch"), "previous_member_epoch": r.int(">i", "PreviousMemberEpoch"),
        "state": r.int(">b", "State"), "assigned": r.topic_partitions("AssignedPartitions", False)})[0]


def _share_state_partitions(data: bytes) -> dict:
    def infos(r: _Reader, what: str) -> dict:
        out = {}
        for _ in range(r.compact_len(what)):
            topic_id, name, partitions = r.uuid(what), r.compact_str(what), r.int32s(what)
            r.tagged_fields(what)
            out[topic_id] = {"name": name, "partitions": partitions}
        return out

    def deleting(r: _Reader) -> dict:
        out = {}
        for _ in range(r.compact_len("DeletingTopics")):
            topic_id, name = r.uuid("DeletingTopics"), r.compact_str("DeletingTopics")
            r.tagged_fields("DeletingTopics")
            out[topic_id] = name
        return out
    return _flexible_value(data, "ShareGroupStatePartitionMetadataValue", lambda r: {
        "initializing": infos(r, "InitializingTopics"), "initialized": infos(r, "InitializedTopics"),
        "deleting": deleting(r)})[0]


class ShareGroupParts(StreamsGroupParts):
    """One share group's records as a partition replays them (types 10-15), each key's latest
    winning."""

    _MEMBER_RECORDS = {sgr.SHARE_MEMBER_METADATA: ("members", _share_member),
                       sgr.SHARE_TARGET_MEMBER: ("target", _share_target_member),
                       sgr.SHARE_CURRENT_ASSIGNMENT: ("current", _share_current)}

    def __init__(self):
        super().__init__()
        self.state_partitions: dict | None = None

    def replay(self, kind: int, key: co._Reader, value: bytes | None) -> None:
        if kind == sgr.SHARE_GROUP_METADATA:
            self.metadata = None if value is None else _share_metadata(value)
        elif kind == sgr.SHARE_TARGET_METADATA:
            self.target_epoch = None if value is None else streams_target_metadata_value(value)
        elif kind == sgr.SHARE_STATE_PARTITION_METADATA:
            self.state_partitions = None if value is None else _share_state_partitions(value)
        else:
            super().replay(kind, key, value)

    def snapshot(self, group_id: str) -> dict | None:
        out = super().snapshot(group_id)
        if out is None:
            return None
        del out["topology"]
        out["state_partitions"] = self.state_partitions or {"initializing": {}, "initialized": {}, "deleting": {}}
        return out


def _classic_group(group_id: str, value: dict, now_ms: int) -> dict:
    """A GroupMetadataValue as the coordinator's group metadata (membership.load_group): each member
    comes back with the one protocol Kafka keeps, the group's."""
    protocol = value["protocol"]
    since = value.get("currentStateTimestamp", co.NO_TIMESTAMP)
    since = now_ms if since in (None, co.NO_TIMESTAMP) else since
    members = [{"member_id": m["memberId"], "instance_id": m.get("groupInstanceId"), "client_id": m["clientId"],
                "client_host": m["clientHost"], "rebalance_timeout_ms": m.get("rebalanceTimeout", m["sessionTimeout"]),
                "session_timeout_ms": m["sessionTimeout"], "protocol_type": value["protocolType"] or None,
                "protocols": [(protocol, base64.b64decode(m["subscription"]))] if protocol else [],
                "assignment": base64.b64decode(m["assignment"])}
               for m in value["members"]]
    return {"group_id": group_id, "generation": value["generation"], "created_ms": since,
            "protocol_type": value["protocolType"] or None, "protocol_name": protocol, "leader_id": value["leader"],
            "emptied_at_ms": None if members else since, "state_ms": since, "members": members}


def _consumer_group(group_id: str, parts: dict, now_ms: int) -> dict | None:
    """A consumer group's records as the coordinator's snapshot (kcoord.coordinator.consumer.snapshot.restore); None
    while its group epoch record is missing (deleted, or never complete)."""
    if parts.get("epoch") is None:
        return None
    members = []
    for member_id, meta in parts["members"].items():
        current = parts["current"].get(member_id)
        if current is None:
            continue
        members.append({"member_id": member_id, **meta, **current})
    regexes = {regex: topics for regex, (topics, _) in sorted(parts["regexes"].items())}
    refreshed = max((ts for _, ts in parts["regexes"].values()), default=0)
    return {"group_id": group_id, "created_ms": now_ms, "state_ms": now_ms, "emptied_at_ms": None,
            "group_epoch": parts["epoch"], "assignment_epoch": parts.get("target_epoch") or 0,
            "assignor_name": "", "assignment_timestamp_ms": 0,
            "resolved_regexes": regexes, "regex_refresh_ms": refreshed,
            "regex_topics": sorted({t for topics in regexes.values() for t in topics}),
            "target": parts["target"], "members": members}


@dataclass
class LoadedPartition:
    """What one __consumer_offsets partition holds, in the shapes the coordinator loads."""
    classic: list[dict]
    consumer: list[dict]
    offsets: list[tuple[str, str, int, CommittedOffset]]
    pending: LoadedPending
    streams: list[dict]   # streams group snapshots (kcoord.log.consumer_offsets describes them)
    share: list[dict] = field(default_factory=list)   # share group snapshots (kcoord.coordinator.share.snapshot)


def load_partition(partition, now_ms: int) -> tuple[list[dict], list[dict], list[tuple[str, str, int, CommittedOffset]],
                                                   LoadedPending]:
    """The classic groups, consumer groups, committed offsets and offsets of transactions not yet
    ended that `partition` holds (read_partition without the streams groups)."""
    loaded = read_partition(partition, now_ms)
    return loaded.classic, loaded.consumer, loaded.offsets, loaded.pending


def read_partition(partition, now_ms: int) -> LoadedPartition:
    """Every group and offset `partition` (a kcoord.log Partition of __consumer_offsets) holds."""
    classic: dict[str, dict] = {}
    consumer: dict[str, dict] = {}
    streams: dict[str, StreamsGroupParts] = {}
    share: dict[str, ShareGroupParts] = {}
    latest_kind: dict[str, str] = {}   # which kind of group the id named last
    offsets: dict[tuple[str, str, int], CommittedOffset] = {}
    positions: dict[tuple[str, str, int], int] = {}   # the record offset each committed offset came from
    # producer id -> (group, topic, partition) -> (record offset, offset): transactions not ended yet
    pending: dict[int, dict[tuple[str, str, int], tuple[int, CommittedOffset]]] = {}

    def parts_of(group_id: str) -> dict:
        return consumer.setdefault(group_id, {"epoch": None, "members": {}, "current": {}, "target": {},
                                              "target_epoch": None, "regexes": {}})

    for stored in partition.batches:
        batch = R.parse_batch(stored.data)
        if batch.is_control:
            commit, _ = R.parse_marker(batch)
            ended = pending.pop(batch.producer_id, {})
            for k, (position, value) in ended.items() if commit else ():
                if k not in positions or position > positions[k]:
                    offsets[k], positions[k] = value, position
            continue
        producer_id = batch.producer_id if batch.is_transactional else -1
        for record in R.decode_records(batch):
            if record.offset < partition.log_start_offset or record.key is None or len(record.key) < 2:
                continue
            kind = struct.unpack_from(">h", record.key)[0]
            value = record.value
            if kind in (co.LEGACY_OFFSET_COMMIT_KEY, co.OFFSET_COMMIT_KEY, co.GROUP_METADATA_KEY):
                key = co.decode_key(record.key)
                data = key["data"]
                if kind == co.GROUP_METADATA_KEY:
                    if value is None:
                        classic.pop(data["group"], None)
                    else:
                        classic[data["group"]] = co.decode_value(key, value)["data"]
                        latest_kind[data["group"]] = "classic"
                    continue
                k = (data["group"], data["topic"], data["partition"])
                if value is None:
                    offsets.pop(k, None)
                    positions.pop(k, None)
                    for waiting in pending.values():
                        waiting.pop(k, None)
                    continue
                v = co.decode_value(key, value)["data"]
                committed = CommittedOffset(v["offset"], v.get("leaderEpoch", -1), v["metadata"],
                                            v["commitTimestamp"], v.get("expireTimestamp"))
                if producer_id >= 0:
                    pending.setdefault(producer_id, {})[k] = (record.offset, committed)
                else:
                    offsets[k], positions[k] = committed, record.offset
                continue
            r = co._Reader(record.key)
            r.int(">h", "key type")
            group_id = r.str("group")
            if kind in co.STREAMS_RECORD_TYPES:
                streams.setdefault(group_id, StreamsGroupParts()).replay(kind, r, value)
                if kind == co.STREAMS_GROUP_METADATA and value is not None:
                    latest_kind[group_id] = "streams"
            elif kind in sgr.SHARE_RECORD_TYPES:
                share.setdefault(group_id, ShareGroupParts()).replay(kind, r, value)
                if kind == sgr.SHARE_GROUP_METADATA and value is not None:
                    latest_kind[group_id] = "share"
            elif kind == co.CONSUMER_GROUP_METADATA:
                parts_of(group_id)["epoch"] = None if value is None else _int32_value(value, "Epoch")
                if value is not None:
                    latest_kind[group_id] = "consumer"
            elif kind == co.CONSUMER_TARGET_METADATA:
                parts_of(group_id)["target_epoch"] = None if value is None else _int32_value(value, "AssignmentEpoch")
            elif kind in (co.CONSUMER_MEMBER_METADATA, co.CONSUMER_TARGET_MEMBER, co.CONSUMER_CURRENT_ASSIGNMENT,
                          co.CONSUMER_REGULAR_EXPRESSION):
                second = r.str("member")
                field, decode = {co.CONSUMER_MEMBER_METADATA: ("members", _member_metadata),
                                 co.CONSUMER_TARGET_MEMBER: ("target", _target_member),
                                 co.CONSUMER_CURRENT_ASSIGNMENT: ("current", _current_assignment),
                                 co.CONSUMER_REGULAR_EXPRESSION: ("regexes", _regex)}[kind]
                held = parts_of(group_id)[field]
                if value is None:
                    held.pop(second, None)
                else:
                    held.pop(second, None)   # re-inserted: members keep the order of their latest records
                    held[second] = decode(value)
            # Other types (types Kafka no longer writes) are not kcoord's: left alone.
    classic_out = [_classic_group(g, v, now_ms) for g, v in classic.items() if latest_kind.get(g) == "classic"]
    consumer_out = []
    for group_id, parts in consumer.items():
        if latest_kind.get(group_id) == "consumer" or group_id not in classic:
            snapshot = _consumer_group(group_id, parts, now_ms)
            if snapshot is not None:
                consumer_out.append(snapshot)
    waiting = LoadedPending([(producer_id, *k, position, value) for producer_id, entries in pending.items()
                             for k, (position, value) in entries.items()])
    waiting.floors = [(*k, positions[k]) for k in dict.fromkeys(e[1:4] for e in waiting.offsets) if k in positions]
    streams_out = [snapshot for group_id, parts in streams.items() if latest_kind.get(group_id) == "streams"
                   for snapshot in [parts.snapshot(group_id)] if snapshot is not None]
    share_out = [snapshot for group_id, parts in share.items() if latest_kind.get(group_id) == "share"
                 for snapshot in [parts.snapshot(group_id)] if snapshot is not None]
    return LoadedPartition(classic_out, consumer_out, [(g, t, p, v) for (g, t, p), v in offsets.items()], waiting,
                           streams_out, share_out)


def keys_of(topic) -> tuple[set[str], set[tuple[str, str, int]]]:
    """The group ids and the (group, topic, partition) offsets that any record of `topic`
    (__consumer_offsets) names, tombstones included."""
    groups: set[str] = set()
    offsets: set[tuple[str, str, int]] = set()
    for partition in topic.partitions:
        for stored in partition.batches:
            batch = R.parse_batch(stored.data)
            if batch.is_control:
                continue   # a transaction marker names no group
            for record in R.decode_records(batch):
                if record.key is None or len(record.key) < 2:
                    continue
                kind = struct.unpack_from(">h", record.key)[0]
                if kind in (co.LEGACY_OFFSET_COMMIT_KEY, co.OFFSET_COMMIT_KEY):
                    data = co.decode_key(record.key)["data"]
                    offsets.add((data["group"], data["topic"], data["partition"]))
                else:
                    r = co._Reader(record.key)
                    r.int(">h", "key type")
                    groups.add(r.str("group"))
    return groups, offsets


class OffsetsPartitions:
    """The runtime's view of __consumer_offsets (coordinator.runtime.PartitionLog): the topic,
    created on demand, and each partition's groups, loaded."""

    def __init__(self, topic: co.OffsetsTopic):
        self.topic = topic

    def ensure(self):
        return self.topic.ensure()

    def read(self, index: int) -> LoadedPartition:
        """Every group and offset partition `index` holds; each consumer, streams and share group is
        remembered as the log holds it, what its next snapshot's tombstones are worked out against."""
        loaded = read_partition(self.topic.ensure().partitions[index], self.topic.now_ms())
        for value in loaded.consumer:
            self.topic.remember_consumer_group(value["group_id"], value)
        for value in loaded.streams:
            self.topic.remember_streams_group(value["group_id"], value)
        for value in loaded.share:
            self.topic.remember_share_group(value["group_id"], value)
        return loaded

    def write_marker(self, index: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                     commit: bool, timestamp_ms: int) -> int:
        return self.topic.write_marker(index, producer_id, producer_epoch, coordinator_epoch, commit, timestamp_ms)
