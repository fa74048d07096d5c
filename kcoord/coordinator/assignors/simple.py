"""The share groups' `simple` assignor (KIP-932), as Kafka 4.3.1's SimpleAssignor computes it.

Unlike a consumer group's assignor, a partition may go to several members: with more members
than partitions each partition is shared by `ceil(members / partitions)` of them
(`desired sharing`), and each member gets its share of the (partition, member) pairs, the
members' counts differing by at most one. Balance first, then stickiness:

1. a member keeps what it holds of the topics the group still subscribes to (homogeneous:
   the first member's topics; heterogeneous: every member's), up to the partitions that are
   assignable (those whose share state is initialized);
2. a member holding more than its count gives up the excess;
3. a partition shared by more members than desired is taken from some of them;
4. the partitions shared by fewer go, partition by partition, to the members below their
   count, round-robin.

Homogeneous (every member subscribes to the same topics) works over all the topics at once;
heterogeneous topic by topic, each among its subscribers. Which member comes first and which
partition is given up depends on Java's HashMap and HashSet iteration orders, which kcoord
emulates (kcoord.coordinator.javaorder) to give Kafka's very assignment.

A member's assignment may keep a topic with no partitions left in it, as Kafka's does (the
coordinator's ShareGroupAssignmentBuilder then filters by the member's subscription).
"""
from __future__ import annotations

import math
import struct
from typing import Iterable, Mapping

from kcoord.coordinator.assignors.spec import Assignment, AssignorError, MemberSpec, TopicSpec, is_homogeneous
from kcoord.coordinator.assignors.uniform import subscription_order
from kcoord.coordinator.javaorder import (
    JavaHashTable, RecordPartitions, hashmap_order, integer_hash, java_int, record_list, string_hash, uuid_hash,
)


def _expected_capacity(n: int) -> int:
    """AssignorHelpers.newHashMap/newHashSet(n): `(int) ((n + 1) / 0.75f + 1)`, in float."""
    as_float = struct.unpack("f", struct.pack("f", (n + 1) / 0.75))[0]
    return int(as_float + 1)


def _tp_hash(tp: tuple[str, int]) -> int:
    """org.apache.kafka.server.common.TopicIdPartition (a record): 31 * topicId + partition."""
    return java_int(31 * uuid_hash(tp[0]) + tp[1])


def _desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    precise = sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


class _Held:
    """One member's assignment as Kafka's builder holds it: the map read back from its target
    assignment record until the first change, then AssignorHelpers.deepCopyAssignment."""

    def __init__(self, assigned: Mapping[str, Iterable[int]]):
        self.topics = JavaHashTable(uuid_hash)
        self.sets: dict[str, JavaHashTable] = {}
        for topic_id, partitions in assigned.items():
            self.topics.add(topic_id)
            self.sets[topic_id] = JavaHashTable.copy_of(integer_hash, record_list(partitions))

    def items(self) -> list[tuple[str, JavaHashTable]]:
        return [(t, self.sets[t]) for t in self.topics]

    def copy(self) -> "_Held":
        held = _Held({})
        held.topics = JavaHashTable(uuid_hash, len(self.topics))
        for topic_id in self.topics:
            held.topics.add(topic_id)
            held.sets[topic_id] = JavaHashTable.copy_of(integer_hash, list(self.sets[topic_id]))
        return held

    def remove_topic(self, topic_id: str) -> None:
        self.topics.discard(topic_id)
        self.sets.pop(topic_id, None)

    def add(self, topic_id: str, p: int) -> None:
        self.topics.add_first(topic_id)   # computeIfAbsent
        if topic_id not in self.sets:
            self.sets[topic_id] = JavaHashTable(integer_hash)
        self.sets[topic_id].add(p)

    def result(self) -> dict[str, RecordPartitions]:
        return {t: RecordPartitions(self.sets[t]) for t in self.topics}


class _UnfilledIterator:
    """An iterator over a HashSet of member indices sized for every member: Java walks it in
    ascending order, and removing the current element does not disturb the walk."""

    def __init__(self, members: set[int]):
        self.members = members
        self.last = -1

    def has_next(self) -> bool:
        return any(m > self.last for m in self.members)

    def next(self) -> int:
        following = [m for m in self.members if m > self.last]
        if not following:
            # Kafka's iterator throws NoSuchElementException here: a current assignment can leave
            # a partition wanting members when every member is full (the heartbeat then fails).
            raise AssignorError("NoSuchElementException: no unfilled member left to assign a partition to")
        self.last = min(following)
        return self.last


