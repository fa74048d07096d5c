"""The brokers' registry of share-partitions (Kafka's SharePartitionManager): one SharePartition per
(group, topic, partition) a share group fetches, started from its persisted state or, the first
time, from the group's `share.auto.offset.reset`; each change of persisted state written to
`__share_group_state` (kcoord.share.state) before the request that made it is answered.

One ShareManager serves every broker of a kcoord (`ctx.broker.shares`); whether the broker
asked leads the partition is the caller's check. A share-partition whose topic is deleted or
recreated (a new topic id) starts afresh.

What happens to a group's records is published to the coordinator's event bus (when it is given
one): per request and share-partition, the records acquired, acknowledged and released, and per
lock expiry the records whose locks expired (kcoord.coordinator.events.SHARE_RECORD_KINDS).
"""
from __future__ import annotations

import asyncio
import collections
import uuid
from dataclasses import dataclass, field

from kcoord import group_configs as gc
from kcoord.coordinator.clock import Timer
from kcoord.coordinator.events import EventBus, EventKind, GroupEvent
from kcoord.share import records as SR
from kcoord.share.partition import AckBatch, Acquired, SharePartition, ShareError, ShareSettings
from kcoord.share.state import ShareStateRuntime
from wire.errors import ErrorCode

__all__ = ["AckBatch", "Acquired", "PartitionFetch", "ShareManager", "StartOffset"]

Key = tuple[str, int]   # (topic name, partition)


@dataclass
class PartitionFetch:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    records: bytes = b""        # the record batches covering the acquired ranges, as Fetch returns them
    acquired: list[Acquired] = field(default_factory=list)


@dataclass
class StartOffset:
    """A share-partition as DescribeShareGroupOffsets reports it."""
    error: ErrorCode = ErrorCode.NONE
    start_offset: int = -1       # -1: the group has no state for it
    leader_epoch: int = -1
    lag: int = -1


