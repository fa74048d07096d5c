"""kcoord's state on disk: committed offsets, group metadata, topics and their records.

Like Kafka's `__consumer_offsets`, it is a log of keyed records where the last
record for a key wins and a tombstone deletes it; compaction rewrites the log
as one record per live key. It is the coordinator's record sink: each operation
of the coordinator hands over its records (kcoord.coordinator.records) before any
of its answers is released, and the topic store's observer writes before a
partition takes a batch, so anything a client was told succeeded is on disk (in
the OS at least; see `record_log` for the fsync policies).

A failed write is never acknowledged, whatever failed (the disk, or a bug while
encoding). A record batch is written before the partition takes it, so the
producer gets KAFKA_STORAGE_ERROR and may retry. A failed write of group or
offset records makes the coordinator refuse that operation and answer
COORDINATOR_NOT_AVAILABLE for every group from then on (/healthz answers 503),
until a restart reloads what the disk holds. Kafka takes a broker's failed log
directory offline in the same spirit.

Record payloads: one type byte, then JSON (metadata) or a binary batch.
  G group metadata (the coordinator's `GroupMetadataRecord`)  g group tombstone
  C consumer group (`ConsumerGroupRecord`, KIP-848)          c consumer group tombstone
    (a group id names one group: a G supersedes an earlier C of its id, and a C an earlier G,
    which is how an empty group changes protocol without losing its offsets)
  O committed offset                                        o offset tombstone
    (written only when no __consumer_offsets batch carries the offset: see `offsets_in_batches`)
  T topic                                                   t topic tombstone
  S a partition's log start offset (DeleteRecords)
  M client-metrics subscription (kcoord.client_metrics)     m its removal
  B record batch: u16 name length, name, i32 partition, batch bytes (offsets assigned)
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

from kcoord.coordinator.offsets import CommittedOffset
from kcoord.coordinator.records import ConsumerGroupRecord, GroupMetadataRecord, OffsetCommitRecord, Record
from kcoord.log.consumer_offsets import GROUP_METADATA_KEY, decode_key_if_classic, decode_value
from kcoord.log.consumer_offsets import TOPIC as OFFSETS_TOPIC
from kcoord.storage.record_log import RecordLog
from wire import records as R

log = logging.getLogger("kcoord.storage")

LOG_FILE = "state.log"
# Compact once the log is this large and twice the size it had after the last compaction.
COMPACT_MIN_BYTES = 16 * 1024 * 1024

_BATCH = struct.Struct(">H")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


# One encoder for every record: json.dumps with `separators` builds a new one per call.
_ENCODE_JSON = json.JSONEncoder(separators=(",", ":")).encode


_json_str = json.encoder.encode_basestring_ascii


def _json(kind: bytes, value) -> bytes:
    return kind + _ENCODE_JSON(value).encode()


def encode_group(record: dict) -> dict:
    members = [{**m, "protocols": [[name, _b64(meta)] for name, meta in m["protocols"]],
                "assignment": _b64(m["assignment"])} for m in record["members"]]
    return {**record, "members": members}


def decode_group(value: dict) -> dict:
    members = [{**m, "protocols": [(name, _unb64(meta)) for name, meta in m["protocols"]],
                "assignment": _unb64(m["assignment"])} for m in value["members"]]
    return {**value, "members": members}


def _batch_payload(topic: str, partition: int, data: bytes) -> bytes:
    name = topic.encode()
    return b"B" + _BATCH.pack(len(name)) + name + struct.pack(">i", partition) + data


class StorageFailed(RuntimeError):
    """An earlier write failed: nothing more is recorded until a restart."""


def _payload(record: Record) -> bytes:
    if isinstance(record, GroupMetadataRecord):
        if record.value is None:
            return _json(b"g", {"group_id": record.group_id})
        return _json(b"G", encode_group(record.value))
    if isinstance(record, ConsumerGroupRecord):
        if record.value is None:
            return _json(b"c", {"group_id": record.group_id})
        return _json(b"C", record.value)
    if isinstance(record, OffsetCommitRecord):
        v = record.value
        if v is None:
            return _json(b"o", {"g": record.group_id, "t": record.topic, "p": record.partition})
        # The commonest record, spelled out: the bytes _json makes of the same dict, at a
        # fraction of the cost of encoding a dict per committed partition.
        return (f'O{{"g":{_json_str(record.group_id)},"t":{_json_str(record.topic)},"p":{int(record.partition)},'
                f'"o":{int(v.offset)},"e":{int(v.leader_epoch)},"m":{_json_str(v.metadata)},"c":{int(v.commit_ms)},'
                f'"x":{"null" if v.expire_ms is None else int(v.expire_ms)}}}').encode()
    raise TypeError(f"no encoding for a {type(record).__name__}")


class DurableState:
    def __init__(self, data_dir: str | Path, coordinator_core, topics, fsync: str = "interval",
                 fsync_interval_ms: int = 100, compact_min_bytes: int = COMPACT_MIN_BYTES):
        self.dir = Path(data_dir)
        self.core = coordinator_core
        self.topics = topics
        self.log = RecordLog(self.dir / LOG_FILE, fsync)
        self.fsync_interval_ms = fsync_interval_ms
        self.compact_min_bytes = compact_min_bytes
        self._compacted_size = 0
        self._sync_task: asyncio.Task | None = None
        self._compacting: asyncio.Task | None = None   # a compaction writing its file in a thread
        self._started = False   # on a running loop (start() was awaited)
        self.loaded = {"groups": 0, "offsets": 0, "topics": 0, "batches": 0}
        # Called before the log is rewritten: compacts __consumer_offsets' partitions, whose
        # batches the snapshot then writes.
        self.on_compact = None
        # Why group state may no longer be written, once a write of it failed (see above).
        self.failure: str | None = None
        # Whether every offset record reaches append() together with the __consumer_offsets
        # batch that holds it in Kafka's form (kcoord.log.consumer_offsets is the record sink):
        # then that batch alone is written, the log keeps each offset once, and a restart reads
        # the offsets back from the topic, as Kafka's coordinator loads them. O records of an
        # older data dir are still read; the topic's records, written after them, win.
        self.offsets_in_batches = False
        self.client_metrics = None   # kcoord.client_metrics.ClientMetricsStore, when there is one to keep

    # ---- start-up ------------------------------------------------------
    def load(self) -> None:
        """Rebuild topics, records, groups and offsets from the log, then start recording."""
        groups: dict[str, dict] = {}
        consumer_groups: dict[str, dict] = {}
        offsets: dict[tuple[str, str, int], dict] = {}
        topics: dict[str, dict] = {}
        batches: dict[tuple[str, int], list[bytes]] = {}
        starts: dict[tuple[str, int], int] = {}
        for payload in self.log.replay():
            kind, body = payload[:1], payload[1:]
            if kind == b"B":
                (n,) = _BATCH.unpack_from(body)
                name = body[2:2 + n].decode()
                (partition,) = struct.unpack_from(">i", body, 2 + n)
                batches.setdefault((name, partition), []).append(body[6 + n:])
                continue
            value = json.loads(body)
            if kind == b"G":
                groups[value["group_id"]] = value
                consumer_groups.pop(value["group_id"], None)
            elif kind == b"C":
                consumer_groups[value["group_id"]] = value
                groups.pop(value["group_id"], None)
            elif kind == b"c":
                consumer_groups.pop(value["group_id"], None)
            elif kind == b"g":
                groups.pop(value["group_id"], None)
                for key in [k for k in offsets if k[0] == value["group_id"]]:
                    del offsets[key]
            elif kind == b"O":
                offsets[(value["g"], value["t"], value["p"])] = value
            elif kind == b"o":
                offsets.pop((value["g"], value["t"], value["p"]), None)
            elif kind == b"T":
                topics[value["name"]] = value
            elif kind == b"t":
                topics.pop(value["name"], None)
                for key in [k for k in batches if k[0] == value["name"]]:
                    del batches[key]
                for key in [k for k in starts if k[0] == value["name"]]:
                    del starts[key]
            elif kind == b"S":
                starts[(value["t"], value["p"])] = value["s"]
            elif kind in (b"M", b"m"):
                if self.client_metrics is not None:
                    self.client_metrics.restore(value["name"], value.get("configs", {}))
            else:
                log.warning("%s: skipping a record of unknown type %r", self.log.path, kind)
        for t in topics.values():
            topic = self.topics.create(t["name"], t["partitions"], t["configs"], uuid.UUID(t["id"]))
            for partition in topic.partitions:
                for data in batches.get((topic.name, partition.index), ()):
                    partition.restore(data)
                    self.loaded["batches"] += 1
                partition.restore_log_start(starts.get((topic.name, partition.index), 0))
        self._offsets_from_topic(offsets)
        for g in groups.values():
            self.core.load_group(decode_group(g))
        for g in consumer_groups.values():
            self.core.load_consumer_group(g)
        for o in offsets.values():
            self.core.load_offset(o["g"], o["t"], o["p"], CommittedOffset(o["o"], o["e"], o["m"], o["c"], o["x"]))
        self.loaded.update(groups=len(groups) + len(consumer_groups), offsets=len(offsets), topics=len(topics))
        log.info("loaded %(topics)d topics (%(batches)d record batches), %(groups)d groups and "
                 "%(offsets)d committed offsets from the data dir", self.loaded)
        self.log.open()
        self._compacted_size = self.log.size
        self.topics.observer = self
        for topic in self.topics.topics.values():
            self._watch(topic)
        self.core.record_sink = self
        if self.client_metrics is not None:
            self.client_metrics.observer = self

    def _offsets_from_topic(self, offsets: dict[tuple[str, str, int], dict]) -> None:
        """Apply the committed offsets __consumer_offsets holds, in log order, to `offsets`
        (those of O records, keyed by group, topic and partition). A group's tombstone takes
        its offsets along, as the coordinator replays it."""
        topic = self.topics.get(OFFSETS_TOPIC)
        for partition in topic.partitions if topic is not None else ():
            for stored in partition.batches:
                for record in R.decode_records(R.parse_batch(stored.data)):
                    if record.offset < partition.log_start_offset:
                        continue
                    key = decode_key_if_classic(record.key)
                    if key is None:
                        continue  # a consumer group's (KIP-848) record: its C record restores it
                    data = key["data"]
                    if key["type"] == GROUP_METADATA_KEY:
                        if record.value is None:
                            for k in [k for k in offsets if k[0] == data["group"]]:
                                del offsets[k]
                        continue
                    k = (data["group"], data["topic"], data["partition"])
                    value = decode_value(key, record.value)
                    if value is None:
                        offsets.pop(k, None)
                        continue
                    v = value["data"]
                    offsets[k] = {"g": k[0], "t": k[1], "p": k[2], "o": v["offset"], "e": v.get("leaderEpoch", -1),
                                  "m": v["metadata"], "c": v["commitTimestamp"], "x": v.get("expireTimestamp")}

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
    def append(self, records: list[Record], batches: list[tuple[str, int, bytes]] = ()) -> None:
        """Write the coordinator's records of one operation, all in one write, together with
        `batches` (topic, partition, batch bytes at their offsets: the same records as
        `__consumer_offsets` holds them), which the caller puts into the partitions only after
        this returns. Any failure is raised (the coordinator then acknowledges none of them)
        and ends group recording."""
        if self.failure is not None:
            raise StorageFailed(self.failure)
        if self.offsets_in_batches:
            records = [r for r in records if type(r) is not OffsetCommitRecord]
        try:
            self.log.append(*(_payload(r) for r in records), *(_batch_payload(t, p, data) for t, p, data in batches))
        except Exception as err:
            self.failure = f"writing {self.log.path} failed: {type(err).__name__}: {err}"
            log.error("%s; the coordinator answers COORDINATOR_NOT_AVAILABLE until a restart "
                      "reloads the data dir", self.failure)
            raise
        self._maybe_compact()

    def topic_created(self, topic) -> None:
        self.log.append(_json(b"T", {"name": topic.name, "id": str(topic.topic_id),
                                     "partitions": len(topic.partitions), "configs": topic.configs}))
        self._watch(topic)

    def topic_grown(self, topic, added) -> None:
        """Record `topic` with `added` partitions more (the last T record of a topic wins)."""
        self.log.append(_json(b"T", {"name": topic.name, "id": str(topic.topic_id),
                                     "partitions": len(topic.partitions) + len(added), "configs": topic.configs}))
        self._watch_partitions(topic.name, added)

    def topic_configured(self, topic, configs: dict[str, str]) -> None:
        self.log.append(_json(b"T", {"name": topic.name, "id": str(topic.topic_id),
                                     "partitions": len(topic.partitions), "configs": configs}))

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
            yield _json(b"T", {"name": topic.name, "id": str(topic.topic_id),
                               "partitions": len(topic.partitions), "configs": topic.configs})
            name = topic.name.encode()
            for partition in topic.partitions:
                head = b"B" + _BATCH.pack(len(name)) + name + struct.pack(">i", partition.index)
                for batch in partition.batches:
                    yield head + batch.data
                if partition.log_start_offset > 0:
                    yield _json(b"S", {"t": topic.name, "p": partition.index, "s": partition.log_start_offset})
        for name, configs in (self.client_metrics.subscriptions.items() if self.client_metrics is not None else ()):
            yield _json(b"M", {"name": name, "configs": configs})
        for group_id, group in list(self.core.groups.items()):
            if group.protocol_type is not None:  # simple groups come back from their offsets
                record = self.core.persisted_group(group_id)
                if record is not None:
                    yield _json(b"G", encode_group(record))
        for group_id in list(self.core.ctx.consumer_groups):
            value = self.core.persisted_consumer_group(group_id)
            if value is not None:
                yield _json(b"C", value)
        if self.offsets_in_batches:
            return  # the compacted __consumer_offsets batches above hold them
        for group_id in self.core.offsets.groups():
            for (topic, partition), v in self.core.offsets.all(group_id).items():
                yield _payload(OffsetCommitRecord(group_id, topic, partition, v))

    def compact(self) -> None:
        if self.on_compact is not None:
            self.on_compact()
        before = self.log.size
        self.log.rewrite(self.snapshot())
        self._compacted_size = self.log.size
        log.info("compacted %s from %d to %d bytes", self.log.path, before, self.log.size)
