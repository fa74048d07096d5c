"""What a client asks the coordinator, as handlers translate it from the wire."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    instance_id: str | None
    protocol_type: str
    protocols: list[tuple[str, bytes]]     # (name, metadata), in the member's preference order
    session_timeout_ms: int
    rebalance_timeout_ms: int              # -1 before JoinGroup v1: the session timeout is used
    client_id: str
    client_host: str
    require_known_member_id: bool = True   # v4+ (KIP-394)
    supports_skip_assignment: bool = True  # v9+ (KIP-814)
    reason: str | None = None


@dataclass(slots=True)
class SyncRequest:
    group_id: str
    member_id: str
    generation_id: int
    instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    generation_id: int
    instance_id: str | None = None


@dataclass(slots=True)
class LeaveMember:
    member_id: str
    instance_id: str | None
    reason: str | None = None


@dataclass(slots=True)
class OffsetCommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(slots=True)
class OffsetCommitRequest:
    group_id: str
    member_id: str
    generation_id: int
    instance_id: str | None
    partitions: list[OffsetCommitPartition]
    version: int = 9           # GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before
    retention_ms: int = -1     # v2-4 retention_time_ms; -1: the broker's retention


@dataclass(slots=True)
class TxnOffsetCommitRequest:
    """TxnOffsetCommit: offsets committed inside producer `producer_id`'s transaction. Before
    v3 a request names no member: generation -1, member id "", no instance id."""
    group_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[OffsetCommitPartition]
    member_id: str = ""
    generation_id: int = -1
    instance_id: str | None = None


@dataclass(slots=True)
class ConsumerHeartbeatRequest:
    """ConsumerGroupHeartbeat (KIP-848). None marks a field the member left out (a partial
    heartbeat keeps what the coordinator knows)."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None         # v1+
    server_assignor: str | None = None
    topic_partitions: list[tuple[str, list[int]]] | None = None   # owned: (topic id text, partitions)
    client_id: str = ""
    client_host: str = ""
    version: int = 1
