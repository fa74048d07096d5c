"""The `uniform` server assignor, as Kafka 4.3.1's UniformAssignor computes it.

Balance first (partition counts differ by at most one), then stickiness (a member keeps
what it has where balance allows). Two algorithms, chosen by the group's subscription type:

* homogeneous (every member subscribes to the same topics): each member, in the group's
  member order, keeps up to its quota of what it holds; the partitions nobody holds and
  those given up then fill the members below quota, in that order;
* heterogeneous: a member keeps all it holds of the topics it still subscribes to; the
  free partitions go, topic by topic (most partitions per subscriber first), to the least
  loaded subscribers; then partitions move from the most to the least loaded subscribers
  of each topic until no move helps (at most 16 rounds over the topics).

Kafka 4.3.1's consumer assignors ignore racks (MemberSpec.rack_id, TopicSpec.racks).

"The group's member order" is the iteration order of Java's HashMap of member ids, and a
member's partitions of a topic are taken in Java's HashSet order: kcoord emulates both
(kcoord.coordinator.javaorder) so the result is Kafka's, not merely as good as Kafka's.
"""
from __future__ import annotations

from typing import Mapping

from kcoord.coordinator.assignors.spec import Assignment, AssignorError, MemberSpec, TopicSpec, is_homogeneous
from kcoord.coordinator.javaorder import (JavaHashTable, RecordPartitions, hashmap_order, hashset_copy_order,
                                          integer_hash, record_list, string_hash, uuid_bits, uuid_hash)

MAX_BALANCE_ROUNDS = 16


class UniformAssignor:
    name = "uniform"

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[str, TopicSpec],
               subscription_type: str | None = None) -> Assignment:
        result: Assignment = {member_id: {} for member_id in members}
        if not members:
            return result
        member_ids = hashmap_order(list(members), string_hash)
        for member_id in member_ids:
            for topic_id in members[member_id].subscribed_topic_ids:
                if topic_id not in topics:
                    raise AssignorError(f"members are subscribed to topic {topic_id}, which does not exist")
        if is_homogeneous(members, subscription_type):
            target = _Homogeneous(member_ids, members, topics).build()
        else:
            target = _Heterogeneous(member_ids, members, topics).build()
        for member_id, member_target in target.items():
            result[member_id] = member_target.result()
        return result


def subscription_order(member: MemberSpec, topics: Mapping[str, TopicSpec]) -> list[str]:
    """A member's subscribed topic ids as Kafka walks them (TopicIds): its topic names in a
    HashSet, each resolved to its id, names that do not resolve skipped."""
    ids_by_name = {topics[t].name: t for t in topics if t in member.subscribed_topic_ids}
    return [ids_by_name[n] for n in hashset_copy_order(subscribed_names(member, topics), string_hash)
            if n in ids_by_name]


def subscribed_names(member: MemberSpec, topics: Mapping[str, TopicSpec]) -> list[str]:
    """The names a member subscribes to (TopicIds.size() counts them all, resolved or not)."""
    if member.subscribed_topic_names is not None:
        return list(dict.fromkeys(member.subscribed_topic_names))
    return [topics[t].name for t in topics if t in member.subscribed_topic_ids]


class _Target:
    """A member's target assignment as Kafka's builders hold it: the map read back from its
    record (Assignment.fromRecord) until the first change, then a deep copy; kept as Java
    hash tables so that the result knows Kafka's record order."""

    def __init__(self, member: MemberSpec):
        self.topics = JavaHashTable(uuid_hash)
        self.sets: dict[str, JavaHashTable] = {}
        for topic_id, partitions in member.assigned.items():
            if topic_id not in self.sets:
                self.topics.add(topic_id)
                self.sets[topic_id] = JavaHashTable.copy_of(integer_hash, record_list(partitions))
        self.copied = False

    def original(self) -> list[tuple[str, JavaHashTable]]:
        return [(t, self.sets[t]) for t in self.topics]

    def mutable(self) -> None:
        if self.copied:
            return
        topics = JavaHashTable(uuid_hash, len(self.topics))
        sets = {}
        for topic_id in self.topics:
            topics.add(topic_id)
            sets[topic_id] = JavaHashTable.copy_of(integer_hash, list(self.sets[topic_id]))
        self.topics, self.sets, self.copied = topics, sets, True

    def remove_topic(self, topic_id: str) -> None:
        self.mutable()
        self.topics.discard(topic_id)
        self.sets.pop(topic_id, None)

    def remove(self, topic_id: str, p: int) -> None:
        self.mutable()
        held = self.sets.get(topic_id)
        if held is not None:
            held.discard(p)
            if not len(held):
                self.remove_topic(topic_id)

    def add(self, topic_id: str, p: int, new_set_capacity: int | None = None) -> None:
        self.mutable()
        # Kafka calls computeIfAbsent for every partition: its table may grow even when the
        # topic is there already
        self.topics.add_first(topic_id)
        if topic_id not in self.sets:
            self.sets[topic_id] = JavaHashTable(integer_hash, new_set_capacity)
        self.sets[topic_id].add(p)

    def result(self) -> dict[str, RecordPartitions]:
        return {t: RecordPartitions(self.sets[t]) for t in self.topics if len(self.sets[t])}


