"""Topics and partitions: the minimal broker-side log stock clients need.

The coordinator sees none of this except through `TopicStore.partition_exists`.
"""
from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field

from kcoord.cluster.placement import PlacementError, check_assignment
from kcoord.log.partition import Partition

# Kafka's legal topic names: [a-zA-Z0-9._-], at most 249 characters.
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class TopicError(Exception):
    def __init__(self, code_name: str, message: str | None):
        self.code_name = code_name  # an ErrorCode member name, resolved by handlers
        self.message = message      # what the response says; None where Kafka's says nothing
        super().__init__(message or code_name)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


def validate_topic_name(name: str) -> None:
    if name in (".", ".."):
        raise TopicError("INVALID_TOPIC_EXCEPTION", f"topic name {name!r} is illegal")
    if not _LEGAL.match(name or ""):
        raise TopicError("INVALID_TOPIC_EXCEPTION",
                         f"topic name {name!r} is illegal: only [a-zA-Z0-9._-], at most 249 characters")


@dataclass(frozen=True)
class InternalTopic:
    """How Kafka creates one of its internal topics, whichever request creates it."""
    partitions: int
    configs: dict[str, str]
    replication_factor: int


class TopicStore:
    def __init__(self, default_partitions: int = 1, cluster=None, default_replication_factor: int = 1):
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        # kcoord.cluster.Cluster: where replicas go and who leads; None: one broker, node 0.
        self.cluster = cluster
        if cluster is not None:
            cluster.topics = self
        # name -> InternalTopic (__consumer_offsets): the settings a request may not choose.
        self.internal: dict[str, InternalTopic] = {}
        self.topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        # Told of topics created and deleted and of batches appended (durable state).
        self.observer = None
        # Set (and replaced) whenever any partition gets records: wakes long-polling fetches.
        self._appended = asyncio.Event() if _loop_running() else None

    # -- topics ---------------------------------------------------------------
    def create(self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None,
               topic_id: uuid.UUID | None = None, replication_factor: int | None = None,
               assignment: list[list[int]] | None = None, restored: bool = False) -> Topic:
        """A new topic. `partitions`/`replication_factor` None or -1: the broker's defaults (an
        internal topic's own settings); `assignment`: each partition's replicas, chosen by the
        caller (else placed by the cluster); `restored`: a topic a data dir kept, whose partitions'
        replica counts reassignments may have made differ."""
        replicas, configs = self.plan(name, partitions, configs, replication_factor, assignment, restored)
        topic = Topic(name, topic_id or uuid.uuid4(), self._partitions(0, replicas), dict(configs or {}))
        self.topics[name] = topic
        self._by_id[topic.topic_id] = topic
        if self.observer is not None:
            self.observer.topic_created(topic)
        return topic

    def plan(self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None,
             replication_factor: int | None = None, assignment: dict[int, list[int]] | None = None,
             restored: bool = False) -> tuple[list[list[int]], dict[str, str] | None]:
        """What `create` would make of these arguments, without making it: each partition's
        replicas and the topic's configs; TopicError with Kafka's code and words otherwise."""
        validate_topic_name(name)
        if name in self.topics:
            raise TopicError("TOPIC_ALREADY_EXISTS", f"topic {name!r} already exists")
        internal = self.internal.get(name)
        if internal is not None and partitions in (None, -1) and assignment is None:
            partitions, replication_factor = internal.partitions, internal.replication_factor
            configs = {**internal.configs, **(configs or {})}
        if assignment:
            return self._check_assignment(assignment, same_size=not restored), configs
        n = self.default_partitions if partitions in (None, -1) else partitions
        if n <= 0:
            raise TopicError("INVALID_PARTITIONS", f"number of partitions must be positive, got {n}")
        return self._place(name, n, replication_factor), configs

    def _check_assignment(self, assignment: dict[int, list[int]], first: int = 0,
                          replication_factor: int | None = None, same_size: bool = True) -> list[list[int]]:
        registered = {n for n, _ in self.cluster.registered()} if self.cluster is not None else {0}
        try:
            replicas = check_assignment(assignment, registered, first, replication_factor, same_size)
        except PlacementError as err:
            raise TopicError(err.code_name, str(err)) from None
        for index, rs in enumerate(replicas, first):
            if self.cluster is not None and all(self.cluster.nodes[b].fenced for b in rs):
                raise TopicError("INVALID_REPLICA_ASSIGNMENT", "All brokers specified in the manual partition "
                                 f"assignment for partition {index} are fenced or in controlled shutdown.")
        return replicas

    def delete(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"topic {name!r} does not exist")
        self._by_id.pop(topic.topic_id, None)
        if self.observer is not None:
            self.observer.topic_deleted(topic)
        return topic

    def check_new_partition_count(self, name: str, total: int) -> Topic:
        """The topic that may grow to `total` partitions (Kafka's checks), or TopicError."""
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", None)
        current = len(topic.partitions)
        if total == current:
            raise TopicError("INVALID_PARTITIONS", f"Topic already has {current} partition(s).")
        if total < current:
            raise TopicError("INVALID_PARTITIONS", f"The topic {name} currently has {current} partition(s); "
                                                   f"{total} would not be an increase.")
        return topic

    def add_partitions(self, name: str, total: int, assignment: list[list[int]] | None = None,
                       validate_only: bool = False) -> Topic:
        """Grow a topic to `total` partitions (`assignment`: the new ones' replicas, chosen by the
        client); recorded (durable state) before it takes effect."""
        topic = self.check_new_partition_count(name, total)
        first = len(topic.partitions)
        rf = len(topic.partitions[0].replicas) if topic.partitions else self.default_replication_factor
        if assignment is not None:
            if len(assignment) != total - first:
                raise TopicError("INVALID_REPLICA_ASSIGNMENT",
                                 f"Increasing the number of partitions by {total - first} but {len(assignment)} "
                                 "assignments provided.")
            replicas = self._check_assignment(dict(enumerate(assignment, first)), first, rf)
        else:
            replicas = self._place(name, total - first, rf, first)
        if validate_only:
            return topic
        added = self._partitions(first, replicas)
        if self.observer is not None:
            self.observer.topic_grown(topic, added)
        topic.partitions.extend(added)
        return topic

    def replication_factor(self, requested: int | None) -> int:
        return self.default_replication_factor if requested in (None, -1) else requested

    def _place(self, name: str, count: int, replication_factor: int | None, first: int = 0) -> list[list[int]]:
        rf = self.replication_factor(replication_factor)
        if self.cluster is None:
            if rf != 1:
                raise TopicError("INVALID_REPLICATION_FACTOR",
                                 f"Replication factor: {rf} larger than available brokers: 1.")
            return [[0]] * count
        try:
            return self.cluster.place(name, count, rf, first)
        except PlacementError as err:
            raise TopicError(err.code_name, str(err)) from None

    def _partitions(self, first: int, replicas: list[list[int]]) -> list[Partition]:
        out = []
        for i, rs in enumerate(replicas, first):
            partition = Partition(i, rs[0])
            if self.cluster is not None:
                self.cluster.start_leadership(partition, rs)
            out.append(partition)
        return out

    def set_configs(self, name: str, configs: dict[str, str]) -> Topic:
        """Replace a topic's own configs; recorded (durable state) before it takes effect."""
        topic = self.topics[name]
        if self.observer is not None:
            self.observer.topic_configured(topic, configs)
        topic.configs = dict(configs)
        return topic

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def resolve(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        """A topic by name, or by id where the request version names topics by id."""
        return self.topics.get(name) if name is not None else self._by_id.get(topic_id)

    def partition(self, name: str, index: int) -> Partition | None:
        topic = self.topics.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def partition_exists(self, topic: str, partition: int) -> bool:
        """The one question the coordinator may ask about topics."""
        found = self.topics.get(topic)
        return found is not None and 0 <= partition < len(found.partitions)

    # -- waiting for records ---------------------------------------------------
    def notify_appended(self) -> None:
        if self._appended is not None:
            self._appended.set()
            self._appended = asyncio.Event()

    async def wait_appended(self, timeout_s: float) -> None:
        if self._appended is None:
            self._appended = asyncio.Event()
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation that
        # lands as its timeout fires, and a Fetch long-poll that shrugged off the shutdown's
        # cancel kept serving its consumer, holding a SIGTERM'd server open.
        try:
            async with asyncio.timeout(timeout_s):
                await self._appended.wait()
        except TimeoutError:
            pass


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False
