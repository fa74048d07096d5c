"""What the coordinator answers: one result type per request, and how each looks when the
operation that produced it could not be recorded."""
from __future__ import annotations

from dataclasses import dataclass, field

from wire.errors import ErrorCode

UNKNOWN_MEMBER = ""


@dataclass
class JoinResult:
    error: ErrorCode
    member_id: str = UNKNOWN_MEMBER
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # leader only

    def failed(self, error: ErrorCode) -> "JoinResult":
        return JoinResult(error, self.member_id)


@dataclass
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""

    def failed(self, error: ErrorCode) -> "SyncResult":
        return SyncResult(error)


@dataclass
class LeaveResult:
    error: ErrorCode
    members: list[tuple[str, str | None, ErrorCode]] = field(default_factory=list)

    def failed(self, error: ErrorCode) -> "LeaveResult":
        return LeaveResult(error)


@dataclass
class OffsetCommitResult:
    error: ErrorCode                       # group-level problem applied to every partition
    partitions: list[tuple[str, int, ErrorCode]] = field(default_factory=list)

    def failed(self, error: ErrorCode) -> "OffsetCommitResult":
        # Partitions refused for their own reason keep it; the accepted ones were not saved.
        return OffsetCommitResult(error, [(t, p, error if e == ErrorCode.NONE else e)
                                          for t, p, e in self.partitions])


@dataclass
class OffsetDeleteResult:
    error: ErrorCode
    partitions: list[tuple[str, int, ErrorCode]] = field(default_factory=list)

    def failed(self, error: ErrorCode) -> "OffsetDeleteResult":
        return OffsetDeleteResult(error)


@dataclass
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error: ErrorCode = ErrorCode.NONE


@dataclass
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: list[dict]
    message: str | None = None


def failed(result, error: ErrorCode):
    """`result` as it is answered when its operation's records could not be written."""
    if isinstance(result, ErrorCode):  # Heartbeat, DeleteGroups
        return error
    if hasattr(result, "failed"):
        return result.failed(error)
    return result  # nothing a client is told (timers, fault hooks)


@dataclass
class ConsumerHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: dict[str, list[int]] | None = None   # topic id text -> partitions; None: unchanged

    def failed(self, error: ErrorCode) -> "ConsumerHeartbeatResult":
        return ConsumerHeartbeatResult(error)


@dataclass
class ConsumerGroupDescription:
    """ConsumerGroupDescribe's view of one group; `members` as dicts of the response's fields
    (assignments by topic id text, with the topic's name where it still exists)."""
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[dict] = field(default_factory=list)


class Refused(Exception):
    """A request answered with an error before it changed anything (a consumer or streams group
    heartbeat's checks): the error code, and Kafka's message where it gives one."""

    def __init__(self, error: ErrorCode, message: str | None = None):
        super().__init__(message)
        self.error = error
        self.message = message
