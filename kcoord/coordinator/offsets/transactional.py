"""Transactional offsets (KIP-98 / KIP-447) written but not yet committed or aborted.

A TxnOffsetCommit's offsets wait here, per producer, until the transaction's marker reaches
the group's __consumer_offsets partition: a commit moves them to the committed offsets, an
abort drops them. Meanwhile OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT
for their partitions, and the group and their offsets are kept from expiring.

Which offset wins when a transactional commit and any other commit of the same partition
overlap is Kafka's rule: the one written later in the log. Each pending offset carries its
position in the partition's log order (its record offset when loaded, a counter after), and
each partition with pending offsets remembers the position of the offset last committed
there (`_floors`): a committed transaction's offset older than that is not applied.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kcoord.coordinator.offsets.committed import CommittedOffset

Key = tuple[str, str, int]   # group id, topic, partition


class PendingOffsets:
    def __init__(self):
        # producer id -> (group, topic, partition) -> (log position, offset)
        self._by_producer: dict[int, dict[Key, tuple[int, CommittedOffset]]] = {}
        # group id -> (topic, partition) -> the producers with a pending offset there; empty
        # for a group without transactions, which is what keeps plain commits as cheap as before.
        self.open: dict[str, dict[tuple[str, int], set[int]]] = {}
        self._floors: dict[Key, int] = {}
        self._position = 0

    def __bool__(self) -> bool:
        return bool(self._by_producer)

    def _next(self) -> int:
        self._position += 1
        return self._position

    def add(self, producer_id: int, group_id: str, topic: str, partition: int, value: CommittedOffset,
            position: int | None = None) -> None:
        """A transactional offset was written (`position`: its record offset, when loaded)."""
        if position is None:
            position = self._next()
        else:
            self._position = max(self._position, position)
        self._by_producer.setdefault(producer_id, {})[(group_id, topic, partition)] = (position, value)
        self.open.setdefault(group_id, {}).setdefault((topic, partition), set()).add(producer_id)

    def has(self, group_id: str, topic: str, partition: int) -> bool:
        by_partition = self.open.get(group_id)
        return by_partition is not None and (topic, partition) in by_partition

    def partitions(self, group_id: str) -> list[tuple[str, int]]:
        """The group's partitions with a pending offset."""
        return list(self.open.get(group_id, ()))

    def committed(self, group_id: str, topic: str, partition: int, position: int | None = None) -> None:
        """An offset was committed for the partition outside any transaction (replayed: later
        than every pending one, unless `position` says where it was)."""
        if self.has(group_id, topic, partition):
            self._floors[(group_id, topic, partition)] = self._next() if position is None else position

    def deleted(self, group_id: str, topic: str, partition: int) -> None:
        """The partition's offset was deleted (a tombstone): its pending offsets go too, as in Kafka."""
        by_partition = self.open.get(group_id)
        producers = None if by_partition is None else by_partition.pop((topic, partition), None)
        if producers is None:
            return
        key = (group_id, topic, partition)
        for producer_id in producers:
            offsets = self._by_producer.get(producer_id)
            if offsets is not None:
                offsets.pop(key, None)
        self._floors.pop(key, None)
        if not by_partition:
            del self.open[group_id]

    def end(self, producer_id: int, commit: bool) -> list[tuple[str, str, int, CommittedOffset]]:
        """The producer's transaction ended: what its commit applies ((group, topic, partition,
        offset), in the order written; nothing for an abort). Its offsets are no longer pending."""
        offsets = self._by_producer.pop(producer_id, None)
        if not offsets:
            return []
        applied = []
        for key, (position, value) in offsets.items():
            group_id, topic, partition = key
            floor = self._floors.get(key)
            if commit and (floor is None or position > floor):
                applied.append((group_id, topic, partition, value))
            by_partition = self.open[group_id]
            producers = by_partition[(topic, partition)]
            producers.discard(producer_id)
            if not producers:
                del by_partition[(topic, partition)]
                self._floors.pop(key, None)
                if not by_partition:
                    del self.open[group_id]
            elif commit and (floor is None or position > floor):
                self._floors[key] = position
        return applied

    def producers(self) -> list[int]:
        return list(self._by_producer)

    def restore(self, loaded: "LoadedPending") -> None:
        """What a partition's log left pending (a coordinator loading it)."""
        for producer_id, group_id, topic, partition, position, value in loaded.offsets:
            self.add(producer_id, group_id, topic, partition, value, position)
        for group_id, topic, partition, position in loaded.floors:
            self.committed(group_id, topic, partition, position)
            self._position = max(self._position, position)


@dataclass
class LoadedPending:
    """A partition's transactional offsets whose transaction had no marker yet when it was read."""
    # (producer id, group, topic, partition, record offset, offset), in log order
    offsets: list[tuple[int, str, str, int, int, CommittedOffset]] = field(default_factory=list)
    # (group, topic, partition, record offset of its committed offset), for those partitions
    floors: list[tuple[str, str, int, int]] = field(default_factory=list)
