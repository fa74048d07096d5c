import logging

import pytest

from kcoord.coordinator import KafkaWordedLog, offsets_partition_for
from kcoord.coordinator.config import java_string_hash
from kcoord.coordinator.classic.state import GroupState as S
from wire.errors import ErrorCode as E

from .harness import Harness

DAY = 24 * 3600 * 1000


def test_simple_group_commit_and_fetch():
    h = Harness()
    r = h.commit(offsets=(("t", 0, 5), ("t", 1, 7)))
    assert r.error == E.NONE and [e for _, _, e in r.partitions] == [E.NONE, E.NONE]
    assert h.group().state is S.EMPTY and h.group().protocol_type is None
    err, fetched = h.c.fetch_offsets("g", [("t", 0), ("t", 2), ("other", 0)])
    assert err == E.NONE and [(f.partition, f.offset) for f in fetched] == [(0, 5), (2, -1), (0, -1)]
    err, all_ = h.c.fetch_offsets("g", None)
    assert [(f.topic, f.partition, f.offset) for f in all_] == [("t", 0, 5), ("t", 1, 7)]
    err, none = h.c.fetch_offsets("unknown-group", [("t", 0)])
    assert err == E.NONE and none[0].offset == -1


class _FailingSink:
    """A record sink whose every write fails, the way `error` says."""

    def __init__(self, error: Exception):
        self.error, self.writes = error, []

    def append(self, records):
        self.writes.append(list(records))
        raise self.error


FAILURES = [OSError(28, "No space left on device"), ValueError("a bug while encoding a record")]


@pytest.mark.parametrize("failure", FAILURES, ids=["disk-full", "non-io-bug"])
def test_a_commit_whose_records_cannot_be_written_is_refused_and_leaves_no_trace(failure):
    h = Harness()
    h.commit(offsets=(("t", 0, 5),))
    published = len(h.events)
    h.c.record_sink = sink = _FailingSink(failure)
    r = h.commit(offsets=(("t", 0, 6), ("t", 1, 1), ("t", 99, 1)))
    assert r.error == E.COORDINATOR_NOT_AVAILABLE
    # The refused partition keeps its own error; the others were not saved.
    assert [e for _, _, e in r.partitions] == [E.COORDINATOR_NOT_AVAILABLE] * 2 + [E.UNKNOWN_TOPIC_OR_PARTITION]
    assert [len(w) for w in sink.writes] == [2]
    assert len(h.events) == published  # nothing was published
    assert h.commit(offsets=(("t", 0, 7),)).error == E.COORDINATOR_NOT_AVAILABLE  # and nothing is taken after
    h.c.record_sink = None
    h.c.set_available()
    err, fetched = h.c.fetch_offsets("g", None)
    assert err == E.NONE and [(f.partition, f.offset) for f in fetched] == [(0, 5)]


@pytest.mark.parametrize("failure", FAILURES, ids=["disk-full", "non-io-bug"])
def test_a_rebalance_whose_records_cannot_be_written_answers_no_member_with_success(failure):
    h = Harness(initial_rebalance_delay_ms=3000)
    boxes = [h.join_new() for _ in range(2)]
    while not all(b.done for b in boxes):
        h.advance(1000)
    assert all(b.error == E.NONE for b in boxes)
    gen, leader = boxes[0].result.generation_id, boxes[0].result.leader_id
    follower = next(b.result.member_id for b in boxes if b.result.member_id != leader)
    parked = h.sync(follower, gen)
    assert not parked.done
    h.c.record_sink = _FailingSink(failure)
    leader_sync = h.sync(leader, gen, assignments={leader: b"a", follower: b"b"})  # Stable: the group's record
    assert (leader_sync.error, parked.error) == (E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE)
    assert parked.result.assignment == b"" and not any(e.kind == "stable" for e in h.events)
    assert h.heartbeat(follower, gen) == E.COORDINATOR_NOT_AVAILABLE
    assert h.c.describe_group("g").error == E.COORDINATOR_NOT_AVAILABLE


