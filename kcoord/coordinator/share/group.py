"""Share groups (KIP-932): the group and its members, as Kafka 4.3.1's ShareGroup and
ShareGroupMember hold them.

A share group's members share partitions: the coordinator assigns each member partitions
(several members may get the same one, assignors/simple.py) and the brokers hand out the
records of a partition one batch per member at a time (kcoord.share). Three epochs move as in
a consumer group: the group epoch (a member joins, leaves or changes its subscription; the
subscribed topics change; partitions become assignable), the assignment epoch (the group epoch
the target assignment was computed for) and each member's epoch. There is no revocation: a
member moves to its target at its next heartbeat. So the state is only Empty or Stable (and
Dead once deleted).

A partition is assignable once its share-partition state is initialized (Kafka: the share
coordinator has it); the group keeps those partitions per topic (`initialized`), which Kafka's
ShareGroupStatePartitionMetadata record holds.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kcoord.coordinator.modern import ModernGroup

JOIN_EPOCH = 0
LEAVE_EPOCH = -1


class ShareGroupState(str, enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    # As Kafka's HashSet of the names walks them (its record lists them so).
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    # topic id -> partitions
    assigned: dict[str, frozenset] = field(default_factory=dict)

    instance_id = None   # share groups have no static members


@dataclass(eq=False)
class ShareGroup(ModernGroup):
    group_id: str
    # As Kafka's ModernGroup: a new group is at epoch 1, so its first member joins at 2.
    group_epoch: int = 1
    metadata_hash: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    # member id -> topic id -> partitions, as the assignor gave them (RecordPartitions keep its order)
    target: dict[str, dict[str, frozenset]] = field(default_factory=dict)
    assignment_epoch: int = 0
    assignment_timestamp_ms: int = 0
    # topic id -> (name, partitions whose share state is initialized)
    initialized: dict[str, tuple[str, frozenset]] = field(default_factory=dict)
    removed_since_record: list[str] = field(default_factory=list)
    dead: bool = False
    group_type = "share"     # ListGroups v5's type
    protocol_type = "share"  # what DescribeGroups and ListGroups tell of it

    @property
    def protocol_name(self) -> str:   # events name the assignor here
        return "simple"

    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.EMPTY if not self.members else ShareGroupState.STABLE

    def subscribed_topic_names(self) -> set[str]:
        return {n for m in self.members.values() for n in m.subscribed_topic_names}

    def source_topics(self) -> set[str]:
        return set()   # a share group commits no offsets: nothing for retention to look at
