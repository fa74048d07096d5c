"""A streams group as plain data shaped like its records in __consumer_offsets (Kafka's
StreamsGroupMetadata, Topology, MemberMetadata, TargetAssignment and CurrentMemberAssignment
values), and back: what StreamsGroupRecord carries, what kcoord.log.consumer_offsets writes in
Kafka's bytes and the loader reads back, and the restore point a failed heartbeat returns to."""
from __future__ import annotations

from kcoord.coordinator.streams.group import MemberState, StreamsGroup, StreamsMember, TaskSets
from kcoord.coordinator.streams.topology import StreamsTopology


def _lists(tasks) -> dict[str, list[int]]:
    return {s: sorted(ps) for s, ps in tasks.items() if ps}


def _sets(tasks) -> dict[str, frozenset]:
    return {s: frozenset(ps) for s, ps in (tasks or {}).items() if ps}


def snapshot(group: StreamsGroup) -> dict:
    return {
        "group_id": group.group_id,
        "metadata": {"epoch": group.group_epoch, "metadata_hash": group.metadata_hash,
                     "validated_topology_epoch": group.validated_topology_epoch,
                     "last_assignment_configs": dict(group.last_assignment_configs)},
        "topology": group.topology.as_record() if group.topology is not None else None,
        "members": {m.member_id: {
            "metadata": {"instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
                         "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                         "topology_epoch": m.topology_epoch, "process_id": m.process_id,
                         "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                               "port": m.user_endpoint[1]},
                         "client_tags": dict(m.client_tags)},
            "assignment": {"member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
                           "state": int(m.state),
                           "active": {s: dict(ps) for s, ps in m.active.items() if ps},
                           "standby": _lists(m.standby), "warmup": _lists(m.warmup),
                           "active_pending_revocation": _lists(m.pending_active),
                           "standby_pending_revocation": _lists(m.pending_standby),
                           "warmup_pending_revocation": _lists(m.pending_warmup)}}
            for m in group.members.values()},
        "target": {"assignment_epoch": group.assignment_epoch,
                   "assignment_timestamp_ms": group.assignment_timestamp_ms,
                   "members": {mid: {"active": _lists(t.active), "standby": _lists(t.standby),
                                     "warmup": _lists(t.warmup)} for mid, t in group.target.items()}},
    }


def restore(value: dict) -> StreamsGroup:
    meta = value["metadata"]
    target = value.get("target") or {}
    group = StreamsGroup(value["group_id"], group_epoch=meta["epoch"], metadata_hash=meta.get("metadata_hash", 0),
                         validated_topology_epoch=meta.get("validated_topology_epoch", -1),
                         last_assignment_configs=dict(meta.get("last_assignment_configs") or {}),
                         assignment_epoch=target.get("assignment_epoch", 0),
                         assignment_timestamp_ms=target.get("assignment_timestamp_ms", 0))
    if value.get("topology") is not None:
        group.topology = StreamsTopology.from_record(value["topology"])
    for member_id, m in value.get("members", {}).items():
        md, a = m["metadata"], m["assignment"]
        try:
            state = MemberState(a["state"])
        except ValueError:
            state = MemberState.UNKNOWN
        endpoint = md.get("user_endpoint")
        group.put(StreamsMember(
            member_id, md.get("instance_id"), md.get("rack_id"), md.get("client_id", ""), md.get("client_host", ""),
            md.get("rebalance_timeout_ms", -1), md.get("topology_epoch", -1), md.get("process_id", ""),
            None if endpoint is None else (endpoint["host"], endpoint["port"]),
            tuple(sorted((md.get("client_tags") or {}).items())),
            a["member_epoch"], a["previous_member_epoch"], state,
            {s: {int(p): e for p, e in ps.items()} for s, ps in a.get("active", {}).items() if ps},
            _sets(a.get("standby")), _sets(a.get("warmup")),
            {s: {int(p): 0 for p in ps} for s, ps in (a.get("active_pending_revocation") or {}).items() if ps},
            _sets(a.get("standby_pending_revocation")), _sets(a.get("warmup_pending_revocation"))))
    group.target = {mid: TaskSets.of(t.get("active", {}), t.get("standby", {}), t.get("warmup", {}))
                    for mid, t in target.get("members", {}).items()}
    return group
