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

from dataclasses import dataclass, field
from typing import Mapping, Protocol

# member id -> topic id -> partitions
Assignment = dict[str, dict[str, frozenset[int]]]


@dataclass(frozen=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: frozenset[str]  # resolved from names and the regex, only topics that exist
    assigned: Mapping[str, frozenset[int]] = field(default_factory=dict)  # its current target: topic id -> partitions


@dataclass(frozen=True)
class TopicSpec:
    topic_id: str
    name: str
    partitions: int
    racks: Mapping[int, frozenset[str]] = field(default_factory=dict)  # partition -> replica racks; empty: none known


class ServerAssignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSpec], topics: Mapping[str, TopicSpec]) -> Assignment:
        """The new target assignment of every member (a member with nothing gets an empty dict)."""


def assignors() -> dict[str, ServerAssignor]:
    """The assignors kcoord serves, by the name a member asks for."""
    raise NotImplementedError("the uniform and range assignors are being written")
