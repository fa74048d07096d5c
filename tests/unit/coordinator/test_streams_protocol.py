"""The streams group protocol (KIP-1071) on the pure coordinator, driven by hand: a manual clock,
topics in memory, the real sticky task assignor. Kafka Streams itself drives it in
tests/integration/test_streams_groups.py."""
from __future__ import annotations

import pytest

from kcoord.coordinator import CoordinatorConfig, EventBus, GroupCoordinator, ManualTimer
from kcoord.coordinator.records import StreamsGroupRecord
from kcoord.coordinator.streams.group import MemberState, StreamsGroupState
from kcoord.coordinator.streams.protocol import (
    ASSIGNMENT_DELAYED, MISSING_INTERNAL_TOPICS, MISSING_SOURCE_TOPICS, STALE_TOPOLOGY, StreamsHeartbeatRequest,
)
from kcoord.coordinator.streams.snapshot import restore, snapshot
from tests.unit.coordinator.consumer_harness import Topics
from wire.errors import ErrorCode


def topology(epoch=1, source="in", changelog=None):
    sub = {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
           "state_changelog_topics": [], "repartition_sink_topics": [], "repartition_source_topics": [],
           "copartition_groups": []}
    if changelog:
        sub["state_changelog_topics"] = [{"name": changelog, "partitions": 0, "replication_factor": 0,
                                          "topic_configs": []}]
    return {"epoch": epoch, "subtopologies": [sub]}


def tasks(**by_sub):
    return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(by_sub.items())]


class StreamsHarness:
    def __init__(self, topics: Topics | None = None, **config):
        config.setdefault("streams_initial_rebalance_delay_ms", 0)
        config.setdefault("streams_assignment_interval_ms", 0)
        self.timer = ManualTimer()
        self.events, self.records = [], []
        bus = EventBus()
        bus.subscribe(self.events.append)
        self.topics = topics or Topics(**{"in": 4})
        self.c = GroupCoordinator(self.timer, CoordinatorConfig(**config), self.topics, bus)
        self.c.record_sink = self

    def append(self, records):
        self.records.extend(records)

    def group(self, g="app"):
        return self.c.streams_group(g)

    def hb(self, member="m1", epoch=0, group="app", topo=None, owned=None, process=None, **kw):
        join = epoch == 0
        req = StreamsHeartbeatRequest(
            group, member, epoch, rebalance_timeout_ms=30000 if join else -1,
            topology=(topo or topology()) if join else None, process_id=process or f"p-{member}",
            active_tasks=owned[0] if owned else ([] if join else None),
            standby_tasks=owned[1] if owned else ([] if join else None),
            warmup_tasks=[] if owned or join else None, **kw)
        return self.c.streams_group_heartbeat(req)

    @staticmethod
    def active(result) -> set[int]:
        return {p for t in result.active_tasks or () for p in t["partitions"]}


def test_a_member_joining_gets_every_task_of_a_ready_topology():
    h = StreamsHarness()
    r = h.hb()
    # A new group is at epoch 1 (as Kafka's): the first member's join bumps it to 2.
    assert r.error is ErrorCode.NONE and r.member_epoch == 2
    assert h.active(r) == {0, 1, 2, 3}
    assert r.status == []
    g = h.group()
    assert g.state is StreamsGroupState.STABLE and g.validated_topology_epoch == 1
    assert isinstance(h.records[-1], StreamsGroupRecord)


def test_missing_source_topics_leave_the_group_not_ready_with_kafkas_status():
    h = StreamsHarness(Topics(other=1))
    r = h.hb()
    assert r.error is ErrorCode.NONE
    assert [code for code, _ in r.status] == [MISSING_SOURCE_TOPICS]
    assert "in" in r.status[0][1]
    assert h.group().state is StreamsGroupState.NOT_READY
    assert not r.active_tasks


