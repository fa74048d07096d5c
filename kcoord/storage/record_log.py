"""An append-only file of checksummed records, the on-disk form of kcoord's state.

Each record is framed as `length (u32) | crc32c (u32) | payload`. A crash can
leave a torn record at the tail: replay stops at the first record whose length
or checksum does not hold, truncates the file there with a warning, and keeps
everything before it. Compaction writes the current state to a new file and
renames it over the old one, so a crash mid-compaction leaves the old log.

Writes go straight to the OS with os.write before the caller answers its
client, so a killed process loses nothing acknowledged; fsync (which guards
against power loss as well) follows the configured policy:
  always    fsync after every write (slowest, safest);
  interval  fsync at most every `fsync_interval_ms` by a background task (default 100 ms:
            a power cut can lose that window, a process crash loses nothing);
  never     leave it to the OS.
"""
from __future__ import annotations

import logging
import os
import struct
from pathlib import Path
from typing import Iterable, Iterator

from wire.crc import crc32c

log = logging.getLogger("kcoord.storage")

_HEADER = struct.Struct(">II")
MAX_RECORD_BYTES = 256 * 1024 * 1024
FSYNC_POLICIES = ("always", "interval", "never")


def frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), crc32c(payload)) + payload


class RecordLog:
    def __init__(self, path: Path, fsync: str = "interval"):
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}")
        self.path = Path(path)
        self.fsync = fsync
        self.dirty = False
        self.truncated_bytes = 0
        self._fd: int | None = None
        self.size = 0
        self._tail: list[bytes] | None = None   # appends made during a rewrite (see begin_rewrite)

    # ---- reading -------------------------------------------------------
    def replay(self) -> Iterator[bytes]:
        """Every intact record in order; a torn or corrupt tail is cut off (with a warning)."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        pos = 0
        while pos < len(data):
            problem = None
            if len(data) - pos < _HEADER.size:
                problem = f"a record header cut short ({len(data) - pos} bytes)"
            else:
                length, crc = _HEADER.unpack_from(data, pos)
                end = pos + _HEADER.size + length
                if length > MAX_RECORD_BYTES or end > len(data):
                    problem = f"a record of {length} bytes runs past the end of the file"
                elif crc32c(data[pos + _HEADER.size:end]) != crc:
                    problem = "a record whose checksum does not match"
            if problem is not None:
                self.truncated_bytes = len(data) - pos
                log.warning("%s: found %s at byte %d; truncating the last %d bytes (every earlier record is kept)",
                            self.path, problem, pos, self.truncated_bytes)
                with open(self.path, "r+b") as f:
                    f.truncate(pos)
                    os.fsync(f.fileno())
                return
            yield data[pos + _HEADER.size:end]
            pos = end

    # ---- writing -------------------------------------------------------
    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self._fd).st_size

    def append(self, *payloads: bytes) -> None:
        """Write records in one write; on OSError (disk full, I/O error) cut the file back to
        its last whole record and re-raise, so none of them is half there and a later append
        does not follow a torn one (replay would drop everything after it)."""
        data = b"".join(frame(p) for p in payloads)
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError:
            try:
                os.ftruncate(self._fd, self.size)
            except OSError:
                log.exception("%s: could not cut a failed write back to %d bytes; the next start "
                              "truncates the torn record", self.path, self.size)
            raise
        self.size += len(data)
        if self._tail is not None:
            self._tail.append(data)
        if self.fsync == "always":
            os.fsync(self._fd)
        else:
            self.dirty = True

    def sync(self) -> None:
        """fsync now if anything was written since the last one."""
        if self._fd is not None and self.dirty:
            self.dirty = False
            os.fsync(self._fd)

    def sync_handle(self) -> int | None:
        """For an fsync away from the caller's thread: a duplicate of the file's descriptor if
        anything was written since the last fsync (counted as synced from now on; writes that
        follow mark the log dirty again), else None. The caller fsyncs and closes it; a log
        replaced meanwhile by compaction leaves the duplicate on the old file, harmlessly."""
        if self._fd is None or not self.dirty:
            return None
        self.dirty = False
        return os.dup(self._fd)

    def rewrite(self, payloads: Iterable[bytes]) -> None:
        """Replace the whole log with `payloads` (compaction), atomically: if writing the new
        file fails, it is removed and the old log stays in use."""
        tmp = self.begin_rewrite()
        try:
            self.write_new(tmp, payloads)
        except OSError:
            self.abort_rewrite(tmp)
            raise
        self.finish_rewrite(tmp)
        self.sync_dir()

    # A rewrite in three steps, for a caller that writes the new file away from the thread that
    # appends: begin (appends from then on are also kept, as the tail), write_new (any thread:
    # the new file, fsynced), then finish (the tail after it, and the rename) or abort.
    def begin_rewrite(self) -> Path:
        self._tail = []
        return self.path.with_suffix(self.path.suffix + ".compacting")

    @staticmethod
    def write_new(tmp: Path, payloads: Iterable[bytes]) -> None:
        try:
            with open(tmp, "wb") as f:
                for payload in payloads:
                    f.write(frame(payload))
                f.flush()
                os.fsync(f.fileno())
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    def finish_rewrite(self, tmp: Path) -> None:
        """Append what was written meanwhile to the new file and put it in the log's place. The
        tail is not fsynced here: it is dirty like any append, and the policy syncs it."""
        tail, self._tail = self._tail, None
        try:
            if tail:
                with open(tmp, "ab") as f:
                    for data in tail:
                        f.write(data)
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        if self._fd is not None:
            os.close(self._fd)   # the old file: replaced, its unsynced pages no longer matter
            self._fd = None
        self.open()
        self.dirty = bool(tail)
        if tail and self.fsync == "always":
            os.fsync(self._fd)
            self.dirty = False

    def abort_rewrite(self, tmp: Path) -> None:
        self._tail = None
        tmp.unlink(missing_ok=True)

    def sync_dir(self) -> None:
        """fsync the log's directory: the rename of a rewrite outlives a power cut."""
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        if self._fd is not None:
            self.sync()
            os.close(self._fd)
            self._fd = None