def test_commit_validation():
    h = Harness(initial_rebalance_delay_ms=3000)
    assert h.commit(group="", ).error == E.INVALID_GROUP_ID
    assert h.commit(group="missing", member_id="m", generation=1, version=9).error == E.GROUP_ID_NOT_FOUND
    assert h.commit(group="missing", member_id="m", generation=1, version=8).error == E.ILLEGAL_GENERATION
    leader, follower = h.stable_group(2)
    gen = h.group().generation
    assert h.commit(member_id=leader, generation=gen).error == E.NONE
    assert h.commit(member_id=leader, generation=gen + 1).error == E.ILLEGAL_GENERATION
    assert h.commit(member_id="ghost", generation=gen).error == E.UNKNOWN_MEMBER_ID
    assert h.commit().error == E.UNKNOWN_MEMBER_ID  # generation -1 is for Empty groups only
    assert h.commit(member_id=leader, generation=gen, instance="x").error == E.FENCED_INSTANCE_ID
    r = h.commit(member_id=leader, generation=gen, offsets=(("t", 9, 1), ("nope", 0, 1)))
    assert [e for _, _, e in r.partitions] == [E.UNKNOWN_TOPIC_OR_PARTITION] * 2
    r = h.commit(member_id=leader, generation=gen, metadata="x" * 4097)
    assert r.partitions[0][2] == E.OFFSET_METADATA_TOO_LARGE
    assert h.commit(member_id=leader, generation=gen, metadata="x" * 4096).partitions[0][2] == E.NONE
    h.join(member_id=leader)
    h.join(member_id=follower)  # -> CompletingRebalance
    assert h.group().state is S.COMPLETING_REBALANCE
    assert h.commit(member_id=leader, generation=gen + 1).error == E.REBALANCE_IN_PROGRESS
    # As Kafka's ClassicGroup.validateOffsetCommit orders it: member and generation come first.
    assert h.commit(member_id=leader, generation=gen).error == E.ILLEGAL_GENERATION
    assert h.commit(member_id="ghost", generation=gen + 1).error == E.UNKNOWN_MEMBER_ID


def test_commit_counts_as_heartbeat():
    h = Harness()
    [m] = h.stable_group(1)
    gen = h.group().generation
    for _ in range(5):
        h.advance(8000)
        assert h.commit(member_id=m, generation=gen).error == E.NONE
    assert m in h.group().members  # 40 s without a heartbeat, but with commits


def test_offsets_of_an_empty_group_expire_from_when_it_became_empty():
    h = Harness(offsets_retention_ms=7 * DAY, offsets_retention_check_interval_ms=600000)
    [m] = h.stable_group(1)
    gen = h.group().generation
    h.commit(member_id=m, generation=gen)
    h.advance(3 * DAY)  # the silent member expired after 10 s; the group went Empty then
    emptied = h.group().emptied_at_ms
    assert h.group().state is S.EMPTY and emptied is not None
    assert h.c.fetch_offsets("g", [("t", 0)])[1][0].offset == 10
    h.advance(emptied + 7 * DAY - h.timer.now_ms() + 600000)
    assert h.group() is None  # offsets expired, the group is Dead and gone
    assert h.c.fetch_offsets("g", [("t", 0)])[1][0].offset == -1
    assert "offsets_expired" in h.kinds() and "dead" in h.kinds()


def test_simple_group_offsets_age_from_commit_time():
    h = Harness(offsets_retention_ms=DAY, offsets_retention_check_interval_ms=3600000)
    h.commit(offsets=(("t", 0, 1),))
    h.advance(12 * 3600000)
    h.commit(offsets=(("t", 1, 2),))
    h.advance(13 * 3600000)  # the first commit is 25 h old, the second 13 h
    err, left = h.c.fetch_offsets("g", None)
    assert [(f.partition, f.offset) for f in left] == [(1, 2)]


def test_delete_offsets_and_groups():
    h = Harness()
    assert h.c.delete_offsets("nope", [("t", 0)]).error == E.GROUP_ID_NOT_FOUND
    [m] = h.stable_group(1)
    h.commit(member_id=m, generation=1)
    r = h.c.delete_offsets("g", [("t", 0)], lambda group: {"t"})
    assert r.error == E.NONE and r.partitions == [("t", 0, E.GROUP_SUBSCRIBED_TO_TOPIC)]
    assert h.c.delete_group("g") == E.NON_EMPTY_GROUP
    assert h.c.delete_group("absent") == E.GROUP_ID_NOT_FOUND
    h.leave(m)
    r = h.c.delete_offsets("g", [("t", 0)], lambda group: {"t"})
    assert r.partitions == [("t", 0, E.NONE)] and h.c.fetch_offsets("g", [("t", 0)])[1][0].offset == -1
    assert h.c.delete_group("g") == E.NONE and h.group() is None


