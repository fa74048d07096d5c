"""Admin requests about groups: DescribeGroups, ListGroups, DeleteGroups."""
from __future__ import annotations

from kcoord.coordinator.context import CoordinatorContext
from kcoord.coordinator.results import GroupDescription
from kcoord.coordinator.classic.state import GroupState
from wire.errors import ErrorCode

S = GroupState


class GroupAdmin:
    def __init__(self, ctx: CoordinatorContext, consumer=None, streams=None, share=None):
        self.ctx = ctx
        self.consumer = consumer   # ConsumerProtocol
        self.streams = streams     # StreamsProtocol
        self.share = share         # ShareProtocol

    def describe_group(self, group_id: str) -> GroupDescription:
        ctx = self.ctx
        if ctx.availability(group_id):
            return GroupDescription(group_id, ctx.availability(group_id), "", "", "", [])
        group = ctx.groups.get(group_id)
        if group is None and (group_id in ctx.consumer_groups or group_id in ctx.streams_groups
                              or group_id in ctx.share_groups):
            # As Kafka: DescribeGroups is for classic groups; ConsumerGroupDescribe is for these.
            return GroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, "Dead", "", "", [],
                                    f"Group {group_id} is not a classic group.")
        if group is None:
            return GroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, "Dead", "", "", [])
        stable = group.is_in(S.STABLE)
        members = [{"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                    "member_assignment": m.assignment if stable else b""}
                   for m in group.members.values()]
        return GroupDescription(group_id, ErrorCode.NONE, str(group.state), group.protocol_type or "",
                                group.protocol_name if stable else "", members)

    def list_groups(self, states: set[str] | None = None, types: set[str] | None = None) -> list:
        """Classic, consumer, streams and share groups (each has `group_type`), filtered by state and type as Kafka
        filters them: case-insensitively, an empty filter letting everything through."""
        wanted = {s.strip().lower() for s in states} if states else None
        kinds = {t.strip().lower() for t in types} if types else None
        groups: list = []
        if kinds is None or "classic" in kinds:
            groups += [g for g in self.ctx.groups.values() if not g.is_in(S.DEAD)]
        if kinds is None or "consumer" in kinds:
            groups += list(self.ctx.consumer_groups.values())
        if kinds is None or "streams" in kinds:
            groups += list(self.ctx.streams_groups.values())
        if kinds is None or "share" in kinds:
            groups += list(self.ctx.share_groups.values())
        return [g for g in groups if wanted is None or str(g.state).lower() in wanted]

    def delete_group(self, group_id: str) -> ErrorCode:
        """The group and its offsets go: as Kafka, a tombstone for each offset, then the group's."""
        group = self.ctx.groups.get(group_id)
        if group is None and group_id in self.ctx.consumer_groups:
            return self.consumer.delete(group_id)
        if group is None and group_id in self.ctx.streams_groups:
            return self.streams.delete(group_id)
        if group is None and group_id in self.ctx.share_groups:
            return self.share.delete(group_id)
        if group is None or group.is_in(S.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_in(S.EMPTY):
            return ErrorCode.NON_EMPTY_GROUP
        self.ctx.write_offset_tombstones(group_id)
        self.ctx.make_dead(group)
        return ErrorCode.NONE
