"""A streams group's topology (KIP-1071) and its configuration against the topics that exist.

A member joining a streams group sends its topology: subtopologies with their source topics,
the repartition topics they write and read, their state changelog topics and which of their
inputs must be co-partitioned. The coordinator keeps it (the StreamsGroupTopologyValue
record) and "configures" it as Kafka 4.3.1's InternalTopicManager does: it decides each
repartition topic's partition count (from upstream source topics, to a fix point), enforces
co-partitioning, gives every changelog topic the partition count of its subtopology's task
count, and then reports, in this order of precedence, missing source topics, incorrectly
partitioned topics or missing internal topics (which the coordinator asks to be created).

Kafka walks `HashMap`s and `HashSet`s while doing so, and which topic it names first in a
status detail (or which error it finds first) follows from their iteration order, so the
same walks are made here in Java's order (kcoord.coordinator.javaorder).

Source topic regexes are kept in the topology but never resolved: Kafka 4.3.1 refuses a
heartbeat that carries one (REGEX_UNSUPPORTED) before it reaches the topology.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from kcoord.coordinator.javaorder import (JavaHashTable, hashmap_order, hashset_copy_order, string_compare_key,
                                         string_hash)
from wire.errors import ErrorCode


class HeartbeatStatus(enum.IntEnum):
    """StreamsGroupHeartbeatResponse's status codes."""
    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5


# INVALID_REQUEST detail of a heartbeat whose topology has a SourceTopicRegex (Kafka 4.3.1).
REGEX_UNSUPPORTED = "Regular expressions for source topics are not supported yet."

_MAX_TOPIC_NAME = 249
_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class TopologyRejected(Exception):
    """The topology cannot be taken or configured at all: Kafka fails the whole heartbeat
    with `error` and `message` (None where Kafka sends none: UNKNOWN_SERVER_ERROR, whose
    cause is in `reason`)."""

    def __init__(self, error: ErrorCode, message: str | None, reason: str | None = None):
        super().__init__(message if message is not None else reason)
        self.error = error
        self.message = message
        self.reason = reason if reason is not None else message


def _internal_error(reason: str) -> TopologyRejected:
    # Kafka's IllegalStateException / IllegalArgumentException / IndexOutOfBoundsException.
    return TopologyRejected(ErrorCode.UNKNOWN_SERVER_ERROR, None, reason)


def _invalid_topology(message: str) -> TopologyRejected:
    return TopologyRejected(ErrorCode.STREAMS_INVALID_TOPOLOGY, message)


# --------------------------------------------------------------------------------------------
# The topology as the member sent it (and as the StreamsGroupTopologyValue record keeps it)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int  # 0: not fixed by the topology, the coordinator decides
    replication_factor: int  # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()

    def as_record(self) -> dict:
        return {"name": self.name, "partitions": self.partitions, "replication_factor": self.replication_factor,
                "topic_configs": dict(self.configs)}


@dataclass(frozen=True)
class CopartitionGroup:
    """Indexes into its subtopology's source_topics, source_topic_regex and
    repartition_source_topics."""
    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()

    def as_record(self) -> dict:
        return {"source_topics": list(self.source_topics), "source_topic_regex": list(self.source_topic_regex),
                "repartition_source_topics": list(self.repartition_source_topics)}


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    def as_record(self) -> dict:
        return {"subtopology_id": self.subtopology_id, "source_topics": list(self.source_topics),
                "source_topic_regex": list(self.source_topic_regex),
                "state_changelog_topics": [t.as_record() for t in self.state_changelog_topics],
                "repartition_sink_topics": list(self.repartition_sink_topics),
                "repartition_source_topics": [t.as_record() for t in self.repartition_source_topics],
                "copartition_groups": [g.as_record() for g in self.copartition_groups]}

    def input_topics(self) -> list[str]:
        """What its tasks read: its source topics, then its repartition source topics."""
        return list(self.source_topics) + [t.name for t in self.repartition_source_topics]


