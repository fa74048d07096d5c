"""kcoord's state on disk: topics, their records, and who leads them.

Like Kafka's `__consumer_offsets`, it is a log of keyed records where the last record for a key
wins and a tombstone deletes it; compaction rewrites the log as one record per live key. Groups
and committed offsets have no records of their own here: they live in the `__consumer_offsets`
partitions, in Kafka's record format, whose batches this log keeps like any other topic's, and
a coordinator partition reloads its groups by replaying its own partition (kcoord.log.offsets_loader),
as Kafka's coordinator does. The coordinator's sink (kcoord.log.consumer_offsets.OffsetsTopic)
hands over each operation's batches before any of its answers is released, and the topic store's
observer writes before a partition takes a batch, so anything a client was told succeeded is on
disk (in the OS at least; see `record_log` for the fsync policies).

A failed write is never acknowledged, whatever failed (the disk, or a bug while encoding). A
record batch is written before the partition takes it, so the producer gets KAFKA_STORAGE_ERROR
and may retry. A failed write of the coordinator's batches makes the coordinator refuse that
operation and answer COORDINATOR_NOT_AVAILABLE for every group from then on (/healthz answers
503), until a restart reloads what the disk holds. Kafka takes a broker's failed log directory
offline in the same spirit.

Record payloads: one type byte, then JSON or a binary batch.
  T topic (name, id, partitions, configs, each partition's replicas)   t topic tombstone
  S a partition's log start offset (DeleteRecords)
  L a partition's leader, leader epoch, ISR and epoch history (kcoord.cluster)
  M client-metrics subscription (kcoord.client_metrics)     m its removal
  B record batch: u16 name length, name, i32 partition, batch bytes (offsets assigned)
Data dirs of earlier versions also hold G/g, C/c and O/o records (groups and offsets, which
their __consumer_offsets batches hold as well): they are skipped.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import struct
import uuid
from pathlib import Path

from kcoord.storage.record_log import RecordLog

log = logging.getLogger("kcoord.storage")

LOG_FILE = "state.log"
# Compact once the log is this large and twice the size it had after the last compaction.
COMPACT_MIN_BYTES = 16 * 1024 * 1024

_BATCH = struct.Struct(">H")


# One encoder for every record: json.dumps with `separators` builds a new one per call.
_ENCODE_JSON = json.JSONEncoder(separators=(",", ":")).encode


def _json(kind: bytes, value) -> bytes:
    return kind + _ENCODE_JSON(value).encode()


def _batch_payload(topic: str, partition: int, data: bytes) -> bytes:
    name = topic.encode()
    return b"B" + _BATCH.pack(len(name)) + name + struct.pack(">i", partition) + data


def _topic_payload(topic, configs: dict[str, str] | None = None, added=()) -> bytes:
    partitions = [*topic.partitions, *added]
    return _json(b"T", {"name": topic.name, "id": str(topic.topic_id), "partitions": len(partitions),
                        "configs": topic.configs if configs is None else configs,
                        "replicas": [p.replicas for p in partitions]})


def _leadership_payload(topic: str, partition) -> bytes:
    # The replicas too: a reassignment changes them (and the ones being added and removed) after
    # the topic's T record; the copying's progress is not kept.
    return _json(b"L", {"t": topic, "p": partition.index, "l": partition.leader, "e": partition.leader_epoch,
                        "isr": partition.isr, "epochs": partition.epochs, "replicas": partition.replicas,
                        "adding": partition.adding, "removing": partition.removing})


class _Legacy:
    """Groups and offsets as data dirs of earlier versions kept them beside their __consumer_offsets
    batches (G/g classic groups, C/c consumer groups, O/o offsets). Where the topic holds no
    record at all for a key (the oldest dirs wrote offsets only as O records), the key's last
    value here becomes a record for the topic; otherwise the topic's records, written later, win."""

    def __init__(self):
        self.groups: dict[str, dict] = {}
        self.consumer_groups: dict[str, dict] = {}
        self.offsets: dict[tuple[str, str, int], dict] = {}

    def replay(self, kind: bytes, value: dict) -> None:
        if kind == b"G":
            self.groups[value["group_id"]] = value
            self.consumer_groups.pop(value["group_id"], None)
        elif kind == b"g":
            self.groups.pop(value["group_id"], None)
            for key in [k for k in self.offsets if k[0] == value["group_id"]]:
                del self.offsets[key]
        elif kind == b"C":
            self.consumer_groups[value["group_id"]] = value
            self.groups.pop(value["group_id"], None)
        elif kind == b"c":
            self.consumer_groups.pop(value["group_id"], None)
        elif kind == b"O":
            self.offsets[(value["g"], value["t"], value["p"])] = value
        elif kind == b"o":
            self.offsets.pop((value["g"], value["t"], value["p"]), None)

    def records_missing_from(self, topic) -> list:
        if not (self.groups or self.consumer_groups or self.offsets):
            return []
        from kcoord.coordinator.offsets.committed import CommittedOffset
        from kcoord.coordinator.records import ConsumerGroupRecord, GroupMetadataRecord, OffsetCommitRecord
        from kcoord.log.offsets_loader import keys_of

        groups, offsets = keys_of(topic) if topic is not None else (set(), set())
        out: list = []
        for group_id, value in self.groups.items():
            if group_id not in groups:
                members = [{**m, "protocols": [(n, base64.b64decode(meta)) for n, meta in m["protocols"]],
                            "assignment": base64.b64decode(m["assignment"])} for m in value["members"]]
                out.append(GroupMetadataRecord(group_id, {**value, "members": members}))
        out += [ConsumerGroupRecord(g, v) for g, v in self.consumer_groups.items() if g not in groups]
        out += [OffsetCommitRecord(g, t, p, CommittedOffset(o["o"], o["e"], o["m"], o["c"], o["x"]))
                for (g, t, p), o in self.offsets.items() if (g, t, p) not in offsets]
        if out:
            log.info("an earlier version's data dir: %d group and offset records go to __consumer_offsets", len(out))
        return out


