"""The coordinator event journal: one JSON line per group or transaction event, rotated by size.

Offset commits are too frequent to journal one by one; they are summed per
group and written as one `offset_commits` record per interval. A share group's record events
(acquisitions are as frequent as fetches) are summed the same way, per group and member, into
one `share_records` record per interval (SHARE_RECORDS_FIELDS).

The same lines can also go to a topic on this broker (`JournalTopic`, `--journal-topic`),
keyed by group id (a transaction's record by its transactional id), so that any Kafka client (Spark's Kafka source in `kcoord report
--kafka`) can read them.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Callable

from kcoord.coordinator.events import SHARE_RECORD_KINDS, EventKind, GroupEvent
from kcoord.log.topics import INTERNAL_TOPICS, TopicError, TopicStore, validate_topic_name
from wire import records as R

log = logging.getLogger("kcoord.journal")

JOURNAL_NAME = "events.jsonl"

# A `share_records` record's counts: which event kind's detail each sums (the highest delivery
# count: its maximum). `session_released`: records released because the member's share session
# closed; `lock_expired`: records whose lock expired; `archived`: records archived at the delivery
# count limit, however their lock ended.
SHARE_RECORDS_FIELDS = {
    "acquired": (EventKind.SHARE_RECORDS_ACQUIRED, "records"),
    "redeliveries": (EventKind.SHARE_RECORDS_ACQUIRED, "redeliveries"),
    "max_delivery_count": (EventKind.SHARE_RECORDS_ACQUIRED, "max_delivery_count"),
    "accepted": (EventKind.SHARE_RECORDS_ACKNOWLEDGED, "accepted"),
    "released": (EventKind.SHARE_RECORDS_ACKNOWLEDGED, "released"),
    "rejected": (EventKind.SHARE_RECORDS_ACKNOWLEDGED, "rejected"),
    "gaps": (EventKind.SHARE_RECORDS_ACKNOWLEDGED, "gaps"),
    "renewed": (EventKind.SHARE_RECORDS_ACKNOWLEDGED, "renewed"),
    "session_released": (EventKind.SHARE_RECORDS_RELEASED, "records"),
    "lock_expired": (EventKind.SHARE_LOCKS_EXPIRED, "records"),
    "archived": (None, "archived"),
}


def journal_path(journal: str | None, data_dir: str | None) -> Path | None:
    """Where the journal goes: an explicit path, 'none' for off, else `<data-dir>/journal/`."""
    if journal is not None:
        return None if journal.lower() == "none" else Path(journal)
    if data_dir is None:
        return None
    return Path(data_dir) / "journal" / JOURNAL_NAME


class Journal:
    """`path` None writes no file: the lines then go to `sinks` only. Each sink is called as
    sink(record, line): the record and the line the file gets, without its newline."""

    def __init__(self, path: str | os.PathLike | None, *, max_bytes: int = 64 * 1024 * 1024, backups: int = 10,
                 commit_interval_ms: int = 10_000, sinks: tuple[Callable[[dict, str], None], ...] = ()):
        self.path = None if path is None else Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.commit_interval_ms = commit_interval_ms
        self.sinks = tuple(sinks)
        self._lock = threading.Lock()
        self._file = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        # (summed record kind, group, member or None) -> (interval start ms, the counts)
        self._windows: dict[tuple[str, str, str | None], tuple[int, dict[str, int]]] = {}

    def __call__(self, event: GroupEvent) -> None:
        with self._lock:
            if event.kind == EventKind.OFFSETS_COMMITTED:
                counts = self._window(event, "offset_commits", None, ("commits", "offsets"))
                counts["commits"] += 1
                counts["offsets"] += int(event.details.get("count", 0) or 0)
                return
            if event.kind in SHARE_RECORD_KINDS:
                self._count_share(self._window(event, "share_records", event.member_id, SHARE_RECORDS_FIELDS), event)
                return
            self._flush_windows(event.time_ms)
            self._write(_record(event))

    def _window(self, event: GroupEvent, kind: str, member_id: str | None, fields) -> dict[str, int]:
        """The counts of the interval `event` falls in, the one before written if it has passed."""
        key = (kind, event.group_id, member_id)
        window = self._windows.get(key)
        if window is not None and event.time_ms - window[0] >= self.commit_interval_ms:
            self._write(self._window_record(key, window))
            window = None
        if window is None:
            window = self._windows[key] = (event.time_ms, dict.fromkeys(fields, 0))
        return window[1]

    @staticmethod
    def _count_share(counts: dict[str, int], event: GroupEvent) -> None:
        for name, (kind, detail) in SHARE_RECORDS_FIELDS.items():
            if kind is not None and kind is not event.kind:
                continue
            value = int(event.details.get(detail, 0) or 0)
            counts[name] = max(counts[name], value) if name == "max_delivery_count" else counts[name] + value

    def _window_record(self, key: tuple[str, str, str | None], window: tuple[int, dict[str, int]]) -> dict:
        kind, group_id, member_id = key
        record = {"kind": kind, "time_ms": window[0], "group_id": group_id}
        if member_id is not None:
            record["member_id"] = member_id
        record["interval_ms"] = self.commit_interval_ms
        record.update(window[1])
        return record

    def _flush_windows(self, now_ms: int | None) -> None:
        for key, window in list(self._windows.items()):
            if now_ms is None or now_ms - window[0] >= self.commit_interval_ms:
                self._write(self._window_record(key, window))
                del self._windows[key]

    def _write(self, record: dict) -> None:
        line = json.dumps(record, separators=(",", ":"), default=str)
        if self._file is not None:
            if self._file.tell() + len(line) + 1 > self.max_bytes and self._file.tell() > 0:
                self._rotate()
            self._file.write(line + "\n")
            self._file.flush()
        for sink in self.sinks:
            sink(record, line)

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
            if self._closed:
                return
            self._closed = True
            self._flush_windows(None)
            if self._file is not None:
                self._file.close()

    _closed = False


# What a transaction record carries of its event's details, flat beside its kind and time.
TRANSACTION_FIELDS = ("producer_id", "producer_epoch", "result", "fenced", "partitions")


def _record(e: GroupEvent) -> dict:
    if e.transactional_id is not None:
        # A transactional id is no group: its records name it in a field of their own.
        record = {"kind": str(e.kind), "time_ms": e.time_ms, "transactional_id": e.transactional_id}
        record.update((k, e.details[k]) for k in TRANSACTION_FIELDS if k in e.details)
        return record
    record = {"kind": str(e.kind), "time_ms": e.time_ms, "group_id": e.group_id, "generation": e.generation,
              "state_before": e.state_before, "state_after": e.state_after, "member_id": e.member_id,
              "instance_id": e.instance_id, "client_id": e.client_id, "client_host": e.client_host,
              "reason": e.reason, "protocol": e.protocol, "members": e.members}
    if e.details:
        record["details"] = e.details
    return record


class JournalTopic:
    """A journal sink appending each line as one record (key: group id) to `name` on this
    broker, through a partition's own append path like a produced batch: durable state
    stores it, long-polling fetches wake up, and any consumer reads it.

    It is called from the coordinator's event bus on the loop, inside no coordinator
    operation (events go out after an operation's records are written), and appending to a
    partition emits no group event, so it can neither recurse nor wait on itself. A failed
    append is logged and dropped: a journal must never fail the group operation behind it.
    """

    def __init__(self, topics: TopicStore, name: str):
        check_journal_topic(name)
        self.topics = topics
        self.name = name
        self.appended = 0
        self.dropped = 0
        self._failing = 0  # records dropped since the last append that worked
        # Lines from before start(): durable state restores the topic's batches at their old
        # offsets during start-up, so nothing may be appended before that.
        self._pending: list[tuple[dict, str]] | None = []

    def start(self) -> None:
        pending, self._pending = self._pending or [], None
        self._topic()
        for record, line in pending:
            self(record, line)

    def __call__(self, record: dict, line: str) -> None:
        if self._pending is not None:
            self._pending.append((record, line))
            return
        try:
            key = record_key(record)
            topic = self._topic()
            partition = topic.partitions[_partition_for(key, len(topic.partitions))]
            partition.append(R.build_batch([(key, line.encode(), int(record["time_ms"]))]))
        except Exception as err:  # AppendError (a refused disk write), TopicError, anything: never the caller's
            self.dropped += 1
            self._failing += 1
            if self._failing == 1:
                log.error("journal topic %s: cannot append (%s: %s); dropping journal records until an append "
                          "works again", self.name, type(err).__name__, err)
            return
        self.appended += 1
        if self._failing:
            log.warning("journal topic %s: appending again after dropping %d records", self.name, self._failing)
            self._failing = 0
        self.topics.notify_appended()

    def _topic(self):
        topic = self.topics.get(self.name)
        if topic is None:
            # Created with the broker's default partitions, as auto-creation would; recreated if
            # an admin deleted it, so that the journal keeps flowing.
            topic = self.topics.create(self.name)
            log.info("journal topic %s created with %d partitions", self.name, len(topic.partitions))
        return topic


def record_key(record: dict) -> bytes:
    """A journal record's key in the topic: its group id, or a transaction's transactional id,
    so that each one's records stay in order in one partition."""
    return (record["transactional_id"] if "transactional_id" in record else record["group_id"]).encode()


def check_journal_topic(name: str) -> None:
    """Raises ValueError naming what is wrong with `name` as a journal topic."""
    try:
        validate_topic_name(name)
    except TopicError as err:
        raise ValueError(str(err)) from None
    if name in INTERNAL_TOPICS:
        raise ValueError(f"topic name {name!r} is reserved for internal topics")


def _partition_for(key: bytes, partitions: int) -> int:
    """Kafka's default partitioner for a keyed record, so a group's events stay in one partition
    in order, on the partition a Kafka producer would have chosen."""
    from kafka.partitioner.default import murmur2

    return (murmur2(key) & 0x7FFFFFFF) % partitions
