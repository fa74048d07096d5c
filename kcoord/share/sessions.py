"""Share sessions (KIP-932): a broker's cache of the partitions each share consumer fetches from
it, as Kafka 4.3.1's ShareSessionCache, ShareSessionContext and FinalContext keep them.

A session is keyed by (group id, member id) and opened by a ShareFetch at epoch 0 with the
partitions it names; each later request carries the session's next epoch and adds partitions
(those it names) or forgets some, and fetches every partition of the session. Epoch -1 closes the
session: the request may still acknowledge, it fetches nothing, and the member's acquired records
in the session's partitions are released. A session belongs to the connection that opened it:
when that connection closes, the session goes and the records are released at once.

A full (epoch 0) answer carries every partition asked for; an incremental one only those with
records, with an error, or new to the session (once), as Kafka's CachedSharePartition decides.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable

from wire.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

PartitionId = tuple[uuid.UUID, int]    # (topic id, partition index)


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch` (ShareRequestMetadata.nextEpoch): -1 stays, the largest wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


class SessionError(Exception):
    """A request the session cache refuses as a whole, with Kafka's error code."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass
class CachedPartition:
    topic_id: uuid.UUID
    index: int
    topic: str | None            # the name when the session took it in; None: an unknown topic id
    requires_update: bool = False

    def must_respond(self, has_records: bool, error: int, update: bool) -> bool:
        """Whether an incremental answer carries this partition (CachedSharePartition)."""
        respond = has_records
        if self.requires_update:
            respond = True
            if update:
                self.requires_update = False
        if error:
            # Sent again once the error is gone.
            if update:
                self.requires_update = True
            respond = True
        return respond


@dataclass(eq=False)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    connection: object
    partitions: dict[PartitionId, CachedPartition] = field(default_factory=dict)   # in fetch order

    @property
    def key(self) -> tuple[str, str]:
        return self.group_id, self.member_id

    def update(self, fetch: list[CachedPartition], forget: list[PartitionId]) -> None:
        for p in fetch:
            if (p.topic_id, p.index) not in self.partitions:
                p.requires_update = True
                self.partitions[(p.topic_id, p.index)] = p
        for pid in forget:
            self.partitions.pop(pid, None)

    def named_partitions(self) -> list[tuple[str, int]]:
        return [(p.topic, p.index) for p in self.partitions.values() if p.topic is not None]


@dataclass
class FetchContext:
    """What one ShareFetch fetches and how its answer is trimmed, from the session's side."""
    epoch: int
    session: ShareSession | None = None    # None: a full (new) session's first request, or the final one
    requested: list[CachedPartition] = field(default_factory=list)
    final: bool = False

    def partitions(self) -> list[CachedPartition]:
        """The partitions to fetch: a new session's, those of the session, none when closing it."""
        if self.final:
            return []
        if self.session is None:
            return list(self.requested)
        return list(self.session.partitions.values())

    def answer(self, results: dict[PartitionId, dict]) -> tuple[ErrorCode, dict[PartitionId, dict]]:
        """The top-level error and the partitions the response carries (Kafka's
        updateAndGenerateResponseData): `results` is every fetched partition's answer
        (`records`, `error_code`)."""
        if self.session is None:
            return ErrorCode.NONE, results
        if self.session.epoch != next_epoch(self.epoch):
            # Another request of the session went through in between (a duplicate).
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, {}
        out = {}
        for pid, data in results.items():
            cached = self.session.partitions.get(pid)
            if cached is None:
                continue
            has_records = bool(data.get("records"))
            if cached.must_respond(has_records, data.get("error_code", 0), update=True):
                out[pid] = data
                if has_records:
                    # Partitions that returned records go last next time, so each gets its turn.
                    self.session.partitions[pid] = self.session.partitions.pop(pid)
        return ErrorCode.NONE, out


class ShareSessionCache:
    """One broker's share sessions, at most `max_entries` (group.share.max.share.sessions).

    `on_member_leave(group_id, member_id, partitions)` is told when a session's connection closes
    under it: the member's records acquired in those (topic, partition)s are to be released."""

    def __init__(self, max_entries: int, on_member_leave: Callable[[str, str, list], None] | None = None):
        self.max_entries = max_entries
        self.on_member_leave = on_member_leave
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._by_connection: dict[object, tuple[str, str]] = {}   # the last session each connection opened

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        session = self.sessions.pop((group_id, member_id), None)
        if session is not None and self._by_connection.get(session.connection) == session.key:
            del self._by_connection[session.connection]
        return session

    def new_context(self, group_id: str, member_id: str, epoch: int, fetch: list[CachedPartition],
                    forget: list[PartitionId], has_acknowledgements: bool, connection) -> FetchContext:
        """A ShareFetch's context (SharePartitionManager.newContext), or SessionError."""
        key = (group_id, member_id)
        if epoch == FINAL_EPOCH:
            if key not in self.sessions:
                raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
            return FetchContext(epoch, final=True)
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                raise SessionError(ErrorCode.INVALID_REQUEST,
                                   "Acknowledge data present in the initial share fetch request.")
            self.remove(group_id, member_id)
            if len(self.sessions) >= self.max_entries:
                raise SessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), connection,
                                   {(p.topic_id, p.index): p for p in fetch})
            self.sessions[key] = session
            self._watch(session, connection)
            return FetchContext(epoch, requested=fetch)
        session = self._current(key, epoch)
        session.update(fetch, forget)
        session.epoch = next_epoch(session.epoch)
        return FetchContext(epoch, session=session)

    def acknowledge_update(self, group_id: str, member_id: str, epoch: int) -> None:
        """A ShareAcknowledge's session check (acknowledgeSessionUpdate), or SessionError: it never
        opens a session; at -1 the session is left for the answer to close."""
        if epoch == INITIAL_EPOCH:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        key = (group_id, member_id)
        if epoch == FINAL_EPOCH:
            if key not in self.sessions:
                raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
            return
        session = self._current(key, epoch)
        session.epoch = next_epoch(session.epoch)

    def _current(self, key, epoch: int) -> ShareSession:
        session = self.sessions.get(key)
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        return session

    def _watch(self, session: ShareSession, connection) -> None:
        self._by_connection[connection] = session.key
        on_close = getattr(connection, "on_close", None)
        if on_close is not None:
            on_close(self.disconnected)

    def release(self, group_id: str, member_id: str) -> ShareSession | None:
        """The session closed (SharePartitionManager.releaseSession): removed, and the member's
        records acquired in its partitions released."""
        session = self.remove(group_id, member_id)
        if session is not None and self.on_member_leave is not None:
            self.on_member_leave(group_id, member_id, session.named_partitions())
        return session

    def disconnected(self, connection) -> ShareSession | None:
        """The connection closed: the session it opened last, if still its own, is released
        (ShareSessionCache's ClientConnectionDisconnectListener)."""
        key = self._by_connection.get(connection)
        return None if key is None else self.release(*key)
