"""A consumer group as JSON-able data and back: kcoord's own durable record of one
(ConsumerGroupRecord's value), and the restore point a failed heartbeat goes back to."""
from __future__ import annotations

import base64

from kcoord.coordinator.consumer.group import ClassicMemberMetadata, ConsumerGroup, ConsumerMember, MemberState
from kcoord.coordinator.javaorder import RecordPartitions, record_list


def _parts(p) -> dict:
    return {t: {str(k): v for k, v in ps.items()} for t, ps in p.items()}


def _unparts(p) -> dict:
    return {t: {int(k): v for k, v in ps.items()} for t, ps in p.items()}


def _classic(value: dict | None) -> ClassicMemberMetadata | None:
    if value is None:
        return None
    return ClassicMemberMetadata(value["session_timeout_ms"],
                                 tuple((n, base64.b64decode(meta)) for n, meta in value["protocols"]))


def snapshot(group: ConsumerGroup) -> dict:
    """A consumer group as JSON-able data (ConsumerGroupRecord's value)."""
    return {
        "group_id": group.group_id, "created_ms": group.created_ms, "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch, "assignor_name": group.assignor_name,
        "state_ms": group.state_ms, "emptied_at_ms": group.emptied_at_ms,
        "assignment_timestamp_ms": group.assignment_timestamp_ms,
        "resolved_regexes": {r: list(ns) for r, ns in group.resolved_regexes.items()},
        "regex_refresh_ms": group.regex_refresh_ms, "regex_topics": sorted(group.regex_topics),
        "subscribed_topics": {n: list(v) for n, v in group.subscribed_topics.items()},
        "target": {m: {t: record_list(ps) for t, ps in parts.items()} for m, parts in group.target.items()},
        "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                     "client_id": m.client_id, "client_host": m.client_host,
                     "rebalance_timeout_ms": m.rebalance_timeout_ms,
                     "subscribed_topic_names": list(m.subscribed_topic_names),
                     "subscribed_topic_regex": m.subscribed_topic_regex, "server_assignor": m.server_assignor,
                     "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
                     "state": str(m.state), "assigned": _parts(m.assigned),
                     "pending_revocation": _parts(m.pending_revocation),
                     "classic": None if m.classic is None else {
                         "session_timeout_ms": m.classic.session_timeout_ms,
                         "protocols": [[n, base64.b64encode(meta).decode("ascii")] for n, meta in m.classic.protocols]}}
                    for m in group.members.values()],
    }


def restore(value: dict) -> ConsumerGroup:
    group = ConsumerGroup(value["group_id"], value["created_ms"], group_epoch=value["group_epoch"],
                          assignment_epoch=value["assignment_epoch"], assignor_name=value.get("assignor_name", ""),
                          state_ms=value.get("state_ms"), emptied_at_ms=value.get("emptied_at_ms"))
    group.subscribed_topics = {n: (v[0], v[1]) for n, v in value.get("subscribed_topics", {}).items()}
    group.assignment_timestamp_ms = value.get("assignment_timestamp_ms", 0)
    group.resolved_regexes = {r: tuple(ns) for r, ns in value.get("resolved_regexes", {}).items()}
    group.regex_refresh_ms = value.get("regex_refresh_ms", 0)
    group.regex_topics = frozenset(value.get("regex_topics", ()))
    group.target = {m: {t: RecordPartitions(ps) for t, ps in parts.items()} for m, parts in value["target"].items()}
    for m in value["members"]:
        try:
            state = MemberState(m["state"])
        except ValueError:
            state = MemberState.UNKNOWN
        group.put(ConsumerMember(
            m["member_id"], m["instance_id"], m["rack_id"], m["client_id"], m["client_host"],
            m["rebalance_timeout_ms"], tuple(m["subscribed_topic_names"]), m["subscribed_topic_regex"],
            m["server_assignor"], m["member_epoch"], m["previous_member_epoch"], state,
            _unparts(m["assigned"]), _unparts(m["pending_revocation"]), _classic(m.get("classic"))))
    return group