def _topic_info(data: Mapping, configs_as_pairs: bool) -> TopicInfo:
    configs = data.get("topic_configs") or ()
    if configs_as_pairs:  # the request's [{key, value}]
        pairs = tuple((c["key"], c["value"]) for c in configs)
    else:  # the record as data: {key: value}
        pairs = tuple(dict(configs).items())
    return TopicInfo(data["name"], data.get("partitions", 0), data.get("replication_factor", 0), pairs)


def _subtopology(data: Mapping, configs_as_pairs: bool) -> Subtopology:
    return Subtopology(
        data["subtopology_id"],
        tuple(data.get("source_topics") or ()),
        tuple(data.get("source_topic_regex") or ()),
        tuple(_topic_info(t, configs_as_pairs) for t in data.get("state_changelog_topics") or ()),
        tuple(data.get("repartition_sink_topics") or ()),
        tuple(_topic_info(t, configs_as_pairs) for t in data.get("repartition_source_topics") or ()),
        tuple(CopartitionGroup(tuple(g.get("source_topics") or ()), tuple(g.get("source_topic_regex") or ()),
                               tuple(g.get("repartition_source_topics") or ()))
              for g in data.get("copartition_groups") or ()))


def _java_order(names: Iterable[str]) -> list[str]:
    """Names as a HashSet (or a HashMap keyed by them) filled in this order iterates them."""
    return hashmap_order(list(names), string_hash)


def _java_set_copy(names: Sequence[str]) -> tuple[str, ...]:
    """`new HashSet<>(list)`."""
    return tuple(hashset_copy_order(list(names), string_hash))


def _java_sorted(names: Iterable[str]) -> list[str]:
    """As a TreeSet / TreeMap of strings iterates them."""
    return sorted(names, key=string_compare_key)


@dataclass(frozen=True)
class StreamsTopology:
    epoch: int
    subtopologies: dict[str, Subtopology]  # by id, in the order the member sent them

    @classmethod
    def _from(cls, value: Mapping, configs_as_pairs: bool) -> "StreamsTopology":
        epoch = value.get("epoch", 0)
        if epoch < 0:
            raise _internal_error("Topology epoch must be non-negative.")
        subtopologies: dict[str, Subtopology] = {}
        for data in value.get("subtopologies") or ():
            sub = _subtopology(data, configs_as_pairs)
            if sub.subtopology_id in subtopologies:
                raise _internal_error(f"Duplicate key {sub.subtopology_id}")
            subtopologies[sub.subtopology_id] = sub
        return cls(epoch, subtopologies)

    @classmethod
    def from_request(cls, topology: Mapping) -> "StreamsTopology":
        """From StreamsGroupHeartbeatRequest's decoded Topology field."""
        return cls._from(topology, configs_as_pairs=True)

    @classmethod
    def from_record(cls, value: Mapping) -> "StreamsTopology":
        return cls._from(value, configs_as_pairs=False)

    def as_record(self) -> dict:
        """The StreamsGroupTopologyValue record as data."""
        return {"epoch": self.epoch, "subtopologies": [s.as_record() for s in self.subtopologies.values()]}

    def _kafka_order(self) -> list[Subtopology]:
        """The subtopologies as Kafka walks them: a HashMap by id."""
        return [self.subtopologies[sid] for sid in _java_order(self.subtopologies)]

    def _required_topics_order(self) -> list[str]:
        return _java_order(name for sub in self._kafka_order()
                           for name in sub.input_topics() + [t.name for t in sub.state_changelog_topics])

    def required_topics(self) -> set[str]:
        """The topics whose existence and partition counts its configuration depends on."""
        return set(self._required_topics_order())

    def uses_source_topic_regex(self) -> bool:
        return any(sub.source_topic_regex for sub in self.subtopologies.values())

    def changelog_partitions_problem(self) -> str | None:
        """STREAMS_INVALID_TOPOLOGY's message for a joining member's topology that fixes a
        changelog topic's partition count (Kafka checks this on the request), else None."""
        for sub in self.subtopologies.values():
            for topic in sub.state_changelog_topics:
                if topic.partitions != 0:
                    return (f"Changelog topic {topic.name} must have an undefined partition count, "
                            f"but it is set to {topic.partitions}.")
        return None