def test_describe_and_list():
    h = Harness(initial_rebalance_delay_ms=3000)
    assert h.c.describe_group("none").error == E.GROUP_ID_NOT_FOUND
    boxes = [h.join_new() for _ in range(2)]
    h.advance(10000)
    d = h.c.describe_group("g")
    assert (d.state, d.protocol_type, d.protocol_data) == ("CompletingRebalance", "consumer", "")
    assert all(m["member_metadata"] == b"" for m in d.members)  # metadata only once Stable
    leader = boxes[0].result.leader_id
    h.sync(leader, 1, assignments={leader: b"A"})
    d = h.c.describe_group("g")
    assert d.state == "Stable" and d.protocol_data == "range"
    assert {m["member_assignment"] for m in d.members} == {b"A", b""}
    assert {m["client_host"] for m in d.members} == {"/127.0.0.1"}
    h.commit(group="simple")
    assert {g.group_id for g in h.c.list_groups()} == {"g", "simple"}
    assert [g.group_id for g in h.c.list_groups({"Stable"})] == ["g"]
    assert [g.group_id for g in h.c.list_groups({"empty"})] == ["simple"]


def test_fault_hooks():
    h = Harness(initial_rebalance_delay_ms=3000)
    leader, follower = h.stable_group(2)
    assert h.c.expire_member_now("g", follower) and follower not in h.group().members
    assert not h.c.expire_member_now("g", "ghost")
    h2 = Harness()
    [m] = h2.stable_group(1)
    assert h2.c.force_rebalance("g", "test") and h2.group().state is S.PREPARING_REBALANCE
    assert not h2.c.force_rebalance("nope")


def test_kafka_wording(caplog):
    h = Harness(initial_rebalance_delay_ms=3000)
    h.c.bus.subscribe(KafkaWordedLog(logging.getLogger("t.kafka")))
    with caplog.at_level(logging.INFO, logger="t.kafka"):
        leader, follower = h.stable_group(2)
        h.advance(60000)
    text = caplog.text
    assert "Preparing to rebalance group g in state PreparingRebalance with old generation 0 (reason: Adding new member" in text
    assert "Stabilized group g generation 1 with 2 members" in text
    assert f"Member {follower} in group g has failed, removing it from the group" in text


@pytest.mark.parametrize("group,java_hash", [("", 0), ("a", 97), ("hello", 99162322),
                                             ("polygenelubricants", -2147483648), ("grüße", 98768023)])
def test_java_string_hash(group, java_hash):
    # reference values printed by Java 17's String.hashCode on this machine
    assert java_string_hash(group) == java_hash


def test_coordinator_partition():
    assert offsets_partition_for("polygenelubricants") == 0  # Integer.MIN_VALUE maps to 0, as Kafka's Utils.abs
    assert offsets_partition_for("hello") == 99162322 % 50


def test_every_event_kind_has_a_line_or_is_silent_on_purpose():
    from kcoord.coordinator.events import EventKind as E

    h = Harness(initial_rebalance_delay_ms=3000)
    ids = h.stable_group(2)
    h.commit(member_id=ids[0], generation=1)
    h.join(instance="s1")
    h.advance(60000)
    lines = {e.kind: KafkaWordedLog.format(e) for e in h.events}
    assert lines[E.MEMBER_JOINED].startswith(f"Member ")
    assert lines[E.OFFSETS_COMMITTED] is None  # counted, not logged per commit
    assert lines[E.JOIN_COMPLETED] is None or "is now empty" in lines[E.JOIN_COMPLETED]
    broken = []
    h.c.bus.subscribe(lambda e: broken.append(1 / 0))
    h.c.bus.publish(h.events[0])  # a failing subscriber is logged, not raised
    undo = h.c.bus.subscribe(lambda e: None)
    undo()


@pytest.mark.parametrize("error", [E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS])
def test_unavailable_coordinator_answers_every_group_api(error):
    h = Harness()
    [m] = h.stable_group(1)
    h.c.set_unavailable(error, "g")
    assert h.join().error == error
    assert h.sync(m, 1).error == error
    assert h.heartbeat(m, 1) == error
    assert h.leave(m).error == error
    assert h.commit(member_id=m, generation=1).error == error
    assert h.c.fetch_offsets("g", None)[0] == error
    assert h.c.describe_group("g").error == error
    assert h.join(group="other").error == E.MEMBER_ID_REQUIRED  # other groups are served
    h.c.set_unavailable(error)  # every group
    assert h.join(group="other").error == error
    h.c.set_available()
    h.c.set_available("g")
    assert h.heartbeat(m, 1) == E.NONE