class _Assignments:
    """The old and new group assignments by member index, shared by both algorithms."""

    def __init__(self, member_ids: list[str], members: Mapping[str, MemberSpec]):
        self.old = [_Held(members[m].assigned) for m in member_ids]
        self.new: dict[int, _Held] = {}

    def copy_for(self, index: int) -> _Held:
        held = self.new.get(index)
        if held is None:
            held = self.new[index] = self.old[index].copy()
        return held

    def result(self, member_ids: list[str]) -> Assignment:
        return {mid: (self.new.get(i) or self.old[i]).result() for i, mid in enumerate(member_ids)}


class _Holders:
    """Kafka's finalAssignmentByPartition and finalAssignmentByMember: the members holding each
    partition and the partitions each member holds, as Java's hash tables walk them. A key is a
    (topic id, partition) pair (homogeneous) or a partition of the one topic being assigned
    (heterogeneous); `topic_partition` names its topic and partition."""

    def __init__(self, key_hash, capacity: int, members_capacity: int | None, topic_partition):
        self.key_hash = key_hash
        self.topic_partition = topic_partition
        self.partitions = JavaHashTable(key_hash, capacity)
        self.holders: dict = {}
        self.members = JavaHashTable(integer_hash, members_capacity)
        self.held: dict[int, JavaHashTable] = {}

    def of_partition(self, key, capacity: int | None = None) -> JavaHashTable:
        self.partitions.add_first(key)   # computeIfAbsent: the table may grow even when the key is there
        if key not in self.holders:
            self.holders[key] = JavaHashTable(integer_hash, capacity)
        return self.holders[key]

    def of_member(self, index: int) -> JavaHashTable:
        self.members.add_first(index)
        if index not in self.held:
            self.held[index] = JavaHashTable(self.key_hash)
        return self.held[index]

    def hold(self, index: int, key) -> None:
        self.of_partition(key).add(index)
        self.of_member(index).add(key)

    def count(self, index: int) -> int:
        held = self.held.get(index)
        return 0 if held is None else len(held)

    def revoke_excess(self, order, counts: list[int], a: "_Assignments") -> None:
        """revokeOverfilledMembers: each member of `order` over its count gives up the partitions
        it holds first in its set's order."""
        for index in order:
            mine = self.held[index]
            for key in list(mine):
                if len(mine) <= counts[index]:
                    break
                topic_id, p = self.topic_partition(key)
                a.copy_for(index).sets[topic_id].discard(p)
                self.holders[key].discard(index)
                mine.discard(key)

    def revoke_overshared(self, sharing: int, a: "_Assignments", revoked=lambda index: None) -> None:
        """revokeOversharedPartitions: a partition held by more members than desired is taken from
        the first of them in its set's order."""
        for key in list(self.partitions):
            assigned = self.holders[key]
            left = len(assigned)
            if left <= sharing:
                continue
            topic_id, p = self.topic_partition(key)
            for index in list(assigned):
                ps = a.copy_for(index).sets.get(topic_id)
                if ps is not None and p in ps:
                    ps.discard(p)
                    left -= 1
                    assigned.discard(index)
                    self.held[index].discard(key)
                    revoked(index)
                if left <= sharing:
                    break

    def assign_remaining(self, unfilled: set[int], sharing: int, counts: list[int], a: "_Assignments") -> None:
        """assignRemainingPartitions: one pass over the partitions, cycling through the unfilled
        members; a member at its count leaves the cycle."""
        if not unfilled:
            return
        it = _UnfilledIterator(unfilled)
        assigned_this_round = False
        for key in list(self.partitions):
            assigned = self.holders[key]
            if len(assigned) < sharing:
                to_make = sharing - len(assigned)
                while to_make > 0:
                    if not it.has_next():
                        if not assigned_this_round:
                            break
                        it = _UnfilledIterator(unfilled)
                        assigned_this_round = False
                    index = it.next()
                    if index not in assigned:   # Kafka never adds to `assigned` here
                        topic_id, p = self.topic_partition(key)
                        a.copy_for(index).add(topic_id, p)
                        self.of_member(index).add(key)
                        to_make -= 1
                        assigned_this_round = True
                        if len(self.held[index]) >= counts[index]:
                            unfilled.discard(index)
            if not unfilled:
                break


