"""The streams group protocol (KIP-1071): StreamsGroupHeartbeat, its timers, and what other
requests need of a streams group, as Kafka 4.3.1's GroupMetadataManager does them.

One heartbeat does, in order:
1. find or create the group and the member (epoch 0 joins; -1 leaves);
2. update the member's metadata (a change bumps the group epoch), and set the group's topology
   from the first member that sends one (a member behind it is told STALE_TOPOLOGY);
3. configure the topology against the topics that exist (topology.py) when it is new or the
   metadata of its topics may have changed: missing source or internal topics, incorrectly
   partitioned topics, the internal topics to create; a newly validated topology, other
   topics' metadata or other assignment configs bump the group epoch;
4. compute the target assignment if the group epoch is ahead of it (the sticky task assignor),
   unless the group's initial rebalance delay or the assignment interval holds it back
   (ASSIGNMENT_DELAYED);
5. move the member one step towards its target (reconciliation.py);
and answers with the member's epoch, its tasks when they changed or it joined, the statuses,
and the partitions each member's endpoint serves for interactive queries.

Kafka 4.3.1 refuses static members, warm-up tasks reported by a member, task offsets and
source topic regexes (INVALID_REQUEST): so does kcoord.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Mapping

from kcoord.coordinator.context import CoordinatorContext
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.modern import ModernProtocol, topics_digest
from kcoord.coordinator.records import StreamsGroupRecord
from kcoord.coordinator.results import Refused
from kcoord.coordinator.streams import snapshot as snap
from kcoord.coordinator.streams.assignor import AssignmentMemberSpec, StickyTaskAssignor, TaskAssignorError
from kcoord.coordinator.streams.group import (
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, MemberState, StreamsGroup, StreamsMember, TaskSets,
)
from kcoord.coordinator.streams.reconciliation import FencedInUnknownState, owned_from_request, reconcile
from kcoord.coordinator.streams.topology import StreamsTopology, TopologyRejected, configure, endpoint_to_partitions
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.coordinator")

# Kafka's StreamsGroupHeartbeatResponse.Status codes.
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5


@dataclass
class StreamsHeartbeatRequest:
    """StreamsGroupHeartbeat v0 as the handler decodes it; None marks a field left out."""
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: dict | None = None
    active_tasks: list[dict] | None = None
    standby_tasks: list[dict] | None = None
    warmup_tasks: list[dict] | None = None
    process_id: str | None = None
    user_endpoint: dict | None = None
    client_tags: list[dict] | None = None
    task_offsets: list[dict] | None = None
    task_end_offsets: list[dict] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""


@dataclass
class StreamsHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    status: list[tuple[int, str]] | None = None
    active_tasks: list[dict] | None = None
    standby_tasks: list[dict] | None = None
    warmup_tasks: list[dict] | None = None
    endpoint_information_epoch: int = 0
    partitions_by_user_endpoint: list[dict] | None = None
    topics_to_create: dict = field(default_factory=dict)   # name -> TopicInfo, for the broker to create


def _initial_delay_key(g: str) -> str:
    return f"streams-initial-rebalance-{g}"


def _not_empty(value, what: str) -> None:
    if value is not None and not value.strip():
        raise Refused(ErrorCode.INVALID_REQUEST, f"{what} can't be empty.")


def validate(req: StreamsHeartbeatRequest) -> None:
    """Kafka's checks before a heartbeat reaches the group, in its order and with its messages:
    the features it does not support yet first, then the request's own consistency."""
    invalid = ErrorCode.INVALID_REQUEST
    if req.instance_id is not None:
        raise Refused(invalid, "Static membership is not yet supported.")
    if req.task_offsets is not None:
        raise Refused(invalid, "TaskOffsets are not supported yet.")
    if req.task_end_offsets is not None:
        raise Refused(invalid, "TaskEndOffsets are not supported yet.")
    if req.warmup_tasks:
        raise Refused(invalid, "WarmupTasks are not supported yet.")
    if req.topology is not None and any(s.get("source_topic_regex") for s in req.topology.get("subtopologies", [])):
        raise Refused(invalid, "Regular expressions for source topics are not supported yet.")
    _not_empty(req.member_id, "MemberId")
    _not_empty(req.group_id, "GroupId")
    _not_empty(req.instance_id, "InstanceId")
    _not_empty(req.rack_id, "RackId")
    if req.member_epoch == JOIN_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise Refused(invalid, "RebalanceTimeoutMs must be provided in first request.")
        for tasks, name in ((req.active_tasks, "ActiveTasks"), (req.standby_tasks, "StandbyTasks"),
                            (req.warmup_tasks, "WarmupTasks")):
            if tasks:
                raise Refused(invalid, f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise Refused(invalid, "Topology must be non-null when (re-)joining.")
        for sub in req.topology.get("subtopologies", []):
            for topic in sub.get("state_changelog_topics", []):
                if topic["partitions"] != 0:
                    raise Refused(ErrorCode.STREAMS_INVALID_TOPOLOGY,
                                  f"Changelog topic {topic['name']} must have an undefined partition count, "
                                  f"but it is set to {topic['partitions']}.")
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise Refused(invalid, "InstanceId can't be null.")
    elif req.member_epoch < STATIC_LEAVE_EPOCH:
        raise Refused(invalid, f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")
    given = [t is not None for t in (req.active_tasks, req.standby_tasks, req.warmup_tasks)]
    if any(given) and not all(given):
        raise Refused(invalid, "If one task-type is non-null, all must be non-null.")
    if req.member_epoch != JOIN_EPOCH and req.topology is not None:
        raise Refused(invalid, "Topology can only be provided when (re-)joining.")


def _task_ids(tasks: Mapping[str, object]) -> list[dict]:
    # Kafka lists a member's tasks subtopology by subtopology as its map holds them, each
    # subtopology's partitions sorted; kcoord sorts the subtopologies too (clients read a set).
    return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items()) if ps]


