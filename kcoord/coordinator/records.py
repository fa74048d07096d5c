"""The records the coordinator writes: what a restart needs to rebuild groups and offsets
(Kafka's GroupMetadata and OffsetCommit records of `__consumer_offsets`, which
kcoord.log.consumer_offsets writes in Kafka's form).

An operation of the coordinator computes its records together with its response; the
records reach the record sink (durable state) before any response is released, and
offsets change in memory only by replaying a written record. The sink's format on disk
is its own business (`kcoord.storage`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Union

from kcoord.coordinator.classic.group import Group
from kcoord.coordinator.offsets.committed import CommittedOffset


@dataclass(frozen=True)
class GroupMetadataRecord:
    """A group's metadata, or its tombstone (value None: the group is gone)."""
    group_id: str
    value: dict | None


@dataclass(slots=True)
class OffsetCommitRecord:
    """One committed offset, or its tombstone (value None: deleted or expired).

    Not frozen, unlike the other records: a commit makes one per partition, and a frozen
    dataclass's __init__ costs several times a plain one's. Nothing changes one once made."""
    group_id: str
    topic: str
    partition: int
    value: CommittedOffset | None


@dataclass(slots=True)
class TxnOffsetCommitRecord:
    """One offset committed inside a producer's transaction (TxnOffsetCommit): written in the
    producer's transactional batch, pending until the transaction's marker commits or aborts it."""
    group_id: str
    topic: str
    partition: int
    value: CommittedOffset
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True)
class ConsumerGroupRecord:
    """A consumer group (KIP-848) as a whole: epochs, members with their subscriptions and
    current assignments, the target assignment; or its tombstone (value None). Durable state
    keeps it as it is; kcoord.log.consumer_offsets writes it as Kafka's several record types
    (group metadata, member metadata, target assignment, current assignment).
    `replaces_classic`: the group takes the place of a classic group of the same id (online
    upgrade, or an empty classic group giving way), whose GroupMetadata tombstone Kafka writes
    first; the offsets stay."""
    group_id: str
    value: dict | None
    replaces_classic: bool = False


@dataclass(frozen=True)
class StreamsGroupRecord:
    """A streams group (KIP-1071) as a whole: its metadata, topology, members with their current
    assignments, the target assignment, and the members removed since the previous snapshot;
    or its tombstone (value None: every record of the group is tombstoned). Durable state keeps
    it as it is; kcoord.log.consumer_offsets writes it as Kafka's record types 17 and 19-23
    (its docstring has the snapshot's shape)."""
    group_id: str
    value: dict | None


@dataclass(frozen=True)
class ShareGroupRecord:
    """A share group (KIP-932) as a whole: its metadata, members with their current assignments,
    the target assignment, the partitions whose share state is initialized, and the members
    removed since the previous snapshot; or its tombstone (value None). kcoord.log.consumer_offsets
    writes it as Kafka's record types 10-15 (share/snapshot.py has the snapshot's shape)."""
    group_id: str
    value: dict | None


Record = Union[GroupMetadataRecord, OffsetCommitRecord, TxnOffsetCommitRecord, ConsumerGroupRecord, StreamsGroupRecord,
               ShareGroupRecord]


class RecordSink(Protocol):
    def append(self, records: list[Record]) -> None:
        """Write `records`, all or nothing as far as acknowledgement goes: any exception means
        none of them may be acknowledged."""


def group_metadata(group: Group) -> GroupMetadataRecord:
    """What a restarted coordinator needs to rebuild `group`."""
    return GroupMetadataRecord(group.group_id, {
        "group_id": group.group_id, "generation": group.generation, "created_ms": group.created_ms,
        "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
        "leader_id": group.leader_id, "emptied_at_ms": group.emptied_at_ms, "state_ms": group.state_ms,
        "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                     "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                     "session_timeout_ms": m.session_timeout_ms, "protocol_type": m.protocol_type,
                     "protocols": list(m.protocols), "assignment": m.assignment}
                    for m in group.members.values()],
    })


def offset_tombstone(group_id: str, topic: str, partition: int) -> OffsetCommitRecord:
    return OffsetCommitRecord(group_id, topic, partition, None)
