"""Committed offsets per group, and their retention."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_ms: int
    expire_ms: int | None = None   # explicit expiry (OffsetCommit v2-4 retention_time_ms)


class OffsetStore:
    """The committed offsets held in memory: changed only by replaying written records."""

    def __init__(self):
        self._groups: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    def commit(self, group_id: str, topic: str, partition: int, value: CommittedOffset) -> None:
        offsets = self._groups.get(group_id)
        if offsets is None:
            offsets = self._groups[group_id] = {}
        offsets[(topic, partition)] = value

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._groups.get(group_id, {}).get((topic, partition))

    def all(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return dict(self._groups.get(group_id, {}))

    def delete(self, group_id: str, topic: str, partition: int) -> bool:
        offsets = self._groups.get(group_id)
        if not offsets or offsets.pop((topic, partition), None) is None:
            return False
        if not offsets:
            del self._groups[group_id]
        return True

    def delete_group(self, group_id: str) -> int:
        return len(self._groups.pop(group_id, {}))

    def groups(self) -> list[str]:
        return list(self._groups)

    def expired(self, group_id: str, now_ms: int, retention_ms: int, base_ms: int | None) -> list[tuple[str, int]]:
        """The offsets past retention. `base_ms` is when the group became Empty; None means
        each offset ages from its own commit time (simple groups)."""
        due = []
        for key, value in self._groups.get(group_id, {}).items():
            if value.expire_ms is not None:
                if now_ms >= value.expire_ms:
                    due.append(key)
            elif now_ms - (value.commit_ms if base_ms is None else base_ms) >= retention_ms:
                due.append(key)
        return due
