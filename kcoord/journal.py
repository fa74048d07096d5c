"""The coordinator event journal: one JSON line per group event, rotated by size.

Offset commits are too frequent to journal one by one; they are summed per
group and written as one `offset_commits` record per interval.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from kcoord.coordinator.events import EventKind, GroupEvent

JOURNAL_NAME = "events.jsonl"


def journal_path(journal: str | None, data_dir: str | None) -> Path | None:
    """Where the journal goes: an explicit path, 'none' for off, else `<data-dir>/journal/`."""
    if journal is not None:
        return None if journal.lower() == "none" else Path(journal)
    if data_dir is None:
        return None
    return Path(data_dir) / "journal" / JOURNAL_NAME


class Journal:
    def __init__(self, path: str | os.PathLike, *, max_bytes: int = 64 * 1024 * 1024, backups: int = 10,
                 commit_interval_ms: int = 10_000):
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.commit_interval_ms = commit_interval_ms
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")
        # group -> [interval start ms, commit requests, offsets committed]
        self._commits: dict[str, list[int]] = {}

    def __call__(self, event: GroupEvent) -> None:
        with self._lock:
            if event.kind == EventKind.OFFSETS_COMMITTED:
                self._count_commit(event)
                return
            self._flush_commits(event.time_ms)
            self._write(_record(event))

    def _count_commit(self, event: GroupEvent) -> None:
        window = self._commits.get(event.group_id)
        if window is not None and event.time_ms - window[0] >= self.commit_interval_ms:
            self._write(self._commit_record(event.group_id, window))
            window = None
        if window is None:
            window = self._commits[event.group_id] = [event.time_ms, 0, 0]
        window[1] += 1
        window[2] += int(event.details.get("count", 0) or 0)

    def _commit_record(self, group_id: str, window: list[int]) -> dict:
        return {"kind": "offset_commits", "time_ms": window[0], "group_id": group_id,
                "interval_ms": self.commit_interval_ms, "commits": window[1], "offsets": window[2]}

    def _flush_commits(self, now_ms: int | None) -> None:
        for group_id, window in list(self._commits.items()):
            if now_ms is None or now_ms - window[0] >= self.commit_interval_ms:
                self._write(self._commit_record(group_id, window))
                del self._commits[group_id]

    def _write(self, record: dict) -> None:
        line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
        if self._file.tell() + len(line) > self.max_bytes and self._file.tell() > 0:
            self._rotate()
        self._file.write(line)
        self._file.flush()

    def _rotate(self) -> None:
        self._file.close()
        for i in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
        if self.backups > 0:
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        else:
            self.path.unlink()
        self._file = open(self.path, "a", encoding="utf-8")

    def close(self) -> None:
        with self._lock:
            if self._file.closed:
                return
            self._flush_commits(None)
            self._file.close()


def _record(e: GroupEvent) -> dict:
    record = {"kind": str(e.kind), "time_ms": e.time_ms, "group_id": e.group_id, "generation": e.generation,
              "state_before": e.state_before, "state_after": e.state_after, "member_id": e.member_id,
              "instance_id": e.instance_id, "client_id": e.client_id, "client_host": e.client_host,
              "reason": e.reason, "protocol": e.protocol, "members": e.members}
    if e.details:
        record["details"] = e.details
    return record
