"""Server-side partition assignors of the consumer group protocol (KIP-848).

With `group.protocol=consumer` the coordinator, not a member, computes the target
assignment whenever the group epoch moves (a member joins, leaves or changes its
subscription; a subscribed topic's partitions change). A member names the assignor it
wants with `ServerAssignor` in ConsumerGroupHeartbeat; otherwise the first of
`group.consumer.assignors` is used (Kafka's default order: uniform, range).

An assignor is pure: the same members and topics give the same assignment, so the
coordinator can recompute it after a restart and tests can compare it with Kafka's.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping, Protocol

# member id -> topic id -> partitions. assign() returns the partitions as RecordPartitions
# (kcoord.coordinator.javaorder), frozensets that also hold `record_order`, and each
# member's topics in the order Kafka writes them: write a member's target assignment
# record in that order to have Kafka's record.
Assignment = dict[str, dict[str, frozenset[int]]]


@dataclass(frozen=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: frozenset[str]  # resolved from names and the regex, only topics that exist
    # Its current target: topic id -> partitions. Kafka reads it back from the member's
    # target assignment record, and the uniform assignor's choices follow that record's
    # order: the mapping's order is taken as the record's topic order; partitions as
    # listed by a tuple or list, by a RecordPartitions (what assign() returns) in its
    # record_order, by another frozenset in ascending order. So pass back what assign()
    # returned (or the record's lists) to get Kafka's next assignment exactly.
    assigned: Mapping[str, Collection[int]] = field(default_factory=dict)
    # The topic names it subscribes to, as its member record lists them, names that do not
    # exist included (with a regex: the regex's resolved topics as their record lists them):
    # Kafka walks its topics in the order of a HashSet of these names. None: the names of
    # subscribed_topic_ids, in the order of `topics`.
    subscribed_topic_names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TopicSpec:
    topic_id: str
    name: str
    partitions: int
    # partition -> replica racks; empty: none known. Kafka 4.3.1's consumer assignors do not use racks.
    racks: Mapping[int, frozenset[str]] = field(default_factory=dict)


class AssignorError(Exception):
    """The assignment cannot be computed (Kafka: PartitionAssignorException)."""


HOMOGENEOUS = "homogeneous"
HETEROGENEOUS = "heterogeneous"


class ServerAssignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[str, TopicSpec],
               subscription_type: str | None = None) -> Assignment:
        """The new target assignment of every member (a member with nothing gets an empty dict).

        `members` in the order Kafka puts them into its member map: the group's members as
        its TimelineHashMap walks them (mirror it with javaorder.TimelineHashTable: add on
        join, remove on leave), then the joining member. `uniform` follows Java's HashMap
        order of the member ids, which depends on that order for ids that share a bucket. `topics` in any
        order; a member's subscribed names are walked as Kafka's HashSet of them, filled in
        the order of `topics`. Raises AssignorError where Kafka's assignor throws.

        `subscription_type` is the group's, as Kafka computes it from the subscribed topic
        *names* and regular expressions (ConsumerGroup.subscriptionType): HOMOGENEOUS when
        every member subscribes by name to the same names, or every member to the same
        single regex and none by name; else HETEROGENEOUS (group_subscription_type computes
        it). It selects the algorithm, so pass it; None derives it from `subscribed_topic_ids` (equal sets: homogeneous),
        which differs from Kafka's when a name does not resolve or regex and names mix."""


def is_homogeneous(members: Mapping[str, MemberSpec], subscription_type: str | None) -> bool:
    if subscription_type is not None:
        if subscription_type not in (HOMOGENEOUS, HETEROGENEOUS):
            raise ValueError(f"subscription type {subscription_type!r}")
        return subscription_type == HOMOGENEOUS
    return len({m.subscribed_topic_ids for m in members.values()}) <= 1


def group_subscription_type(subscriptions: Iterable[tuple[Collection[str], str | None]],
                            resolved_regexes: Mapping[str, Collection[str]]) -> str:
    """The group's subscription type as Kafka computes it (ConsumerGroup.subscriptionType).

    `subscriptions`: each member's subscribed topic names and its regex (None or "": none);
    `resolved_regexes`: the topic names each regex currently resolves to (a regex not yet
    resolved is absent). HOMOGENEOUS when no member uses a regex and every member
    subscribes to every subscribed name, or when all members use the same single regex and
    nobody subscribes by name; else HETEROGENEOUS."""
    members = 0
    by_name: Counter[str] = Counter()
    regexes: Counter[str] = Counter()
    for names, regex in subscriptions:
        members += 1
        by_name.update(set(names))
        if regex:
            regexes[regex] += 1
    by_regex: Counter[str] = Counter()
    for regex in regexes:
        by_regex.update(set(resolved_regexes.get(regex, ())))
    if not regexes:
        return HOMOGENEOUS if all(by_name[t] == members for t in by_name) else HETEROGENEOUS
    if len(regexes) == 1 and next(iter(regexes.values())) == members:
        names = set(by_name) | set(by_regex)
        if all(by_regex[t] == 1 and by_name[t] == 0 for t in names):
            return HOMOGENEOUS
    return HETEROGENEOUS