class _Homogeneous:
    def __init__(self, member_ids: list[str], members: Mapping[str, MemberSpec], topics: Mapping[str, TopicSpec]):
        self.member_ids = member_ids
        self.members = members
        self.topics = topics
        first = members[member_ids[0]]
        # new HashSet<>(TopicIds): sized by the names, filled with the ids that resolve
        self.topic_ids = list(JavaHashTable(uuid_hash, max(len(subscribed_names(first, topics)) * 4 // 3 + 1, 16),
                                            subscription_order(first, topics)))
        self.subscribed = set(self.topic_ids)

    def build(self) -> dict[str, _Target]:
        if not self.topic_ids:
            return {}
        held = {(t, p) for m in self.members.values() for t, ps in m.assigned.items() for p in ps}
        unassigned: list[tuple[str, int]] = []
        total = 0
        for topic_id in self.topic_ids:
            count = self.topics[topic_id].partitions
            unassigned.extend((topic_id, p) for p in range(count) if (topic_id, p) not in held)
            total += count
        n = len(self.member_ids)
        min_quota, extra = divmod(total, n)
        target: dict[str, _Target] = {}
        unfilled: list[tuple[str, int]] = []
        for index, member_id in enumerate(self.member_ids):
            kept = _Target(self.members[member_id])
            quota = min_quota
            takes_extra = extra > 0
            if takes_extra:
                quota += 1
            for topic_id, partitions in kept.original():
                if topic_id not in self.subscribed:
                    kept.remove_topic(topic_id)
                elif len(partitions) <= quota:
                    quota -= len(partitions)
                else:
                    for p in list(partitions):
                        if quota > 0:
                            quota -= 1
                        else:
                            kept.remove(topic_id, p)
                            unassigned.append((topic_id, p))
            # A member below its quota leaves the extra partition to a later member unless
            # only as many members as extra partitions remain.
            if quota > 0 and takes_extra and n - index > extra:
                quota -= 1
                takes_extra = False
            if quota > 0:
                unfilled.append((member_id, quota))
            if takes_extra:
                extra -= 1
            target[member_id] = kept
        next_free = 0
        for member_id, quota in unfilled:
            kept = target[member_id]
            kept.mutable()
            for _ in range(quota):
                if next_free >= len(unassigned):
                    break
                topic_id, p = unassigned[next_free]
                next_free += 1
                kept.add(topic_id, p)
        if next_free < len(unassigned):
            raise AssignorError("partitions were left unassigned")
        return target


class _Balancer:
    """Hands out the least loaded and the most loaded of a topic's subscribers, tracking a
    range at each end of the subscribers sorted by load (Kafka's MemberAssignmentBalancer)."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes  # shared with the builder: assignments update it
        self.order: list[int] = []

    def initialize(self, subscribers: list[int]) -> int:
        sizes = self.sizes
        self.order = sorted(subscribers, key=lambda i: (sizes[i], i))
        order = self.order
        self.least_end = 0
        self.least_count = sizes[order[0]] - 1
        self.next_least = 0
        self.most_start = len(order)
        self.most_end = len(order)
        self.most_count = sizes[order[-1]] + 1
        self.next_most = len(order) - 1
        return sizes[order[-1]] - sizes[order[0]]

    def least_loaded(self) -> int:
        sizes, order = self.sizes, self.order
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(order) and sizes[order[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = order[self.next_least]
        self.next_least += 1
        return member

    def most_loaded(self) -> int:
        sizes, order = self.sizes, self.order
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[order[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[order[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = order[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        order = self.order
        i, last = self.next_most + 1, self.most_end - 1
        order[i], order[last] = order[last], order[i]
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Heterogeneous:
    def __init__(self, member_ids: list[str], members: Mapping[str, MemberSpec], topics: Mapping[str, TopicSpec]):
        self.member_ids = member_ids
        self.members = members
        self.topics = topics
        self.subscribers: dict[str, list[int]] = {}
        for index, member_id in enumerate(member_ids):
            for topic_id in members[member_id].subscribed_topic_ids:
                self.subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(member_ids)
        self.owners = {t: [-1] * topics[t].partitions for t in self.subscribers}
        self.target: dict[str, _Target] = {}

    def _sorted_topics(self, topic_ids) -> list[str]:
        def key(topic_id: str):
            count, subscribers = self.topics[topic_id].partitions, len(self.subscribers[topic_id])
            msb, lsb = uuid_bits(topic_id)
            # partitions per subscriber descending, then subscribers ascending, then the id
            # as Kafka's Uuid.compareTo (signed most, then least significant bits)
            return (-(count / subscribers), subscribers, _signed64(msb), _signed64(lsb))
        return sorted(topic_ids, key=key)

    def build(self) -> dict[str, _Target]:
        if not self.subscribers:
            return {}
        for index, member_id in enumerate(self.member_ids):
            member = self.members[member_id]
            kept = _Target(member)
            for topic_id, partitions in kept.original():
                if topic_id in member.subscribed_topic_ids:
                    self.sizes[index] += len(partitions)
                    for p in partitions:
                        self.owners[topic_id][p] = index
                else:
                    kept.remove_topic(topic_id)
            self.target[member_id] = kept
        free = {t: [p for p, o in enumerate(owners) if o == -1] for t, owners in self.owners.items()}
        balancer = _Balancer(self.sizes)
        for topic_id in self._sorted_topics(t for t in free if free[t]):
            balancer.initialize(self.subscribers[topic_id])
            for p in free[topic_id]:
                self._assign(topic_id, p, balancer.least_loaded())
        movable = [t for t in self.subscribers if len(self.subscribers[t]) >= 2]
        if movable:
            self._balance(self._sorted_topics(movable))
        return self.target

    def _balance(self, topic_ids: list[str]) -> None:
        last_moved = -1
        balancer = _Balancer(self.sizes)
        for _ in range(MAX_BALANCE_ROUNDS):
            for index, topic_id in enumerate(topic_ids):
                if index == last_moved:
                    return  # a whole round over the topics moved nothing
                if self._balance_topic(topic_id, balancer) > 0 or last_moved == -1:
                    last_moved = index

    def _balance_topic(self, topic_id: str, balancer: _Balancer) -> int:
        moved = 0
        owners = self.owners[topic_id]
        if balancer.initialize(self.subscribers[topic_id]) <= 1:
            return moved
        # The topic's partitions grouped by owner; each owner gives up its highest first.
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        while not balancer.balanced():
            while True:
                donor = balancer.most_loaded()
                if donor == -1:
                    break
                if donor not in end or end[donor] - start[donor] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if donor == -1:
                break
            end[donor] -= 1
            p = partitions[end[donor]]
            receiver = balancer.least_loaded()
            if balancer.balanced():
                break
            self._assign(topic_id, p, receiver)
            moved += 1
        return moved

    def _assign(self, topic_id: str, p: int, index: int) -> None:
        owners = self.owners[topic_id]
        previous = owners[p]
        if previous != -1:
            self.target[self.member_ids[previous]].remove(topic_id, p)
            owners[p] = -1
            self.sizes[previous] -= 1
        # a new set is sized for the topic's fair share: ceil(partitions / subscribers)
        share = -(-self.topics[topic_id].partitions // len(self.subscribers[topic_id]))
        self.target[self.member_ids[index]].add(topic_id, p, share * 4 // 3 + 1)
        owners[p] = index
        self.sizes[index] += 1


def _signed64(v: int) -> int:
    return v - (1 << 64) if v & (1 << 63) else v
