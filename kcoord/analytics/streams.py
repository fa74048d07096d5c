"""Streams groups (KIP-1071) in the report: their records in `__consumer_offsets` as event rows,
and one row per streams group, from those rows and from the journal's events.

From `__consumer_offsets` (Kafka's record types, kcoord.log.consumer_offsets):

    kind                        from                                   filled
    streams_group_epoch         StreamsGroupMetadata (17)              generation: the group epoch
    streams_assignment_epoch    StreamsGroupTargetAssignmentMetadata   generation: the assignment epoch
                                (20)
    streams_member_assignment   StreamsGroupCurrentMemberAssignment    member_id, generation: the member epoch,
                                (22)                                   state_after: the member's state,
                                                                       tasks: what it owns and revokes
    streams_member_removed      StreamsGroupMemberMetadata (19)        member_id
                                tombstone
    group_deleted               StreamsGroupMetadata tombstone

Member metadata (19), target assignments (21) and topologies (23) make no rows. The journal's
own kinds (streams_group_created, group_epoch_bumped, target_assignment_changed,
member_epoch_bumped, tasks_revoking: tasks are its details.revoking) pass through as events.
A streams group counts no rebalances: its epochs move instead.
"""
from __future__ import annotations

import struct

SOURCE = "offsets_topic"
# What marks a group as a streams group among the events.
JOURNAL_KINDS = {"streams_group_created", "tasks_revoking"}
OFFSETS_KINDS = {"streams_group_epoch", "streams_assignment_epoch", "streams_member_assignment",
                 "streams_member_removed"}
STREAMS_GROUP_FIELDS = ["group_id", "first_ms", "last_ms", "group_epoch", "assignment_epoch", "members",
                        "members_seen", "revocations", "sources"]
_MEMBER_STATES = {1: "stable", 2: "unrevoked_tasks", 3: "unreleased_tasks"}


def is_streams_record(key: bytes) -> bool:
    from kcoord.log import consumer_offsets as co

    return len(key) >= 2 and struct.unpack_from(">h", key)[0] in co.STREAMS_RECORD_TYPES


def task_text(kinds: dict[str, list]) -> str:
    """Tasks by kind ('active', 'standby', 'warmup'), each a list of task ids
    ({'subtopology_id', 'partitions'}) or a dict subtopology -> partitions, as
    'active 0_0,0_1; standby -' (kinds with no tasks left out, 'none' if all are empty)."""
    parts = []
    for kind, tasks in kinds.items():
        pairs = (tasks.items() if isinstance(tasks, dict)
                 else ((t.get("subtopology_id"), t.get("partitions") or []) for t in tasks or []))
        names = [f"{s}_{p}" for s, ps in sorted(pairs, key=lambda sp: str(sp[0])) for p in sorted(ps)]
        if names:
            parts.append(f"{kind} {','.join(names)}")
    return "; ".join(parts) or "none"


def rows_from_record(key: bytes, value: bytes | None, ts_ms: int, broker: str):
    """Event rows of one streams group record; raises OffsetsRecordError when it does not decode."""
    from kcoord.analytics.events import event
    from kcoord.log import consumer_offsets as co
    from kcoord.log import offsets_loader as ol

    kind, group, member = co.group_key(key)
    if kind == co.STREAMS_GROUP_METADATA:
        if value is None:
            yield event(ts_ms, SOURCE, broker, group, "group_deleted", state_after="Dead")
        else:
            yield event(ts_ms, SOURCE, broker, group, "streams_group_epoch",
                        generation=ol.streams_metadata_value(value)["epoch"])
    elif kind == co.STREAMS_TARGET_METADATA and value is not None:
        epoch, stamp = ol.streams_target_metadata_value(value)
        yield event(stamp or ts_ms, SOURCE, broker, group, "streams_assignment_epoch", generation=epoch)
    elif kind == co.STREAMS_CURRENT_ASSIGNMENT and value is not None:
        a = ol.streams_current_assignment_value(value)
        owned = task_text({k: a[k] for k in ("active", "standby", "warmup")})
        revoking = task_text({k: a[f"{k}_pending_revocation"] for k in ("active", "standby", "warmup")})
        yield event(ts_ms, SOURCE, broker, group, "streams_member_assignment", member_id=member,
                    generation=a["member_epoch"], state_after=_MEMBER_STATES.get(a["state"], "unknown"),
                    tasks=owned if revoking == "none" else f"{owned}; revoking {revoking}")
    elif kind == co.STREAMS_MEMBER_METADATA and value is None:
        yield event(ts_ms, SOURCE, broker, group, "streams_member_removed", member_id=member)


def streams_group_row(events) -> dict | None:
    """The streams group row of one group's events (journal and offsets topic alike); None
    when they are not a streams group's. Epochs are the highest seen; members the count after
    its last event: the journal's `members` field, else the members whose assignment the topic
    holds and whose metadata it has not removed."""
    events = sorted(events, key=lambda e: e["time_ms"])
    kinds = {e["kind"] for e in events}
    if not kinds & (JOURNAL_KINDS | OFFSETS_KINDS):
        return None

    def highest(*names):
        found = [e["generation"] for e in events if e["kind"] in names and e["generation"] is not None]
        return max(found) if found else None

    journal = [e for e in events if e["source"] == "journal" and e["members"] is not None]
    stored: set[str] = set()
    for e in events:
        if e["kind"] == "streams_member_assignment":
            stored.add(e["member_id"])
        elif e["kind"] in ("streams_member_removed", "group_deleted") and e["source"] == SOURCE:
            stored = stored - {e["member_id"]} if e["member_id"] else set()
    seen = {e["member_id"] for e in events if e["member_id"] and e["kind"] != "streams_member_removed"}
    return {"group_id": events[0]["group_id"], "first_ms": events[0]["time_ms"], "last_ms": events[-1]["time_ms"],
            "group_epoch": highest("group_epoch_bumped", "streams_group_epoch"),
            "assignment_epoch": highest("target_assignment_changed", "streams_assignment_epoch"),
            "members": journal[-1]["members"] if journal else len(stored), "members_seen": len(seen),
            "revocations": sum(e["kind"] == "tasks_revoking" for e in events)
            + sum(e["kind"] == "streams_member_assignment" and "revoking" in (e["tasks"] or "") for e in events),
            "sources": ",".join(sorted({e["source"] for e in events}))}