# --------------------------------------------------------------------------------------------
# The configured topology
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TopologyError:
    status: int  # a HeartbeatStatus
    message: str  # the status detail, Kafka's words


@dataclass(frozen=True)
class ConfiguredSubtopology:
    """A subtopology's task count and its topics' decided partition counts. Sets and maps
    iterate in the order Kafka's do."""
    number_of_tasks: int
    source_topics: tuple[str, ...]
    repartition_source_topics: dict[str, int]
    state_changelog_topics: dict[str, int]
    repartition_sink_topics: tuple[str, ...] = ()


class TopologyMetadata:
    """The task assignor's view of a configured topology (Kafka's TopologyDescriber)."""

    def __init__(self, subtopologies: Mapping[str, ConfiguredSubtopology]):
        self._subtopologies = subtopologies

    def _get(self, subtopology_id: str) -> ConfiguredSubtopology:
        try:
            return self._subtopologies[subtopology_id]
        except KeyError:
            raise KeyError(f"Topology does not contain subtopology {subtopology_id}") from None

    def subtopologies(self) -> list[str]:
        return list(self._subtopologies)

    def max_num_input_partitions(self, subtopology_id: str) -> int:
        return self._get(subtopology_id).number_of_tasks

    def is_stateful(self, subtopology_id: str) -> bool:
        return bool(self._get(subtopology_id).state_changelog_topics)


@dataclass(frozen=True)
class ConfiguredTopology:
    epoch: int
    # By id, sorted (Kafka's TreeMap). None when configuration failed; present, with `error`
    # MISSING_INTERNAL_TOPICS, when only internal topics are missing (as Kafka's).
    subtopologies: dict[str, ConfiguredSubtopology] | None
    internal_topics_to_create: dict[str, TopicInfo]  # replication_factor -1: the broker's default
    error: TopologyError | None

    def is_ready(self) -> bool:
        return self.error is None

    def subtopology_ids(self) -> list[str]:
        return list(self.subtopologies or ())

    def describer(self) -> TopologyMetadata:
        """The TopologyDescriber for the task assignor (a ready topology's)."""
        if self.subtopologies is None:
            raise ValueError("topology is not configured")
        return TopologyMetadata(self.subtopologies)

    def max_num_input_partitions(self, subtopology_id: str) -> int:
        return self.describer().max_num_input_partitions(subtopology_id)

    def is_stateful(self, subtopology_id: str) -> bool:
        return self.describer().is_stateful(subtopology_id)


class _ConfigurationFailed(Exception):
    """Kafka's TopicConfigurationException: the heartbeat succeeds with this status."""

    def __init__(self, status: HeartbeatStatus, message: str):
        super().__init__(message)
        self.error = TopologyError(int(status), message)


def _incorrectly_partitioned(message: str) -> _ConfigurationFailed:
    return _ConfigurationFailed(HeartbeatStatus.INCORRECTLY_PARTITIONED_TOPICS, message)


def _summarize(topics: Sequence[str]) -> str:
    if not topics:
        return "<none>"
    shown = ", ".join(topics[:3])
    return shown + (f" and {len(topics) - 3} additional topics" if len(topics) > 3 else "")


def _java_map_string(counts: Mapping[str, int]) -> str:
    """A TreeMap<String, Integer>'s toString."""
    return "{" + ", ".join(f"{k}={counts[k]}" for k in _java_sorted(counts)) + "}"


def _topic_name_problem(name: str) -> str | None:
    """Why Kafka's Topic.validate refuses a name, in its words."""
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name.encode("utf-16-be", "surrogatepass")) // 2 > _MAX_TOPIC_NAME:
        return f"the length of '{name}' is longer than the max allowed length {_MAX_TOPIC_NAME}"
    if not set(name) <= _LEGAL_TOPIC_CHARS:
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


@dataclass(frozen=True)
class _InternalTopic:
    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]

    def creatable(self) -> TopicInfo:
        return TopicInfo(self.name, self.partitions, self.replication_factor or -1, self.configs)