class StorageFailed(RuntimeError):
    """An earlier write failed: nothing more is recorded until a restart."""


class DurableState:
    def __init__(self, data_dir: str | Path, topics, fsync: str = "interval",
                 fsync_interval_ms: int = 100, compact_min_bytes: int = COMPACT_MIN_BYTES):
        self.dir = Path(data_dir)
        self.topics = topics
        self.log = RecordLog(self.dir / LOG_FILE, fsync)
        self.fsync_interval_ms = fsync_interval_ms
        self.compact_min_bytes = compact_min_bytes
        self._compacted_size = 0
        self._sync_task: asyncio.Task | None = None
        self._compacting: asyncio.Task | None = None   # a compaction writing its file in a thread
        self._started = False   # on a running loop (start() was awaited)
        self.loaded = {"topics": 0, "batches": 0}
        # What an earlier version kept only as G, C or O records: the app writes these to
        # __consumer_offsets before the coordinators load it (see _Legacy).
        self.legacy_records: list = []
        # Called before the log is rewritten: compacts __consumer_offsets' partitions, whose
        # batches the snapshot then writes.
        self.on_compact = None
        # Why the coordinator's records may no longer be written, once a write of them failed.
        self.failure: str | None = None
        self.client_metrics = None   # kcoord.client_metrics.ClientMetricsStore, when there is one to keep

    # ---- start-up ------------------------------------------------------
    def load(self) -> None:
        """Rebuild topics, their records and their leaders from the log, then start recording.
        The groups come back afterwards, as each coordinator partition loads its own records."""
        topics: dict[str, dict] = {}
        batches: dict[tuple[str, int], list[bytes]] = {}
        starts: dict[tuple[str, int], int] = {}
        leadership: dict[tuple[str, int], dict] = {}
        legacy = _Legacy()
        for payload in self.log.replay():
            kind, body = payload[:1], payload[1:]
            if kind == b"B":
                (n,) = _BATCH.unpack_from(body)
                name = body[2:2 + n].decode()
                (partition,) = struct.unpack_from(">i", body, 2 + n)
                batches.setdefault((name, partition), []).append(body[6 + n:])
                continue
            value = json.loads(body)
            if kind in b"GgCcOo":
                legacy.replay(kind, value)
            elif kind == b"T":
                topics[value["name"]] = value
            elif kind == b"t":
                topics.pop(value["name"], None)
                for held in (batches, starts, leadership):
                    for key in [k for k in held if k[0] == value["name"]]:
                        del held[key]
            elif kind == b"S":
                starts[(value["t"], value["p"])] = value["s"]
            elif kind == b"L":
                leadership[(value["t"], value["p"])] = value
            elif kind in (b"M", b"m"):
                if self.client_metrics is not None:
                    self.client_metrics.restore(value["name"], value.get("configs", {}))
            else:
                log.warning("%s: skipping a record of unknown type %r", self.log.path, kind)
        cluster = self.topics.cluster
        registered = {n for n, _ in cluster.registered()} if cluster is not None else {0}
        for t in topics.values():
            replicas = t.get("replicas")
            if not replicas or any(b not in registered for rs in replicas for b in rs):
                # Written by a kcoord with other brokers (or before replicas were kept): placed anew.
                replicas = None
            topic = self.topics.create(t["name"], t["partitions"], t["configs"], uuid.UUID(t["id"]),
                                       assignment=dict(enumerate(replicas)) if replicas else None, restored=True)
            for partition in topic.partitions:
                held = leadership.get((topic.name, partition.index))
                if held is not None and replicas and all(b in registered for b in held.get("replicas", ())):
                    partition.restore_leadership(held["l"], held["e"], held["isr"], held["epochs"])
                    partition.restore_replicas(held.get("replicas"), held.get("adding", []), held.get("removing", []))
                for data in batches.get((topic.name, partition.index), ()):
                    partition.restore(data)
                    self.loaded["batches"] += 1
                partition.restore_log_start(starts.get((topic.name, partition.index), 0))
        self.loaded["topics"] = len(topics)
        self.legacy_records = legacy.records_missing_from(self.topics.get("__consumer_offsets"))
        log.info("loaded %(topics)d topics (%(batches)d record batches) from the data dir", self.loaded)
        self.log.open()
        self._compacted_size = self.log.size
        self.topics.observer = self
        for topic in self.topics.topics.values():
            self._watch(topic)
        if self.client_metrics is not None:
            self.client_metrics.observer = self

    async def start(self) -> None:
        self._started = True
        if self.log.fsync == "interval":
            self._sync_task = asyncio.get_running_loop().create_task(self._sync_every_interval())

    async def _sync_every_interval(self) -> None:
        # The fsync runs in a worker thread: on the loop's thread it stalled every connection for
        # as long as the disk took (the writes themselves stay on the loop, in order).
        while True:
            await asyncio.sleep(self.fsync_interval_ms / 1000)
            fd = self.log.sync_handle()
            if fd is not None:
                try:
                    await asyncio.to_thread(os.fsync, fd)
                finally:
                    os.close(fd)

    async def close(self) -> None:
        if self._compacting is not None:
            await asyncio.gather(self._compacting, return_exceptions=True)
        if self._sync_task is not None:
            self._sync_task.cancel()
            await asyncio.gather(self._sync_task, return_exceptions=True)
        self.log.close()

    # ---- recording -----------------------------------------------------
    def append_batches(self, batches: list[tuple[str, int, bytes]]) -> None:
        """Write the coordinator's batches of one operation (topic, partition, batch bytes at their
        offsets), all in one write, which the caller puts into the partitions only after this
        returns. Any failure is raised (the coordinator then acknowledges none of them) and ends
        the coordinator's recording."""
        if self.failure is not None:
            raise StorageFailed(self.failure)
        try:
            self.log.append(*(_batch_payload(t, p, data) for t, p, data in batches))
        except Exception as err:
            self.failure = f"writing {self.log.path} failed: {type(err).__name__}: {err}"
            log.error("%s; the coordinator answers COORDINATOR_NOT_AVAILABLE until a restart "
                      "reloads the data dir", self.failure)
            raise
        self._maybe_compact()

    def topic_created(self, topic) -> None:
        self.log.append(_topic_payload(topic))
        self._watch(topic)

    def topic_grown(self, topic, added) -> None:
        """Record `topic` with `added` partitions more (the last T record of a topic wins)."""
        self.log.append(_topic_payload(topic, added=added))
        self._watch_partitions(topic.name, added)

    def topic_configured(self, topic, configs: dict[str, str]) -> None:
        self.log.append(_topic_payload(topic, configs))

    def leadership_changed(self, topic: str, partition) -> None:
        """A partition's leader, epoch or ISR moved (kcoord.cluster): kept, so a restart brings
        back the epochs clients have seen (a consumer validates its position against them)."""
        self.log.append(_leadership_payload(topic, partition))

    def topic_deleted(self, topic) -> None:
        self.log.append(_json(b"t", {"name": topic.name}))

    def client_metrics_changed(self, name: str, configs: dict[str, str]) -> None:
        self.log.append(_json(b"M", {"name": name, "configs": configs}) if configs else _json(b"m", {"name": name}))

    def _watch(self, topic) -> None:
        self._watch_partitions(topic.name, topic.partitions)

    def _watch_partitions(self, name: str, partitions) -> None:
        for partition in partitions:
            partition.on_append = (lambda stored, name=name, index=partition.index:
                                   self._batches_appended(name, index, stored))
            partition.on_log_start = (lambda start, name=name, index=partition.index:
                                      self._log_start_moved(name, index, start))

    def _log_start_moved(self, topic: str, partition: int, start: int) -> None:
        self.log.append(_json(b"S", {"t": topic, "p": partition, "s": start}))

    def _batches_appended(self, topic: str, partition: int, stored) -> None:
        """Called before the partition takes the batches; an OSError reaches the producer."""
        for batch in stored:
            self.log.append(_batch_payload(topic, partition, batch.data))
        self._maybe_compact()

    # ---- compaction ----------------------------------------------------
    def _maybe_compact(self) -> None:
        if self._compacting is not None or self.log.size < max(self.compact_min_bytes, 2 * self._compacted_size):
            return
        if self.log.fsync != "always" and self._started:
            self._compacting = asyncio.get_running_loop().create_task(self._compact_in_background())
            return
        try:
            self.compact()
        except OSError as err:
            self._compaction_failed(err)

    def _compaction_failed(self, err: OSError) -> None:
        # The old log is intact and still appended to; try again after it doubles.
        self._compacted_size = self.log.size
        log.warning("compacting %s failed (%s); the uncompacted log stays in use", self.log.path, err)

    async def _compact_in_background(self) -> None:
        """compact(), with the new file written and fsynced in a worker thread: on the loop's
        thread that fsync stalled every connection for as long as the disk took. The live state
        is taken on the loop; what is appended meanwhile goes to the old log as usual and is
        copied after the new file before the rename (RecordLog.begin_rewrite). Not under
        --fsync always, whose every write must be synced before it is answered."""
        try:
            if self.on_compact is not None:
                self.on_compact()
            before = self.log.size
            payloads = list(self.snapshot())
            tmp = self.log.begin_rewrite()
            try:
                await asyncio.to_thread(self.log.write_new, tmp, payloads)
                self.log.finish_rewrite(tmp)
            except OSError as err:
                self.log.abort_rewrite(tmp)
                self._compaction_failed(err)
                return
            self._compacted_size = self.log.size
            log.info("compacted %s from %d to %d bytes", self.log.path, before, self.log.size)
            await asyncio.to_thread(self.log.sync_dir)
        finally:
            self._compacting = None

    def snapshot(self):
        """The whole live state as log payloads: one per key."""
        for topic in self.topics.topics.values():
            yield _topic_payload(topic)
            name = topic.name.encode()
            for partition in topic.partitions:
                if partition.leader_epoch > 0 or partition.isr != partition.replicas or partition.adding \
                        or partition.removing:
                    yield _leadership_payload(topic.name, partition)
                head = b"B" + _BATCH.pack(len(name)) + name + struct.pack(">i", partition.index)
                for batch in partition.batches:
                    yield head + batch.data
                if partition.log_start_offset > 0:
                    yield _json(b"S", {"t": topic.name, "p": partition.index, "s": partition.log_start_offset})
        for name, configs in (self.client_metrics.subscriptions.items() if self.client_metrics is not None else ()):
            yield _json(b"M", {"name": name, "configs": configs})

    def compact(self) -> None:
        if self.on_compact is not None:
            self.on_compact()
        before = self.log.size
        self.log.rewrite(self.snapshot())
        self._compacted_size = self.log.size
        log.info("compacted %s from %d to %d bytes", self.log.path, before, self.log.size)