def test_missing_changelog_topics_are_asked_for_then_the_group_becomes_ready():
    h = StreamsHarness()
    r = h.hb(topo=topology(changelog="app-store-changelog"))
    assert [code for code, _ in r.status] == [MISSING_INTERNAL_TOPICS]
    assert set(r.topics_to_create) == {"app-store-changelog"}
    assert r.topics_to_create["app-store-changelog"].partitions == 4
    h.topics.create("app-store-changelog", 4)
    h.timer.advance(10_001)   # the topics' metadata is looked at again after the refresh interval
    r = h.hb(epoch=r.member_epoch, owned=([], []))
    assert r.status == [] and h.active(r) == {0, 1, 2, 3}
    assert h.group().state is StreamsGroupState.STABLE


def test_a_second_member_gets_tasks_only_once_the_first_revoked_them():
    h = StreamsHarness()
    first = h.hb("m1")
    second = h.hb("m2")
    assert second.member_epoch == 3 and not second.active_tasks   # unreleased: m1 still runs them
    assert h.group().members["m2"].state is MemberState.UNRELEASED_TASKS
    # m1 still reports all four: it is asked to give some up and stays at its epoch.
    r1 = h.hb("m1", first.member_epoch, owned=(tasks(**{"0": {0, 1, 2, 3}}), []))
    kept = h.active(r1)
    assert r1.member_epoch == 2 and len(kept) == 2
    assert h.group().members["m1"].state is MemberState.UNREVOKED_TASKS
    r1 = h.hb("m1", 2, owned=(tasks(**{"0": kept}), []))
    assert r1.member_epoch == 3 and h.group().members["m1"].state is MemberState.STABLE
    r2 = h.hb("m2", 3, owned=([], []))
    assert h.active(r2) == {0, 1, 2, 3} - kept
    assert h.group().state is StreamsGroupState.STABLE


def test_a_member_that_stops_heartbeating_is_fenced_and_its_tasks_move():
    h = StreamsHarness(streams_session_timeout_ms=45000)
    h.hb("m1")
    h.hb("m2")
    h.timer.advance(30000)
    r = h.hb("m1", 2, owned=(tasks(**{"0": {0, 1, 2, 3}}), []))
    h.hb("m1", r.member_epoch, owned=(tasks(**{"0": h.active(r)}), []))
    h.timer.advance(20000)   # m2 said nothing for 50 s
    assert set(h.group().members) == {"m1"}
    r = h.hb("m1", h.group().members["m1"].member_epoch, owned=(tasks(**{"0": h.active(r)}), []))
    assert h.active(r) == {0, 1, 2, 3}
    assert any(e.kind.value == "member_expired" and e.member_id == "m2" for e in h.events)


def test_leaving_removes_the_member_and_an_empty_group_can_be_deleted():
    h = StreamsHarness()
    h.hb("m1")
    assert h.c.delete_group("app") is ErrorCode.NON_EMPTY_GROUP
    r = h.hb("m1", -1)
    assert r.error is ErrorCode.NONE and r.member_epoch == -1
    assert h.group().state is StreamsGroupState.EMPTY
    assert h.c.delete_group("app") is ErrorCode.NONE
    assert h.group() is None
    assert isinstance(h.records[-1], StreamsGroupRecord) and h.records[-1].value is None


@pytest.mark.parametrize("change,code,message", [
    ({"instance_id": "i"}, ErrorCode.INVALID_REQUEST, "Static membership is not yet supported."),
    ({"task_offsets": []}, ErrorCode.INVALID_REQUEST, "TaskOffsets are not supported yet."),
    ({"rack_id": " "}, ErrorCode.INVALID_REQUEST, "RackId can't be empty."),
])
def test_requests_kafka_refuses_are_refused_with_its_words(change, code, message):
    h = StreamsHarness()
    r = h.hb(**change)
    assert (r.error, r.message) == (code, message)
    assert h.group() is None