class SimpleAssignor:
    name = "simple"

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[str, TopicSpec],
               subscription_type: str | None = None,
               assignable: Mapping[str, Iterable[int]] | None = None) -> Assignment:
        """`assignable`: topic id -> the partitions that may be assigned (Kafka: those whose
        share-partition state is initialized); None: every partition. Otherwise as
        ServerAssignor.assign (members in Kafka's member-map order)."""
        if not members:
            return {}
        member_ids = hashmap_order(list(members), string_hash)
        allowed = None if assignable is None else {t: set(ps) for t, ps in assignable.items()}

        def targets(topic_id: str) -> list[int]:
            spec = topics.get(topic_id)
            if spec is None:
                raise AssignorError(f"Members are subscribed to topic {topic_id} which doesn't exist in the "
                                    "topic metadata.")
            return [p for p in range(spec.partitions)
                    if allowed is None or p in allowed.get(topic_id, ())]

        if is_homogeneous(members, subscription_type):
            return _homogeneous(member_ids, members, topics, targets)
        return _heterogeneous(member_ids, members, topics, targets)


def _homogeneous(member_ids: list[str], members: Mapping[str, MemberSpec], topics, targets) -> Assignment:
    subscribed = subscription_order(members[member_ids[0]], topics)
    if not subscribed:
        return {}
    n = len(member_ids)
    partitions = [(t, p) for t in subscribed for p in targets(t)]
    sharing = (n + len(partitions) - 1) // len(partitions) if partitions else 0
    counts = _desired_counts(sharing, len(partitions), n)
    a = _Assignments(member_ids, members)
    h = _Holders(_tp_hash, _expected_capacity(len(partitions)), _expected_capacity(n), lambda key: key)
    unfilled: set[int] = set()
    overfilled: set[int] = set()
    subscribed_set = set(subscribed)

    # 1. what each member keeps of the subscribed topics
    for index, old in enumerate(a.old):
        copied = False
        count = 0
        for topic_id, held in old.items():
            if topic_id in subscribed_set:
                for p in held:
                    count += 1
                    h.hold(index, (topic_id, p))
                    copied = copied or count >= counts[index]
            else:
                copied = True
        if copied:
            new = old.copy()
            for topic_id, _ in old.items():
                if topic_id not in subscribed_set:
                    new.remove_topic(topic_id)
            a.new[index] = new
        if count < counts[index]:
            unfilled.add(index)
        elif count > counts[index]:
            overfilled.add(index)

    h.revoke_excess(sorted(overfilled), counts, a)            # 2. members over their count
    h.revoke_overshared(sharing, a, revoked=unfilled.add)     # 3. partitions shared more than desired
    for key in partitions:                                    # 4. the rest, round-robin
        h.of_partition(key)
    h.assign_remaining(unfilled, sharing, counts, a)
    return a.result(member_ids)


def _heterogeneous(member_ids: list[str], members: Mapping[str, MemberSpec], topics, targets) -> Assignment:
    n = len(member_ids)
    member_topics = [subscription_order(members[m], topics) for m in member_ids]
    subscribed = JavaHashTable(uuid_hash)
    for ts in member_topics:
        for t in ts:
            subscribed.add(t)
    topic_order = list(subscribed)
    if not topic_order:
        return {}
    target_partitions = {t: targets(t) for t in topic_order}
    subscribers: dict[str, list[int]] = {}
    for index, ts in enumerate(member_topics):
        for t in ts:
            subscribers.setdefault(t, []).append(index)
    a = _Assignments(member_ids, members)
    for topic_id in topic_order:
        _assign_topic(topic_id, n, target_partitions[topic_id], subscribers[topic_id], a)
    return a.result(member_ids)


def _assign_topic(topic_id: str, n: int, partitions: list[int], subs: list[int], a: _Assignments) -> None:
    sharing = (len(subs) + len(partitions) - 1) // len(partitions) if partitions else 0
    counts = [0] * n
    for i, c in enumerate(_desired_counts(sharing, len(partitions), len(subs))):
        counts[subs[i]] = c
    h = _Holders(integer_hash, _expected_capacity(len(partitions)), _expected_capacity(len(subs)),
                 lambda p: (topic_id, p))
    # 1. what each member holds of the topic (every topic walked here is subscribed by someone)
    for index, old in enumerate(a.old):
        for p in old.sets.get(topic_id, ()):
            h.of_partition(p).add(index)
            h.of_member(index).add(p)
    h.revoke_excess([i for i in h.members if h.count(i) > counts[i]], counts, a)   # 2.
    h.revoke_overshared(sharing, a)                                                 # 3.
    for p in partitions:                                                            # 4.
        h.of_partition(p, _expected_capacity(len(subs)))
    h.assign_remaining({i for i in subs if h.count(i) < counts[i]}, sharing, counts, a)