class ShareManager:
    def __init__(self, topics, timer: Timer, state: ShareStateRuntime, config, group_configs=None,
                 bus: EventBus | None = None):
        self.topics = topics
        self.bus = bus
        self.timer = timer
        self.state = state
        self.config = config                  # ServerConfig: the group.share.* defaults
        self.group_configs = group_configs    # kcoord.group_configs.GroupConfigs
        self._partitions: dict[tuple[str, str, int], tuple[uuid.UUID, SharePartition]] = {}
        self._watchers: list[tuple[set, asyncio.Future]] = []

    # ------------------------------------------------------------ configs
    def _setting(self, group_id: str, name: str):
        own = self.group_configs.effective(group_id) if self.group_configs is not None else {}
        if name in own:
            return own[name]
        definition = gc.CONFIGS[name]
        return gc.parse(definition, definition.default(self.config))

    def lock_duration_ms(self, group_id: str) -> int:
        return self._setting(group_id, "share.record.lock.duration.ms")

    def settings(self, group_id: str) -> ShareSettings:
        return ShareSettings(
            lock_duration_ms=self.lock_duration_ms(group_id),
            delivery_count_limit=self._setting(group_id, "share.delivery.count.limit"),
            max_record_locks=self._setting(group_id, "share.partition.max.record.locks"),
            read_committed=str(self._setting(group_id, "share.isolation.level")).lower() == "read_committed",
            renew_enabled=bool(self._setting(group_id, "share.renew.acknowledge.enable")))

    # ------------------------------------------------------------ share-partitions
    def _get(self, group_id: str, key: Key, create: bool = True) -> tuple[ErrorCode, str | None, SharePartition | None]:
        topic = self.topics.get(key[0])
        log_partition = self.topics.partition(*key)
        if topic is None or log_partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.", None
        entry = self._partitions.get((group_id, *key))
        if entry is not None and entry[0] == topic.topic_id and entry[1].log is log_partition:
            return ErrorCode.NONE, None, entry[1]
        if entry is not None:
            entry[1].close()
            del self._partitions[(group_id, *key)]
        if not create:
            return ErrorCode.NONE, None, None
        share_key = SR.ShareKey(group_id, topic.topic_id, key[1])
        error, persisted = self.state.read(share_key)
        if error != ErrorCode.NONE:
            return error, None, None
        if persisted is None:
            start = self._initial_offset(group_id, log_partition)
            error = self.state.initialize(share_key, start)
            if error != ErrorCode.NONE:
                return error, None, None
            batches = []
        else:
            start, batches = persisted.start_offset, persisted.batches
        sp = SharePartition(group_id, key[0], log_partition, self.timer, lambda: self.settings(group_id), start,
                            batches, on_available=lambda: self._wake({key}))
        sp.on_expired = lambda p, expired, k=share_key: self._locks_expired(k, p, expired)
        self._partitions[(group_id, *key)] = (topic.topic_id, sp)
        return ErrorCode.NONE, None, sp

    def _initial_offset(self, group_id: str, log_partition) -> int:
        reset = str(self._setting(group_id, "share.auto.offset.reset")).strip().lower()
        if reset == "earliest":
            return log_partition.log_start_offset
        if reset.startswith("by_duration:"):
            nanos = gc.duration_nanos(reset[len("by_duration:"):]) or 0
            offset, _ = log_partition.offset_for_timestamp(self.timer.now_ms() - nanos // 1_000_000)
            return log_partition.high_watermark if offset < 0 else offset
        return log_partition.high_watermark

    def _persist(self, share_key: SR.ShareKey, sp: SharePartition) -> ErrorCode:
        changed, batches = sp.take_changes()
        if not changed:
            return ErrorCode.NONE
        return self.state.write(share_key, sp.log.leader_epoch, sp.start_offset, batches,
                                sp.delivery_complete_count())

    def _locks_expired(self, share_key: SR.ShareKey, sp: SharePartition, expired: dict) -> None:
        self._persist(share_key, sp)
        for member_id, counts in expired.items():
            self._publish(EventKind.SHARE_LOCKS_EXPIRED, sp, member_id, counts)

    def _publish(self, kind: EventKind, sp: SharePartition, member_id: str, counts: collections.Counter) -> None:
        if self.bus is not None and counts:
            self.bus.publish(GroupEvent(kind, self.timer.now_ms(), sp.group_id, -1, "", "", member_id=member_id,
                                        details={"topic": sp.topic, "partition": sp.log.index, **counts}))

    def _key_of(self, group_id: str, key: Key) -> SR.ShareKey:
        return SR.ShareKey(group_id, self._partitions[(group_id, *key)][0], key[1])

    # ------------------------------------------------------------ the handlers' calls
    async def acquire(self, group_id: str, member_id: str, keys: list[Key], max_records: int, batch_size: int,
                      record_limit: bool, max_bytes: int) -> dict[Key, PartitionFetch]:
        """What each partition has acquirable now, acquired by the member (never waits)."""
        out: dict[Key, PartitionFetch] = {}
        remaining = max_records
        for key in keys:
            error, message, sp = self._get(group_id, key)
            if sp is None:
                out[key] = PartitionFetch(error, message)
                continue
            if remaining <= 0 or max_bytes <= 0:
                out[key] = PartitionFetch()
                continue
            result = sp.acquire(member_id, remaining, batch_size, record_limit, max_bytes)
            # Archiving below a moved log start or aborted records changed persisted state.
            self._persist(self._key_of(group_id, key), sp)
            got = sum(a.last_offset - a.first_offset + 1 for a in result.acquired)
            remaining -= got
            max_bytes -= len(result.records)
            out[key] = PartitionFetch(records=result.records, acquired=result.acquired)
            self._publish(EventKind.SHARE_RECORDS_ACQUIRED, sp, member_id, acquired_counts(result.acquired))
        return out

    async def acknowledge(self, group_id: str, member_id: str,
                          acks: dict[Key, list[AckBatch]]) -> dict[Key, tuple[ErrorCode, str | None]]:
        """Each partition's acknowledgements applied and durable, or its error (nothing applied)."""
        out: dict[Key, tuple[ErrorCode, str | None]] = {}
        for key, batches in acks.items():
            error, message, sp = self._get(group_id, key)
            if sp is None:
                out[key] = (error, message)
                continue
            bad = invalid_batches(batches)
            if bad is not None:
                out[key] = (ErrorCode.INVALID_REQUEST, bad)
                continue
            try:
                counts = sp.acknowledge(member_id, batches)
            except ShareError as err:
                out[key] = (err.code, str(err))
                continue
            error = self._persist(self._key_of(group_id, key), sp)
            if error == ErrorCode.NONE:
                self._publish(EventKind.SHARE_RECORDS_ACKNOWLEDGED, sp, member_id, counts)
            out[key] = (error, None if error == ErrorCode.NONE else "writing the share-partition state failed")
        return out

    async def release_member(self, group_id: str, member_id: str, keys: list[Key] | None = None) -> None:
        """The member's acquired records (in `keys`, else everywhere) become available again."""
        for (group, topic, index), (_, sp) in list(self._partitions.items()):
            if group != group_id or (keys is not None and (topic, index) not in keys):
                continue
            counts = sp.release_member(member_id)
            if counts:
                self._persist(self._key_of(group, (topic, index)), sp)
                self._publish(EventKind.SHARE_RECORDS_RELEASED, sp, member_id, counts)

    def watch(self, keys: list[Key], group_id: str | None = None) -> asyncio.Future:
        """Resolved when any of `keys` may have newly acquirable records: records appended, released
        or their locks expired (for `group_id`, at once if it can acquire some already)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        wanted = set(keys)
        if group_id is not None and any(self._acquirable(group_id, k) for k in wanted):
            future.set_result(None)
            return future
        entry = (wanted, future)
        self._watchers.append(entry)
        waiter = loop.create_task(self._wait_append(future))
        future.add_done_callback(lambda _: (waiter.cancel(), self._forget(entry)))
        return future

    def _acquirable(self, group_id: str, key: Key) -> bool:
        entry = self._partitions.get((group_id, *key))
        return entry is not None and entry[1].acquirable()

    async def _wait_append(self, future: asyncio.Future) -> None:
        await self.topics.wait_appended(3600)
        if not future.done():
            future.set_result(None)

    def _forget(self, entry) -> None:
        if entry in self._watchers:
            self._watchers.remove(entry)

    def _wake(self, keys: set) -> None:
        for wanted, future in list(self._watchers):
            if wanted & keys and not future.done():
                future.set_result(None)

    # ------------------------------------------------------------ leadership
    def leader_changed(self, topic: str, index: int) -> None:
        """The partition's leader moved: its share-partitions are loaded afresh by the next fetch."""
        for k in [k for k in self._partitions if k[1:] == (topic, index)]:
            self._partitions.pop(k)[1].close()

    def node_lost(self, node: int) -> None:
        """A broker killed: the share-partitions it led lose what was not persisted (acquisitions)."""
        for k, (_, sp) in list(self._partitions.items()):
            if sp.log.leader == node:
                self._partitions.pop(k)[1].close()

    # ------------------------------------------------------------ admin (APIs 90-92)
    def describe_offsets(self, group_id: str, keys: list[Key]) -> dict[Key, StartOffset]:
        out = {}
        for key in keys:
            topic = self.topics.get(key[0])
            log_partition = self.topics.partition(*key)
            if topic is None or log_partition is None:
                out[key] = StartOffset(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            entry = self._partitions.get((group_id, *key))
            if entry is not None and entry[0] == topic.topic_id:
                sp = entry[1]
                out[key] = StartOffset(start_offset=sp.start_offset, leader_epoch=log_partition.leader_epoch,
                                       lag=sp.lag())
                continue
            error, state = self.state.read(SR.ShareKey(group_id, topic.topic_id, key[1]))
            if state is None:
                out[key] = StartOffset(error)
                continue
            done = sum(b.last_offset - b.first_offset + 1 for b in state.batches
                       if b.delivery_state != SR.AVAILABLE and b.last_offset >= state.start_offset)
            out[key] = StartOffset(start_offset=state.start_offset, leader_epoch=state.leader_epoch,
                                   lag=max(log_partition.high_watermark - state.start_offset - done, 0))
        return out

    def partitions_with_state(self, group_id: str) -> dict[str, list[int]]:
        """The group's share-partitions that have state (Kafka's initialized share-partitions),
        by topic name: what DescribeShareGroupOffsets of all topics and DeleteGroups cover."""
        out: dict[str, list[int]] = {}
        for key in self.state.states(group_id):
            topic = self.topics.by_id(key.topic_id)
            if topic is not None:
                out.setdefault(topic.name, []).append(key.partition)
        return {name: sorted(ps) for name, ps in sorted(out.items())}

    def alter_start_offset(self, group_id: str, offsets: dict[Key, int]) -> dict[Key, ErrorCode]:
        """AlterShareGroupOffsets (the group has no member): each partition starts afresh there."""
        out = {}
        for key, offset in offsets.items():
            topic = self.topics.get(key[0])
            if topic is None or self.topics.partition(*key) is None:
                out[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            entry = self._partitions.pop((group_id, *key), None)
            if entry is not None:
                entry[1].close()
            share_key = SR.ShareKey(group_id, topic.topic_id, key[1])
            error, state = self.state.read(share_key)
            if error == ErrorCode.NONE:
                error = self.state.initialize(share_key, offset, 0 if state is None else state.state_epoch + 1)
            out[key] = error
        return out

    def delete_state(self, group_id: str, topics: list[str]) -> dict[Key, ErrorCode]:
        """DeleteShareGroupOffsets / the group deleted: the share-partitions of `topics` are forgotten."""
        out = {}
        for name in topics:
            topic = self.topics.get(name)
            if topic is None:
                continue
            for index in range(len(topic.partitions)):
                entry = self._partitions.pop((group_id, name, index), None)
                if entry is not None:
                    entry[1].close()
                out[(name, index)] = self.state.delete(SR.ShareKey(group_id, topic.topic_id, index))
        return out


def acquired_counts(acquired: list[Acquired]) -> collections.Counter:
    """An acquisition's counts for its event: records, redeliveries (records at a delivery count
    above 1) and the highest delivery count."""
    if not acquired:
        return collections.Counter()
    counts = collections.Counter(records=0, redeliveries=0, max_delivery_count=0)
    for a in acquired:
        n = a.last_offset - a.first_offset + 1
        counts["records"] += n
        if a.delivery_count > 1:
            counts["redeliveries"] += n
        counts["max_delivery_count"] = max(counts["max_delivery_count"], a.delivery_count)
    return counts


def invalid_batches(batches: list[AckBatch]) -> str | None:
    """Kafka's checks of a partition's acknowledgement batches before any is applied
    (KafkaApis.validateAcknowledgementBatches; whether renew is allowed at the request's version
    is the handler's check)."""
    previous_end = -1
    for b in batches:
        if b.first_offset > b.last_offset:
            return "First offset of an acknowledgement batch is after its last offset"
        if b.first_offset < previous_end:
            return "Acknowledgement batches are not in order"
        if not b.types:
            return "An acknowledgement batch has no acknowledge type"
        if len(b.types) > 1 and b.last_offset - b.first_offset != len(b.types) - 1:
            return "An acknowledgement batch has a number of acknowledge types other than its offsets"
        if any(t < 0 or t > 4 for t in b.types):
            return "Invalid acknowledge type"
        previous_end = b.last_offset
    return None