class _Configurator:
    """One configuration of one topology against the topics, as InternalTopicManager does it."""

    def __init__(self, topology: StreamsTopology, topics: Mapping[str, int]):
        self.topology = topology
        self.topics = topics
        self.subs = topology._kafka_order()
        self.decided: dict[str, int] = {}

    def count(self, topic: str) -> int | None:
        """An existing topic's partition count wins over a decided one."""
        found = self.topics.get(topic)
        return found if found is not None else self.decided.get(topic)

    def count_or_fail(self, topic: str, reason: str) -> int:
        found = self.count(topic)
        if found is None:
            raise _internal_error(reason + topic)
        return found

    # -- the steps, in Kafka's order -------------------------------------------------------

    def copartition_groups(self) -> list[list[list[str]]]:
        groups = []
        for sub in self.subs:
            sets = []
            for group in sub.copartition_groups:
                try:
                    names = ([sub.source_topics[i] for i in group.source_topics]
                             + [sub.repartition_source_topics[i].name for i in group.repartition_source_topics])
                    if any(i < 0 for i in group.source_topics + group.repartition_source_topics):
                        raise IndexError
                except IndexError:
                    raise _internal_error(f"copartition group index out of range in subtopology "
                                          f"{sub.subtopology_id}") from None
                sets.append(_java_order(names))
            groups.append(sets)
        return groups

    def check_source_topics(self) -> None:
        missing = _java_sorted({t for sub in self.subs for t in sub.source_topics if t not in self.topics})
        if missing:
            raise _ConfigurationFailed(HeartbeatStatus.MISSING_SOURCE_TOPICS,
                                       f"Source topics {_summarize(missing)} are missing.")

    def repartition_counts(self) -> dict[str, int]:
        """RepartitionTopics.setup: a fix point from the external source topics downstream."""
        missing = set()
        for sub in self.subs:
            own = {t.name for t in sub.repartition_source_topics}
            missing |= {t for t in sub.source_topics if t not in own and self.count(t) is None}
        if missing:
            raise _internal_error("Missing source topics: " + ", ".join(_java_order(missing)))
        counts = {t.name: t.partitions for sub in self.subs for t in sub.repartition_source_topics
                  if t.partitions != 0}
        while True:
            needed = progress = False
            for sub in self.subs:
                for sink in sub.repartition_sink_topics:
                    if sink in counts:
                        continue
                    found = self._sink_count(counts, sub)
                    if found is None:
                        needed = True
                    else:
                        counts[sink] = found
                        progress = True
            if needed and not progress:
                raise _invalid_topology("Failed to compute number of partitions for all repartition topics. "
                                        "There may be loops in the topology that cannot be resolved.")
            if not needed:
                break
        for sub in self.subs:
            if any(t.name not in counts for t in sub.repartition_source_topics):
                raise _invalid_topology("Failed to compute number of partitions for all repartition topics, "
                                        "because a repartition source topic is never used as a sink topic.")
        return counts

    def _sink_count(self, counts: Mapping[str, int], sub: Subtopology) -> int | None:
        """The most partitions among what the subtopology reads, as far as known yet."""
        known = [counts[t.name] for t in sub.repartition_source_topics if t.name in counts]
        known += [c for c in (self.count(t) for t in sub.source_topics) if c is not None]
        return max(known) if known else None

    def enforce_copartitioning(self, groups: list[list[list[str]]]) -> None:
        fixed = _java_order(t.name for sub in self.subs for t in sub.repartition_source_topics if t.partitions != 0)
        flexible = {t.name for sub in self.subs for t in sub.repartition_source_topics if t.partitions == 0}
        for sets in groups:
            for group in sets:
                self.decided.update(self._enforce(group, fixed, flexible))

    def _enforce(self, group: list[str], fixed: list[str], flexible: set[str]) -> dict[str, int]:
        """CopartitionedTopicsEnforcer.enforce for one co-partition group."""
        if not group:
            return {}
        fixed_set = set(fixed)
        reason = "Number of partitions is not set for topic: "
        repartition = {t: self.count_or_fail(t, reason)
                       for t in _java_order(t for t in group if t in fixed_set or t in flexible)}
        external = {t: self.count_or_fail(t, reason) for t in _java_order(t for t in group if t not in repartition)}
        if set(group) == set(repartition):
            if fixed:  # any fixed repartition topic of the topology, as Kafka checks
                wanted = self.count_or_fail(fixed[0], reason)
                if any(self.count_or_fail(t, reason) != wanted for t in fixed):
                    raise _incorrectly_partitioned("Following topics do not have the same number of partitions: "
                                                   f"[{_java_map_string(repartition)}]")
            else:
                wanted = max([0, *repartition.values()])
                if wanted == 0:
                    raise _invalid_topology("All topics in the copartition group had undefined partition number: "
                                            "[" + ", ".join(repartition) + "]")
        else:
            wanted = next(iter(external.values()))
            if any(c != wanted for c in external.values()):
                raise _incorrectly_partitioned("Following topics do not have the same number of partitions: "
                                               f"[{_java_map_string(external)}]")
        decided = {}
        for topic, found in repartition.items():
            decided[topic] = wanted
            if topic in fixed_set and found != wanted:
                raise _incorrectly_partitioned(
                    f"Number of partitions [{found}] of repartition topic [{topic}] doesn't match number of "
                    f"partitions [{wanted}] of the source topic.")
        return decided

    def changelog_counts(self) -> dict[str, int]:
        """ChangelogTopics.setup: a changelog has one partition per task of its subtopology."""
        counts = {}
        for sub in self.subs:
            found = [self.count_or_fail(t, "No partition count for source topic ") for t in sub.input_topics()]
            if not found:
                raise _invalid_topology(f"No source topics found for subtopology {sub.subtopology_id}")
            for topic in sub.state_changelog_topics:
                counts[topic.name] = max(found)
        return counts

    def internal_topic(self, info: TopicInfo) -> _InternalTopic:
        if info.partitions == 0 and info.name not in self.decided:
            raise _internal_error("Number of partitions must be set for topic " + info.name)
        keys = [k for k, _ in info.configs]
        if len(set(keys)) != len(keys):
            raise _internal_error(f"Duplicate topic config key in topic {info.name}")
        problem = _topic_name_problem(info.name)
        if problem is not None:
            raise TopologyRejected(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: " + problem)
        partitions = info.partitions or self.decided[info.name]
        if partitions < 1:
            raise _internal_error("Number of partitions must be at least 1.")
        values = dict(info.configs)
        return _InternalTopic(info.name, partitions, info.replication_factor,
                              tuple((k, values[k]) for k in _java_order(keys)))

    def internal_topics(self, infos: Sequence[TopicInfo]) -> dict[str, _InternalTopic]:
        built: dict[str, _InternalTopic] = {}
        for info in infos:
            topic = self.internal_topic(info)
            if topic.name in built:
                raise _internal_error(f"Duplicate key {topic.name}")
            built[topic.name] = topic
        return {name: built[name] for name in _java_order(built)}

    def configure_subtopology(self, sub: Subtopology) -> tuple[ConfiguredSubtopology, list[_InternalTopic]]:
        inputs = sub.input_topics()
        if not inputs:
            raise _internal_error("Subtopology does not contain any source topics")
        tasks = max(self.count_or_fail(t, "Number of partitions must be set for topic ") for t in inputs)
        repartition = self.internal_topics(sub.repartition_source_topics)
        changelog = self.internal_topics(sub.state_changelog_topics)
        if tasks <= 0:
            raise _internal_error("Number of tasks must be positive")
        configured = ConfiguredSubtopology(
            tasks, _java_set_copy(sub.source_topics),
            {n: t.partitions for n, t in repartition.items()}, {n: t.partitions for n, t in changelog.items()},
            _java_set_copy(sub.repartition_sink_topics))
        return configured, list(repartition.values()) + list(changelog.values())

    def missing_internal_topics(self, internal: Iterable[_InternalTopic]) -> dict[str, TopicInfo]:
        """The internal topics that do not exist yet; one that exists with other than its
        decided partition count fails the configuration."""
        to_create = JavaHashTable(string_hash)
        expected: dict[str, _InternalTopic] = {}
        for topic in internal:
            to_create.add(topic.name)
            expected[topic.name] = topic
        for name in self.topology._required_topics_order():
            found = self.topics.get(name)
            if found is None or name not in to_create:
                continue
            to_create.discard(name)
            if found != expected[name].partitions:
                raise _incorrectly_partitioned(
                    f"Existing topic {name} has different number of partitions: expected "
                    f"{expected[name].partitions}, found {found}")
        return {name: expected[name].creatable() for name in to_create}


def configure(topology: StreamsTopology, topics: Mapping[str, int]) -> ConfiguredTopology:
    """Configure `topology` against `topics` (every existing topic's name -> partition count).

    Raises TopologyRejected where Kafka fails the heartbeat itself (an invalid topology,
    STREAMS_INVALID_TOPOLOGY; an internal topic's illegal name, INVALID_TOPIC_EXCEPTION;
    an inconsistent one, UNKNOWN_SERVER_ERROR)."""
    run = _Configurator(topology, topics)
    groups = run.copartition_groups()
    try:
        run.check_source_topics()
        run.decided.update(run.repartition_counts())
        run.enforce_copartitioning(groups)
        run.decided.update(run.changelog_counts())
        subtopologies: dict[str, ConfiguredSubtopology] = {}
        internal: list[_InternalTopic] = []
        for sid in _java_sorted(topology.subtopologies):
            subtopologies[sid], topics_of_sub = run.configure_subtopology(topology.subtopologies[sid])
            internal += topics_of_sub
        to_create = run.missing_internal_topics(internal)
    except _ConfigurationFailed as failed:
        return ConfiguredTopology(topology.epoch, None, {}, failed.error)
    error = None
    if to_create:
        error = TopologyError(int(HeartbeatStatus.MISSING_INTERNAL_TOPICS),
                              "Internal topics are missing: " + _summarize(list(to_create)))
    return ConfiguredTopology(topology.epoch, subtopologies, to_create, error)


# --------------------------------------------------------------------------------------------
# Interactive queries: which partitions a member's tasks cover
# --------------------------------------------------------------------------------------------

def _task_partitions(tasks: Mapping[str, Iterable[int]], subtopologies: Mapping[str, ConfiguredSubtopology],
                     topics: Mapping[str, int]) -> list[tuple[str, list[int]]]:
    covered = []
    for sid in _java_sorted(tasks):
        sub = subtopologies.get(sid)
        if sub is None:
            raise _internal_error(f"Subtopology {sid} not found in the configured topology")
        partitions = sorted(set(tasks[sid]))
        inputs = JavaHashTable.copy_of(string_hash, list(sub.source_topics))
        for name in sub.repartition_source_topics:
            inputs.add(name)
        for topic in inputs:
            if topic not in topics:
                raise _internal_error(f"Topic {topic} not found in metadata image")
            # As Kafka: a topic with fewer partitions than the tasks gets the lowest task ids.
            count = topics[topic]
            covered.append((topic, partitions[:count] if count < len(partitions) else partitions))
    return covered


def endpoint_to_partitions(active_tasks: Mapping[str, Iterable[int]], standby_tasks: Mapping[str, Iterable[int]],
                           configured: ConfiguredTopology, topics: Mapping[str, int]) -> dict:
    """The topic partitions a member's active and standby tasks (subtopology id -> task ids)
    cover, as Kafka's EndpointToPartitionsManager gives them to the other members: per task
    set, every source and repartition source topic of its subtopology, with the task ids as
    partitions (fewer where the topic has fewer partitions than tasks are listed).

    Kafka walks the subtopologies in a map order that varies between JVMs; here they come
    sorted by id, each one's topics in Kafka's (HashSet) order, partitions ascending."""
    if configured.subtopologies is None:
        raise _internal_error("the topology is not configured")
    return {"active": _task_partitions(active_tasks, configured.subtopologies, topics),
            "standby": _task_partitions(standby_tasks, configured.subtopologies, topics)}
