"""`__consumer_offsets` as a report input: the group coordinator's own records, in Kafka's
schemas (kcoord.log.consumer_offsets decodes them), as rows of the common event schema.

The topic holds a group's state, not its history of transitions: a GroupMetadataValue each
time a generation is stored (when the leader's assignment makes the group Stable, and when
the group becomes Empty) and an OffsetCommitValue per committed partition. So from it:

    kind               one per                        filled
    generation         GroupMetadataValue             generation, members (count), protocol,
                                                      state_after (Stable / Empty), member_id
                                                      and client_id of the leader
    generation_member  member of a GroupMetadataValue generation, member_id, instance_id,
                                                      client_id, client_host
    offset_commits     OffsetCommitValue              commits = 1 (time: its commitTimestamp)
    group_deleted      GroupMetadataKey tombstone
    offset_deleted     OffsetCommitKey tombstone      reason = "topic:partition"

time_ms is the value's own timestamp (currentStateTimestamp, commitTimestamp) when it has
one, the record's timestamp otherwise (tombstones, GroupMetadataValue before v2); broker is
the record's partition, "__consumer_offsets-N" (the coordinator that wrote it). Streams group
records (types 17-23) make rows of their own (kcoord.analytics.streams). Records of the other
kinds of group (Kafka 4's consumer and share group records) and records that do not decode
are counted as skips, never fatal.

`generations_for_group` turns one group's rows into rebalance rows: one per stored
generation that differs from the one before it. What the topic does not hold stays null:
when the rebalance began (start_ms, duration_ms), why (cause, reason, trigger_*); a compacted
topic also loses all but a group's latest generation.
"""
from __future__ import annotations

from kcoord.analytics import streams
from kcoord.analytics.events import event

SOURCE = "offsets_topic"
SKIP_OTHER_RECORD = "not_classic_group_record"  # consumer/share group records (key types 3-16, 24+)
SKIP_UNDECODABLE = "undecodable_record"


def rows_from_records(records, skips: dict | None = None):
    """Event dicts from (key bytes, value bytes or None, partition, topic, timestamp ms) tuples."""
    from kcoord.log import consumer_offsets as co

    for key, value, partition, topic, ts_ms in records:
        broker = f"{topic}-{partition}"
        if key is not None and streams.is_streams_record(bytes(key)):
            try:
                yield from list(streams.rows_from_record(bytes(key), None if value is None else bytes(value), ts_ms,
                                                         broker))
            except (co.OffsetsRecordError, UnicodeDecodeError):
                if skips is not None:
                    skips[SKIP_UNDECODABLE] = skips.get(SKIP_UNDECODABLE, 0) + 1
            continue
        try:
            k = co.decode_key(bytes(key) if key is not None else b"")
        except co.OffsetsRecordError as err:
            reason = SKIP_OTHER_RECORD if "not a classic group record" in str(err) else SKIP_UNDECODABLE
            if skips is not None:
                skips[reason] = skips.get(reason, 0) + 1
            continue
        try:
            v = co.decode_value(k, bytes(value) if value is not None else None)
        except (co.OffsetsRecordError, UnicodeDecodeError):
            if skips is not None:
                skips[SKIP_UNDECODABLE] = skips.get(SKIP_UNDECODABLE, 0) + 1
            continue
        data = k["data"]
        group = data["group"]
        if k["type"] == co.GROUP_METADATA_KEY:
            if v is None:
                yield event(ts_ms, SOURCE, broker, group, "group_deleted", state_after="Dead")
                continue
            d = v["data"]
            stamp = d.get("currentStateTimestamp", -1)
            time_ms = stamp if stamp is not None and stamp >= 0 else ts_ms
            members = d["members"]
            leader = next((m for m in members if m["memberId"] == d["leader"]), None)
            yield event(time_ms, SOURCE, broker, group, "generation", generation=d["generation"],
                        state_after="Stable" if members else "Empty", member_id=d["leader"],
                        client_id=leader["clientId"] if leader else None, protocol=d["protocol"],
                        members=len(members))
            for m in members:
                yield event(time_ms, SOURCE, broker, group, "generation_member", generation=d["generation"],
                            member_id=m["memberId"], instance_id=m.get("groupInstanceId"),
                            client_id=m["clientId"], client_host=m["clientHost"])
        else:
            where = f"{data['topic']}:{data['partition']}"
            if v is None:
                yield event(ts_ms, SOURCE, broker, group, "offset_deleted", reason=where)
                continue
            stamp = v["data"].get("commitTimestamp", -1)
            yield event(stamp if stamp >= 0 else ts_ms, SOURCE, broker, group, "offset_commits", commits=1)


_ORDER = {"group_deleted": 0, "generation": 1, "generation_member": 2}


def generations_for_group(events, seq_start: int = 0) -> list[dict]:
    """Rebalance rows (kcoord.analytics.rebalances.REBALANCE_FIELDS) from one group's
    offsets-topic rows: a row per generation stored, from the generation stored before it
    (a deletion starts the group over). A generation stored again (a static member's new
    member id) is no rebalance. generation_to - generation_from - 1 generations began and never
    reached a stored state: restarts. joined/left: member ids new to / gone from the
    generation; left counts a leave, an expiry and a fencing alike (the topic does not say)."""
    from kcoord.analytics.rebalances import REBALANCE_FIELDS

    events = sorted(events, key=lambda e: (e["time_ms"], _ORDER.get(e["kind"], 3)))
    epochs: list[dict[int, dict]] = [{}]
    for e in events:
        if e["kind"] == "group_deleted":
            if epochs[-1]:
                epochs.append({})
        elif e["kind"] == "generation":
            g = epochs[-1].setdefault(e["generation"], {"time_ms": e["time_ms"], "broker": e["broker"], "ids": set()})
            g["members"], g["state"] = e["members"], e["state_after"]
        elif e["kind"] == "generation_member":
            g = epochs[-1].setdefault(e["generation"], {"time_ms": e["time_ms"], "broker": e["broker"], "ids": set(),
                                                        "members": None, "state": None})
            g["ids"].add(e["member_id"])
    out = []
    for epoch in epochs:
        prev_gen, prev = None, None
        for gen in sorted(epoch):
            g = epoch[gen]
            if gen == 0:  # the group's creation (Kafka 4 stores an empty generation 0 first): no rebalance
                prev_gen, prev = 0, g
                continue
            row = dict.fromkeys(REBALANCE_FIELDS)
            row.update(group_id=events[0]["group_id"], seq=seq_start + len(out) + 1, broker=g["broker"],
                       end_ms=g["time_ms"], outcome="empty" if g["state"] == "Empty" else "stable",
                       generation_to=gen, members_after=g["members"])
            if prev is None and gen == 1:  # the group's first generation: it began with nobody
                prev_gen, prev = 0, {"ids": set(), "members": 0}
            if prev is not None:
                joined, left = g["ids"] - prev["ids"], prev["ids"] - g["ids"]
                row.update(generation_from=prev_gen, members_before=prev["members"],
                           restarts=max(gen - prev_gen - 1, 0), joined=len(joined), left=len(left),
                           members_affected=len(joined | left))
            out.append(row)
            prev_gen, prev = gen, g
    return out