class StreamsProtocol(ModernProtocol):
    kind = "streams"
    session_expired = "the member session expired."

    def __init__(self, ctx: CoordinatorContext):
        super().__init__(ctx)
        self.assignor = StickyTaskAssignor()

    @property
    def groups(self) -> dict[str, StreamsGroup]:
        return self.ctx.streams_groups

    # ================================================================ heartbeat
    leave_epochs = (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    result_type = StreamsHeartbeatResult

    def _validate(self, req: StreamsHeartbeatRequest) -> None:
        validate(req)

    def _group_for(self, req: StreamsHeartbeatRequest) -> StreamsGroup:
        ctx = self.ctx
        group = self.groups.get(req.group_id)
        if group is not None:
            return group
        other = ctx.groups.get(req.group_id) or ctx.consumer_groups.get(req.group_id)
        classic_empty = (req.group_id in ctx.groups and not other.members and req.member_epoch == JOIN_EPOCH)
        if other is not None and not getattr(other, "dead", False) and not classic_empty:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a streams group.")
        if req.member_epoch != JOIN_EPOCH:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {req.group_id} not found.")
        return StreamsGroup(req.group_id)

    def _check_epoch(self, member: StreamsMember, epoch: int, owned: TaskSets | None) -> None:
        if epoch == JOIN_EPOCH:
            return
        if epoch > member.member_epoch:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                          f"The streams group member has a greater member epoch ({epoch}) than the one known by "
                          f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                          "partitions and rejoin.")
        if epoch < member.member_epoch:
            # The previous epoch once more: the answer that moved the member on may have been lost.
            if epoch != member.previous_member_epoch or owned is None or not owned.within(member.assigned()):
                raise Refused(ErrorCode.FENCED_MEMBER_EPOCH,
                              f"The streams group member has a smaller member epoch ({epoch}) than the one known "
                              f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                              "partitions and rejoin.")

    def _restore_point(self, group: StreamsGroup):
        value, configured = snap.snapshot(group), group.configured

        def restore() -> StreamsGroup:
            restored = snap.restore(value)
            restored.configured = configured   # worked out from the topics, never recorded
            return restored
        return restore

    def _heartbeat(self, req: StreamsHeartbeatRequest, group: StreamsGroup) -> StreamsHeartbeatResult:
        ctx = self.ctx
        joining = req.member_epoch == JOIN_EPOCH
        status: list[tuple[int, str]] = []
        if joining and group.size >= ctx.config.streams_max_size and req.member_id not in group.members:
            raise Refused(ErrorCode.GROUP_MAX_SIZE_REACHED, "The streams group has reached its maximum capacity "
                                                            f"of {ctx.config.streams_max_size} members.")
        owned = owned_from_request(req.active_tasks, req.standby_tasks, req.warmup_tasks)
        member = group.members.get(req.member_id)
        if member is None:
            if not joining:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID,
                              f"Member {req.member_id} is not a member of group {group.group_id}.")
            member = StreamsMember(req.member_id)
        else:
            self._check_epoch(member, req.member_epoch, owned)
        is_new = req.member_id not in group.members
        was_empty = group.is_empty()
        created = self.groups.get(group.group_id) is not group
        if created:
            self.groups[group.group_id] = group
            ctx.groups.pop(group.group_id, None)   # an empty classic group gives way, offsets kept
            ctx.emit(K.STREAMS_GROUP_CREATED, group)

        # 1. the member
        tags = (tuple(sorted((t["key"], t["value"]) for t in req.client_tags)) if req.client_tags is not None
                else member.client_tags)
        endpoint = ((req.user_endpoint["host"], req.user_endpoint["port"]) if req.user_endpoint is not None
                    else member.user_endpoint)
        updated = replace(
            member, rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            topology_epoch=req.topology["epoch"] if req.topology is not None else member.topology_epoch,
            client_id=req.client_id, client_host=req.client_host,
            process_id=req.process_id if req.process_id is not None else member.process_id,
            client_tags=tags, user_endpoint=endpoint)
        bump = is_new or updated.metadata() != member.metadata()
        group.put(updated)
        if is_new:
            ctx.emit(K.MEMBER_JOINED, group, member=updated, reason="joined with the streams protocol")

        # 2. the topology
        topology = self._update_topology(group, req)
        if updated.topology_epoch < topology.epoch:
            status.append((STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} is behind the "
                                           f"group's topology epoch {topology.epoch}."))

        # 3. the topology configured against the topics
        reconfigure = group.configured is None or group.configured.epoch != topology.epoch
        # Kafka looks at the topics again when its metadata image says one the topology needs was
        # created, changed or deleted (onMetadataUpdate asks the groups needing it to refresh),
        # so the heartbeat after a source topic appears already sees it. kcoord's topics tell no
        # one: it hashes them on every heartbeat, which moves exactly when Kafka's refresh would.
        topics = self._topics()
        metadata_hash = _metadata_hash(topology, topics)
        if metadata_hash != group.metadata_hash:
            bump = reconfigure = True
        if reconfigure:
            try:
                group.configured = configure(topology, {n: count for n, (_, count) in topics.items()})
            except TopologyRejected as err:
                raise Refused(err.error, err.message) from None
        configured = group.configured
        validated = -1
        if configured.is_ready():
            validated = topology.epoch
            for tasks in (req.active_tasks, req.standby_tasks, req.warmup_tasks):
                self._check_tasks(configured, tasks)
        if validated != group.validated_topology_epoch:
            bump = True
        configs = self._assignment_configs(group.group_id)
        if not bump and configs != group.last_assignment_configs:
            bump = True
        if bump:
            group.group_epoch += 1
            group.metadata_hash, group.validated_topology_epoch = metadata_hash, validated
            group.last_assignment_configs = configs
            ctx.emit(K.GROUP_EPOCH_BUMPED, group, member=updated, reason="member or topology changed",
                     group_epoch=group.group_epoch)
        delay = ctx.group_config(group.group_id).get("streams.initial.rebalance.delay.ms",
                                                     ctx.config.streams_initial_rebalance_delay_ms)
        if was_empty and delay > 0 and not ctx.timer.is_scheduled(_initial_delay_key(group.group_id)):
            group_id = group.group_id
            ctx.schedule(_initial_delay_key(group_id), delay, lambda: self._delayed_target(group_id))

        # 4. the target assignment
        self._maybe_update_target(group, status, updating=req.member_id)

        # 5. reconciliation
        member = group.members[req.member_id]
        if not member.is_reconciled_to(group.assignment_epoch):
            try:
                after = reconcile(member, group.assignment_epoch, group.target.get(member.member_id, TaskSets()),
                                  owned, group.active_owner, group.standby_processes, group.warmup_processes)
            except FencedInUnknownState:
                raise Refused(ErrorCode.FENCED_MEMBER_EPOCH, "The streams group member is in a unknown state. "
                                                             "The member must abandon all its tasks and rejoin.")
            if after != member:
                group.put(after)
                self._reconciled(group, member, after)
            member = after
        self._schedule_session(group, member.member_id)
        if req.shutdown_application and group.shutdown_requested_by is None:
            group.shutdown_requested_by = member.member_id

        result = StreamsHeartbeatResult(ErrorCode.NONE, None, member.member_id, member.member_epoch,
                                        ctx.group_config(group.group_id).get(
                                            "streams.heartbeat.interval.ms", ctx.config.streams_heartbeat_interval_ms))
        if joining or member.assigned() != updated.assigned():
            result.active_tasks = _task_ids(member.active)
            result.standby_tasks = _task_ids(member.standby)
            result.warmup_tasks = _task_ids(member.warmup)
            if member.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != req.endpoint_information_epoch:
            result.partitions_by_user_endpoint = self._endpoints(group)
        if created:
            # Kafka bumps the endpoint epoch on the group object this heartbeat made, and what the
            # heartbeat's records replay into is a group of their own, at endpoint epoch 0: the
            # answer says 0, and so does the group afterwards.
            group.endpoint_information_epoch = 0
        result.endpoint_information_epoch = group.endpoint_information_epoch
        if configured.error is not None:
            status.append((configured.error.status, configured.error.message))
            result.topics_to_create = dict(configured.internal_topics_to_create)
        if group.shutdown_requested_by is not None:
            status.append((SHUTDOWN_APPLICATION, f"Streams group member {group.shutdown_requested_by} encountered "
                                                 "a fatal error and requested a shutdown for the entire application."))
        result.status = status
        self._record(group)
        return result

    def _update_topology(self, group: StreamsGroup, req: StreamsHeartbeatRequest) -> StreamsTopology:
        if req.topology is not None:
            sent = StreamsTopology.from_request(req.topology)
            if group.topology is None:
                group.topology = sent
                return sent
            if group.topology.epoch > sent.epoch:
                return group.topology
            if group.topology != sent:
                raise Refused(ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")
            return group.topology
        if group.topology is None:  # validate() lets no joining member leave it out
            raise Refused(ErrorCode.UNKNOWN_SERVER_ERROR, "The topology is null and the group topology is also null.")
        return group.topology

    @staticmethod
    def _check_tasks(configured, tasks: list[dict] | None) -> None:
        for t in tasks or ():
            sub = (configured.subtopologies or {}).get(t["subtopology_id"])
            if sub is None:
                raise Refused(ErrorCode.INVALID_REQUEST, f"Subtopology {t['subtopology_id']} does not exist in "
                                                         "the topology.")
            for p in t["partitions"]:
                if p < 0 or p >= sub.number_of_tasks:
                    raise Refused(ErrorCode.INVALID_REQUEST, f"Task {p} for subtopology {t['subtopology_id']} "
                                                             f"is invalid. Number of tasks for this subtopology: "
                                                             f"{sub.number_of_tasks}")

    def _assignment_configs(self, group_id: str) -> dict[str, str]:
        return {"num.standby.replicas": str(self.ctx.group_config(group_id).get(
            "streams.num.standby.replicas", self.ctx.config.streams_num_standby_replicas))}

    # ------------------------------------------------------------- assignment
    def _topics(self) -> dict[str, tuple[str, int]]:
        """Every topic that exists: name -> (id text, partition count)."""
        store = getattr(self.ctx.topics, "topics", None)
        if not isinstance(store, dict):
            return {}
        return {name: (str(t.topic_id), len(t.partitions)) for name, t in store.items()}

    def _maybe_update_target(self, group: StreamsGroup, status: list | None, updating: str | None = None) -> None:
        ctx = self.ctx
        if ctx.timer.is_scheduled(_initial_delay_key(group.group_id)):
            if status is not None:
                status.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance "
                                                   "delay."))
            return
        if group.assignment_epoch >= group.group_epoch:
            return
        interval = ctx.group_config(group.group_id).get("streams.assignment.interval.ms",
                                                        ctx.config.streams_assignment_interval_ms)
        if group.assignment_timestamp_ms and interval and ctx.now() < group.assignment_timestamp_ms + interval:
            if status is not None:
                status.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment interval."))
            return
        configured = group.configured
        if configured is not None and configured.is_ready():
            # Kafka's member map holds the group's members, then the one heartbeating; the
            # assignor walks it in Java's HashMap order, this order breaking ties within a bucket.
            ordered = [m for m in group.members.values() if m.member_id != updating]
            ordered += [group.members[updating]] if updating in group.members else []
            specs = {m.member_id: self._member_spec(group, m) for m in ordered}
            try:
                computed = self.assignor.assign(specs, group.last_assignment_configs
                                                or self._assignment_configs(group.group_id), configured.describer())
            except TaskAssignorError as err:
                raise Refused(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for "
                                                              f"epoch {group.group_epoch}: {err}") from None
            target = {mid: TaskSets.of(a.active, a.standby, a.warmup) for mid, a in computed.items()
                      if mid in group.members}
        else:
            target = {mid: TaskSets() for mid in group.members}
        changed = target != group.target
        group.target = target
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = ctx.now()
        if changed:
            ctx.emit(K.TARGET_ASSIGNMENT_CHANGED, group, reason="computed by the sticky task assignor",
                     assignment_epoch=group.assignment_epoch)

    @staticmethod
    def _member_spec(group: StreamsGroup, member: StreamsMember) -> AssignmentMemberSpec:
        target = group.target.get(member.member_id, TaskSets())
        return AssignmentMemberSpec(member.instance_id, member.rack_id, {s: set(ps) for s, ps in target.active.items()},
                                    {s: set(ps) for s, ps in target.standby.items()},
                                    {s: set(ps) for s, ps in target.warmup.items()},
                                    member.process_id, dict(member.client_tags), {}, {})

    def _delayed_target(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_empty() or group.configured is None or group.group_epoch <= group.assignment_epoch:
            return
        self._maybe_update_target(group, None)
        self._record(group)

    def _reconciled(self, group: StreamsGroup, before: StreamsMember, after: StreamsMember) -> None:
        ctx = self.ctx
        if after.member_epoch != before.member_epoch:
            ctx.emit(K.MEMBER_EPOCH_BUMPED, group, member=after, member_epoch=after.member_epoch,
                     previous_member_epoch=before.member_epoch, member_state=str(after.state))
        if after.state is MemberState.UNREVOKED_TASKS:
            pending = after.pending_revocation()
            ctx.emit(K.TASKS_REVOKING, group, member=after, member_epoch=after.member_epoch,
                     revoking={"active": _task_ids(pending.active), "standby": _task_ids(pending.standby),
                               "warmup": _task_ids(pending.warmup)})
            self._schedule_rebalance_timeout(group, after)
        else:
            ctx.timer.cancel(self.rebalance_key(group.group_id, after.member_id))

    def _endpoints(self, group: StreamsGroup) -> list[dict]:
        configured = group.configured
        counts = {n: count for n, (_, count) in self._topics().items()}
        out = []
        for m in group.members.values():
            if m.user_endpoint is None:
                continue
            served = {"active": [], "standby": []}
            if configured is not None and configured.subtopologies is not None:
                served = endpoint_to_partitions(m.active, m.standby, configured, counts)
            out.append({"user_endpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                        "active_partitions": [{"topic": t, "partitions": ps} for t, ps in served["active"]],
                        "standby_partitions": [{"topic": t, "partitions": ps} for t, ps in served["standby"]]})
        return out

    # ------------------------------------------------------------------ timers
    def _default_session_timeout_ms(self) -> int:
        return self.ctx.config.streams_session_timeout_ms

    def _rebalance_expired(self, epoch: int, timeout_ms: int) -> str:
        return f"the member failed to transition out of epoch {epoch} within {timeout_ms}ms."

    def _fence(self, group: StreamsGroup, member: StreamsMember, kind: K, reason: str) -> None:
        self._cancel_timers(group, member.member_id)
        group.remove(member.member_id)
        self.ctx.emit(kind, group, member=member, reason=reason)
        group.group_epoch += 1
        self.ctx.emit(K.GROUP_EPOCH_BUMPED, group, reason=f"member {member.member_id} removed: {reason}",
                      group_epoch=group.group_epoch)
        if group.is_empty():
            group.emptied_at_ms = self.ctx.now()
            group.shutdown_requested_by = None
            self.ctx.emit(K.EMPTY, group)
        self._record(group)

    # =================================================================== leave
    def _leave(self, req: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None:
            other = req.group_id in self.ctx.groups or req.group_id in self.ctx.consumer_groups
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a streams group." if other
                          else f"Streams group {req.group_id} not found.")
        if req.shutdown_application and group.shutdown_requested_by is None:
            group.shutdown_requested_by = req.member_id
        member = group.members.get(req.member_id)
        if member is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                                       f"{group.group_id}.")
        self._fence(group, member, K.MEMBER_LEFT, "the member left the group")
        return StreamsHeartbeatResult(ErrorCode.NONE, None, req.member_id, req.member_epoch, 0, status=[])

    # ================================================================ describe
    def describe(self, group_id: str) -> dict:
        """StreamsGroupDescribe's DescribedGroup for one group id, as data."""
        ctx = self.ctx
        if ctx.availability(group_id):
            return {"error_code": ctx.availability(group_id), "group_id": group_id}
        group = self.groups.get(group_id)
        if group is None:
            known = group_id in ctx.groups or group_id in ctx.consumer_groups or group_id in ctx.share_groups
            return {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "group_id": group_id,
                    "error_message": f"Group {group_id} is not a streams group." if known
                    else f"Group {group_id} not found."}
        members = []
        for m in group.members.values():
            target = group.target.get(m.member_id)
            members.append({
                "member_id": m.member_id, "member_epoch": m.member_epoch, "instance_id": m.instance_id,
                "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
                "topology_epoch": m.topology_epoch, "process_id": m.process_id,
                "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                      "port": m.user_endpoint[1]},
                "client_tags": [{"key": k, "value": v} for k, v in m.client_tags],
                "task_offsets": [], "task_end_offsets": [],
                "assignment": {"active_tasks": _task_ids(m.active), "standby_tasks": _task_ids(m.standby),
                               "warmup_tasks": _task_ids(m.warmup)},
                "target_assignment": {"active_tasks": _task_ids(target.active if target else {}),
                                      "standby_tasks": _task_ids(target.standby if target else {}),
                                      "warmup_tasks": _task_ids(target.warmup if target else {})},
                "is_classic": False})
        return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
                "group_state": str(group.state), "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch, "topology": self._describe_topology(group),
                "members": members}

    @staticmethod
    def _describe_topology(group: StreamsGroup) -> dict:
        topology = group.topology
        configured = group.configured
        ready = configured is not None and configured.is_ready()
        subs = []
        for sid, sub in sorted((topology.subtopologies if topology else {}).items()):
            conf = configured.subtopologies.get(sid) if ready else None

            def topic_info(infos, counts) -> list[dict]:
                return [{"name": t.name, "partitions": counts.get(t.name, t.partitions) if counts else t.partitions,
                         "replication_factor": t.replication_factor,
                         "topic_configs": [{"key": k, "value": v} for k, v in t.configs]} for t in infos]
            subs.append({"subtopology_id": sid, "source_topics": list(sub.source_topics),
                         "repartition_sink_topics": list(sub.repartition_sink_topics),
                         "state_changelog_topics": topic_info(sub.state_changelog_topics,
                                                              conf.state_changelog_topics if conf else None),
                         "repartition_source_topics": topic_info(sub.repartition_source_topics,
                                                                 conf.repartition_source_topics if conf else None)})
        return {"epoch": topology.epoch if topology else -1, "subtopologies": subs}

    # ========================================================== other requests
    def validate_commit(self, group: StreamsGroup, member_id: str, epoch: int,
                        partitions: list[tuple[str, int]], version: int | None) -> tuple[ErrorCode, dict]:
        """OffsetCommit by a streams group's member (version None: TxnOffsetCommit)."""
        if epoch < 0 and group.is_empty():
            return ErrorCode.NONE, {}
        if version is None and epoch == -1 and not member_id:
            return ErrorCode.NONE, {}
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, {}
        if version is not None and version < 9:
            return ErrorCode.UNSUPPORTED_VERSION, {}
        if epoch == member.member_epoch:
            return ErrorCode.NONE, {}
        if epoch > member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH, {}
        # An older epoch: each partition must belong to an active task the member held since then.
        configured = group.configured
        errors = {}
        for topic, partition in partitions:
            given = None
            if configured is not None and configured.subtopologies:
                for sid, sub in configured.subtopologies.items():
                    if topic in sub.source_topics or topic in sub.repartition_source_topics:
                        given = member.active.get(sid, {}).get(partition, given)
            if given is None or epoch < given:
                errors[(topic, partition)] = ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE, errors

    def validate_fetch(self, group: StreamsGroup, member_id: str | None, epoch: int) -> ErrorCode:
        if member_id is None and epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE if epoch == member.member_epoch else ErrorCode.STALE_MEMBER_EPOCH

    # ============================================================ durable state
    def _snapshot(self, group: StreamsGroup) -> dict:
        return snap.snapshot(group)

    def _group_record(self, group_id: str, value: dict | None, group: StreamsGroup | None = None):
        return StreamsGroupRecord(group_id, value)

    def load(self, value: dict) -> StreamsGroup:
        """A group read back after a restart: members keep epochs and assignments and get a fresh
        session; the topology is configured again at the next heartbeat."""
        group = snap.restore(value)
        self.groups[group.group_id] = group
        self.ctx.changed(group)
        for member in group.members.values():
            self._schedule_session(group, member.member_id)
            if member.state is MemberState.UNREVOKED_TASKS:
                self._schedule_rebalance_timeout(group, member)
        return group


def _metadata_hash(topology: StreamsTopology, topics: Mapping[str, tuple[str, int]]) -> int:
    return topics_digest(topology.required_topics(), topics)
