"""The `range` server assignor, as Kafka 4.3.1's RangeAssignor computes it.

Per topic, its subscribers in a fixed order take consecutive ranges of partitions: with
P partitions and S subscribers each takes P // S, and the first P % S one more. The
order: members with an instance id first, by instance id, then the others by member id
(java.lang.String.compareTo). The ranges do not depend on the current assignment (no
stickiness beyond that order, which a static member keeps across restarts); when every
member subscribes to the same topics and they have the same partition count, member i
gets the same partition numbers of every topic (co-partitioning).
"""
from __future__ import annotations

from typing import Mapping

from kcoord.coordinator.assignors.spec import Assignment, AssignorError, MemberSpec, TopicSpec, is_homogeneous
from kcoord.coordinator.assignors.uniform import subscribed_names, subscription_order
from kcoord.coordinator.javaorder import (JavaHashTable, RecordPartitions, hashmap_order, string_compare_key,
                                          string_hash, uuid_hash)


def member_order(members: Mapping[str, MemberSpec]) -> list[str]:
    def key(member_id: str):
        instance = members[member_id].instance_id
        if instance is not None:
            return (0, string_compare_key(instance), b"")
        return (1, b"", string_compare_key(member_id))
    # Kafka sorts the group's member ids, in their HashMap order, with a stable sort: two
    # members that compare equal (the same instance id) stay in that order.
    return sorted(hashmap_order(list(members), string_hash), key=key)


class RangeAssignor:
    name = "range"

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[str, TopicSpec],
               subscription_type: str | None = None) -> Assignment:
        result: Assignment = {member_id: {} for member_id in members}
        if not members:
            return result
        order = member_order(members)
        homogeneous = is_homogeneous(members, subscription_type)
        # Each member's topics, in the order Kafka walks its subscription (which is also
        # the order of the member's record); homogeneous: the first member's for everyone.
        walks = {m: subscription_order(members[order[0]] if homogeneous else members[m], topics) for m in order}
        subscribers: dict[str, list[str]] = {}
        for member_id in order:
            for topic_id in (members[order[0]] if homogeneous else members[member_id]).subscribed_topic_ids:
                if topic_id not in topics:
                    raise AssignorError(f"member {member_id} is subscribed to a topic that does not exist")
                subscribers.setdefault(topic_id, []).append(member_id)
        ranges: dict[tuple[str, str], range] = {}
        for topic_id, owners in subscribers.items():
            count = topics[topic_id].partitions
            quota, extra = divmod(count, len(owners))
            start = 0
            for member_id in owners:
                end = min(start + quota + (1 if extra > 0 else 0), count)
                if extra > 0:
                    extra -= 1
                ranges[(member_id, topic_id)] = range(start, end)
                start = end
        for member_id in order:
            walk = walks[member_id]
            # sized by the topics found (homogeneous) or by the subscribed names (heterogeneous)
            size = len(walk) if homogeneous else len(subscribed_names(members[member_id], topics))
            assigned = JavaHashTable(uuid_hash, size * 4 // 3 + 1)
            for topic_id in walk:
                if ranges[(member_id, topic_id)]:
                    assigned.add(topic_id)
            result[member_id] = {t: RecordPartitions(ranges[(member_id, t)]) for t in assigned}
        return result