def test_a_changelog_with_a_partition_count_is_an_invalid_topology():
    h = StreamsHarness()
    topo = topology(changelog="app-c")
    topo["subtopologies"][0]["state_changelog_topics"][0]["partitions"] = 3
    r = h.hb(topo=topo)
    assert r.error is ErrorCode.STREAMS_INVALID_TOPOLOGY
    assert r.message == "Changelog topic app-c must have an undefined partition count, but it is set to 3."


def test_epochs_ahead_or_behind_are_fenced_and_unknown_members_refused():
    h = StreamsHarness()
    h.hb("m1")
    r = h.hb("m1", 7, owned=([], []))
    assert r.error is ErrorCode.FENCED_MEMBER_EPOCH
    r = h.hb("nobody", 1, owned=([], []))
    assert r.error is ErrorCode.UNKNOWN_MEMBER_ID
    r = h.hb("m1", 1, group="other", owned=([], []))
    assert (r.error, r.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Streams group other not found.")


def test_a_member_behind_the_groups_topology_is_told_it_is_stale():
    h = StreamsHarness()
    h.hb("m1", topo=topology(epoch=2))
    r = h.hb("m2", topo=topology(epoch=1))
    assert STALE_TOPOLOGY in [code for code, _ in r.status]
    assert r.status[0][1] == "The member's topology epoch 1 is behind the group's topology epoch 2."


def test_the_initial_rebalance_delay_holds_the_first_assignment_back():
    h = StreamsHarness(streams_initial_rebalance_delay_ms=3000)
    r = h.hb("m1")
    assert [code for code, _ in r.status] == [ASSIGNMENT_DELAYED] and not r.active_tasks
    h.hb("m2")
    h.timer.advance(3000)
    r1 = h.hb("m1", r.member_epoch, owned=([], []))
    r2 = h.hb("m2", h.group().members["m2"].member_epoch, owned=([], []))
    assert h.active(r1) | h.active(r2) == {0, 1, 2, 3} and h.active(r1) and h.active(r2)


def test_the_snapshot_round_trips_and_a_loaded_group_carries_on():
    h = StreamsHarness()
    r = h.hb("m1")
    value = snapshot(h.group())
    again = restore(value)
    assert snapshot(again) == value
    other = StreamsHarness(h.topics)   # the same topics (ids): a restart of the same cluster
    other.c.load_streams_group(value)
    r = other.hb("m1", r.member_epoch, owned=(tasks(**{"0": {0, 1, 2, 3}}), []))
    assert r.error is ErrorCode.NONE and r.member_epoch == 2


def test_list_and_describe_see_streams_groups_as_kafka_does():
    h = StreamsHarness()
    h.hb("m1")
    assert [g.group_id for g in h.c.list_groups(types={"streams"})] == ["app"]
    assert h.c.list_groups(types={"consumer"}) == []
    d = h.c.describe_group("app")
    assert d.error is ErrorCode.GROUP_ID_NOT_FOUND and d.message == "Group app is not a classic group."
    described = h.c.streams_group_describe("app")
    assert described["group_state"] == "Stable" and described["members"][0]["member_id"] == "m1"
    assert described["topology"]["subtopologies"][0]["source_topics"] == ["in"]


def test_offset_commits_check_the_member_epoch():
    from kcoord.coordinator import OffsetCommitPartition, OffsetCommitRequest

    h = StreamsHarness()
    h.hb("m1")
    ok = h.c.commit_offsets(OffsetCommitRequest("app", "m1", 2, None, [OffsetCommitPartition("in", 0, 5)],
                                                version=9))
    assert ok.partitions[0][2] is ErrorCode.NONE
    stale = h.c.commit_offsets(OffsetCommitRequest("app", "m1", 3, None, [OffsetCommitPartition("in", 0, 6)],
                                                   version=9))
    assert stale.partitions[0][2] is ErrorCode.STALE_MEMBER_EPOCH
    old = h.c.commit_offsets(OffsetCommitRequest("app", "m1", 2, None, [OffsetCommitPartition("in", 0, 6)],
                                                 version=8))
    assert old.partitions[0][2] is ErrorCode.UNSUPPORTED_VERSION
