"""Coordinators sharded over an internal topic's partitions, as Kafka's CoordinatorRuntime holds
them: one per partition, on the broker leading it. The group coordinator shards over
`__consumer_offsets` (kcoord.coordinator.runtime), the transaction coordinator over
`__transaction_state` (kcoord.transaction.runtime); both go through the same states:

- LOADING: its broker became the leader; requests get COORDINATOR_LOAD_IN_PROGRESS for
  `load_ms`, then the partition's records are replayed (`_build`);
- ACTIVE: it serves;
- gone: its broker no longer leads the partition, or died (`_unloaded`).

The lifecycle is synchronous over the injected timer; the app tells the runtime of leadership
changes (kcoord.cluster) and of brokers lost.
"""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any, Iterable

from kcoord.coordinator.clock import Timer
from wire import records as R

log = logging.getLogger("kcoord.coordinator")

NO_NODE = -1


class ShardState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


@dataclass
class Shard:
    """One partition's coordinator on the broker leading it."""
    partition: int
    node: int
    epoch: int                    # the partition's leader epoch when this broker took it
    state: ShardState
    coordinator: Any = None       # once loaded


class ShardedRuntime:
    """The shards of one internal topic. Subclasses build a shard's coordinator from its
    partition's records (`_build`) and say what its unloading does (`_unloaded`)."""

    topic_name = ""
    holds = ""                    # what a shard holds, for the log: "groups", "transactions"
    load_key_prefix = ""

    def __init__(self, timer: Timer, topics, load_ms: int = 0, partitions: int = 50):
        self.timer = timer
        self.topics = topics          # the topic catalog (kcoord.log.topics.TopicStore)
        self.load_ms = load_ms
        self.configured_partitions = partitions   # until the topic exists
        self._count: int | None = None
        self.shards: dict[int, Shard] = {}

    def ensure_topic(self):
        """The topic, created with the store's InternalTopic settings on first use."""
        return self.topics.get(self.topic_name) or self.topics.create(self.topic_name)

    def partition_count(self) -> int:
        """The partitions keys are hashed over: the topic's once it exists (kept from then on, as
        Kafka's coordinators keep the count they started with), the configured count before."""
        if self._count is None:
            topic = self.topics.get(self.topic_name)
            if topic is None:
                return self.configured_partitions
            self._count = len(topic.partitions)
        return self._count

    def _build(self, shard: Shard):
        raise NotImplementedError

    def keyed_records(self, index: int):
        """The records a shard replays: those with a key from the log start on, markers left out."""
        partition = self.topics.partition(self.topic_name, index)
        for stored in partition.batches if partition is not None else ():
            batch = R.parse_batch(stored.data, validate_crc=False)
            if batch.is_control:
                continue
            for record in R.decode_records(batch):
                if record.offset >= partition.log_start_offset and record.key is not None:
                    yield record

    def _leader_running(self, partition) -> bool:
        """Whether `partition` has a leader that is up (a killed one stays leader until fenced)."""
        if partition.leader == NO_NODE:
            return False
        cluster = getattr(self.topics, "cluster", None)
        node = None if cluster is None else cluster.nodes.get(partition.leader)
        return node is None or node.running

    def _loaded(self, shard: Shard) -> None:
        """After `shard` turned ACTIVE."""

    def _unloaded(self, shard: Shard, why: str) -> None:
        """After a loaded `shard` was dropped."""

    def load_led(self, serving: Iterable[int]) -> None:
        """Load, at once, every partition a serving broker leads (a kcoord starting: its state is
        back before its listeners accept anyone)."""
        topic = self.topics.get(self.topic_name) if self.topics is not None else None
        serving = set(serving)
        for partition in topic.partitions if topic is not None else ():
            if partition.leader in serving and partition.index not in self.shards:
                self._load_now(partition.index, partition.leader, partition.leader_epoch)

    def leader_changed(self, index: int, new_leader: int, epoch: int) -> None:
        """Partition `index` has a new leader (NO_NODE: none): the old one unloads it, the new one
        loads it."""
        self._drop(index, "its partition is led by another broker now")
        if new_leader == NO_NODE:
            return
        shard = self.shards[index] = Shard(index, new_leader, epoch, ShardState.LOADING)
        log.info("broker %d loading the %s of %s-%d (leader epoch %d)", new_leader, self.holds, self.topic_name,
                 index, epoch)
        if self.load_ms <= 0:
            self._finish_load(shard)
        else:
            self.timer.schedule(self._load_key(index), self.load_ms, lambda: self._finish_load(shard))

    def node_lost(self, node: int) -> None:
        """Broker `node` is gone without a word (killed): its coordinators' memory goes with it;
        its partitions stay led by it until the controller fences it."""
        for index, shard in list(self.shards.items()):
            if shard.node == node:
                self._drop(index, "its broker died")

    def _load_key(self, index: int) -> str:
        return f"{self.load_key_prefix}-load-{index}"

    def _load_now(self, index: int, node: int, epoch: int) -> Shard:
        shard = self.shards[index] = Shard(index, node, epoch, ShardState.LOADING)
        self._finish_load(shard)
        return shard

    def _finish_load(self, shard: Shard) -> None:
        if self.shards.get(shard.partition) is not shard or shard.state is not ShardState.LOADING:
            return  # unloaded (or taken again) meanwhile
        shard.coordinator = self._build(shard)
        shard.state = ShardState.ACTIVE
        self._loaded(shard)

    def _drop(self, index: int, why: str) -> None:
        shard = self.shards.pop(index, None)
        if shard is None:
            return
        self.timer.cancel(self._load_key(index))
        if shard.coordinator is not None:
            log.info("broker %d unloading the %s of %s-%d: %s", shard.node, self.holds, self.topic_name, index, why)
            self._unloaded(shard, why)
