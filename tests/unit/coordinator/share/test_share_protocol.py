"""The share group protocol (KIP-932) on the pure coordinator, driven by hand: a manual clock,
topics in memory, the real simple assignor. What each test expects is what Kafka 4.3.1's
GroupMetadataManager.shareGroupHeartbeat and GroupCoordinatorService answer, messages included."""
from __future__ import annotations

from kcoord.coordinator import CoordinatorConfig, EventBus, GroupCoordinator, ManualTimer
from kcoord.coordinator.events import EventKind
from kcoord.coordinator.records import ShareGroupRecord
from kcoord.coordinator.requests import ConsumerHeartbeatRequest, JoinRequest, OffsetCommitPartition, OffsetCommitRequest
from kcoord.coordinator.share.group import ShareGroupState
from kcoord.coordinator.events import KafkaWordedLog
from kcoord.coordinator.share.protocol import ShareHeartbeatRequest, on_group_deleted, on_member_gone
from tests.unit.coordinator.consumer_harness import Topics
from wire.errors import ErrorCode


class ShareHarness:
    def __init__(self, topics: Topics | None = None, **config):
        config.setdefault("share_assignment_interval_ms", 0)
        self.timer = ManualTimer()
        self.events, self.records, self.gone = [], [], []
        self.bus = EventBus()
        self.bus.subscribe(self.events.append)
        self.topics = topics or Topics(orders=3)
        self.c = GroupCoordinator(self.timer, CoordinatorConfig(**config), self.topics, self.bus)
        self.c.record_sink = self
        # What the brokers' ShareManager does: hear of members gone, once that is written.
        on_member_gone(self.bus, lambda g, m: self.gone.append((g, m, len(self.records))))

    def append(self, records):
        self.records.extend(records)

    def group(self, g="g"):
        return self.c.share_group(g)

    def hb(self, member="m1", epoch=0, group="g", topics=None, **kw):
        if epoch == 0 and topics is None:
            topics = ["orders"]
        return self.c.share_group_heartbeat(ShareHeartbeatRequest(group, member, epoch,
                                                                  subscribed_topic_names=topics, **kw))

    def parts(self, result, topic="orders") -> list[int] | None:
        if result.assignment is None:
            return None
        return result.assignment.get(self.topics.id(topic), [])

    def join(self, member="m1", **kw):
        """Join, then heartbeat once more: the partitions the join made assignable are assigned."""
        first = self.hb(member, 0, **kw)
        return self.hb(member, first.member_epoch)


def test_a_member_gets_its_partitions_at_the_heartbeat_after_its_join_as_on_kafka():
    h = ShareHarness()
    r = h.hb()
    # Kafka: a new group is at epoch 1; the join bumps it to 2 with nothing assignable yet (the
    # share-partition state is initialized after the heartbeat), the next heartbeat bumps it again
    # and assigns.
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (ErrorCode.NONE, "m1", 2, 5000)
    assert r.assignment == {}
    assert h.group().initialized == {h.topics.id("orders"): ("orders", frozenset({0, 1, 2}))}
    r = h.hb("m1", 2)
    assert r.member_epoch == 3 and h.parts(r) == [0, 1, 2]
    r = h.hb("m1", 3)
    assert r.member_epoch == 3 and r.assignment is None   # unchanged: not sent
    g = h.group()
    assert g.state is ShareGroupState.STABLE and (g.group_epoch, g.assignment_epoch) == (3, 3)
    assert isinstance(h.records[-1], ShareGroupRecord)


def test_a_second_member_shares_the_partitions_and_the_first_gets_its_new_ones_at_once():
    h = ShareHarness()
    h.join("m1")
    r2 = h.hb("m2")   # the partitions are assignable already: assigned at the join
    # Which partition m2 takes follows Java's hash order of the (random) topic id: one of three.
    assert r2.member_epoch == 4 and len(h.parts(r2)) == 1
    r1 = h.hb("m1", 3)   # no revocation step: straight to the new target
    assert r1.member_epoch == 4 and sorted(h.parts(r1) + h.parts(r2)) == [0, 1, 2]


def test_more_members_than_partitions_each_partition_goes_to_several():
    h = ShareHarness(Topics(orders=1))
    results = [h.join(m) for m in ("m1", "m2", "m3")]
    for m in ("m1", "m2"):
        results.append(h.hb(m, h.group().members[m].member_epoch))
    owned = {m: set(v.assigned.get(h.topics.id("orders"), ())) for m, v in h.group().members.items()}
    assert owned == {"m1": {0}, "m2": {0}, "m3": {0}}


def test_kafkas_request_checks_and_messages():
    h = ShareHarness()
    cases = [
        (dict(member=""), ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
        (dict(group=" "), ErrorCode.INVALID_REQUEST, "GroupId can't be empty."),
        (dict(rack_id=""), ErrorCode.INVALID_REQUEST, "RackId can't be empty."),
        (dict(topics=[]), ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."),
        (dict(epoch=-2), ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
        (dict(epoch=1), ErrorCode.GROUP_ID_NOT_FOUND, "Share group g not found."),
        (dict(epoch=-1), ErrorCode.GROUP_ID_NOT_FOUND, "Group g not found."),
    ]
    for kw, error, message in cases:
        r = h.hb(**kw)
        assert (r.error, r.message) == (error, message), kw
    assert h.group() is None and h.records == []


def test_member_epoch_checks():
    h = ShareHarness()
    h.join("m1")
    r = h.hb("m2", 1)
    assert (r.error, r.message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Member m2 is not a member of group g.")
    r = h.hb("m1", 5)
    assert r.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert r.message == ("The share group member has a greater member epoch (5) than the one known by the group "
                         "coordinator (3). The member must abandon all its partitions and rejoin.")
    # The previous epoch is accepted (the answer that moved the member on may have been lost).
    assert h.hb("m1", 2).error is ErrorCode.NONE
    h.hb("m2")
    assert h.hb("m1", 3).member_epoch == 4
    r = h.hb("m1", 2)
    assert r.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert r.message == ("The share group member has a smaller member epoch (2) than the one known by the group "
                         "coordinator (4), and it does not match the previous member epoch (3). The member must "
                         "abandon all its partitions and rejoin.")


def test_a_member_leaving_bumps_the_epoch_and_tells_the_share_partitions_once_written():
    h = ShareHarness()
    h.join("m1")
    h.join("m2")
    written = len(h.records)
    r = h.hb("m2", -1)
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (ErrorCode.NONE, "m2", -1, 0)
    g = h.group()
    assert set(g.members) == {"m1"} and g.group_epoch == 5
    assert h.gone == [("g", "m2", written + 1)]   # after the record that removed it
    left = [e for e in h.events if e.kind is EventKind.MEMBER_LEFT]
    assert left[-1].member_id == "m2" and left[-1].details["group_type"] == "share"
    assert KafkaWordedLog.format(left[-1]) == "[GroupId g] Member m2 left the share group."
    r = h.hb("m2", -1)
    assert (r.error, r.message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Member m2 is not a member of group g.")


def test_a_silent_member_is_fenced_after_the_session_timeout_the_group_config_can_shorten():
    h = ShareHarness()
    h.join("m1")
    h.timer.advance(44_999)
    assert h.gone == []
    h.timer.advance(1)
    assert [(g, m) for g, m, _ in h.gone] == [("g", "m1")]
    assert h.group().state is ShareGroupState.EMPTY

    class Configs:
        def effective(self, group_id):
            return {"share.session.timeout.ms": 10_000, "share.heartbeat.interval.ms": 2_000}
    h2 = ShareHarness()
    h2.c.ctx.group_configs = Configs()
    assert h2.hb().heartbeat_interval_ms == 2_000
    h2.timer.advance(10_000)
    assert [(g, m) for g, m, _ in h2.gone] == [("g", "m1")]


def test_group_max_size():
    h = ShareHarness(share_max_size=1)
    h.join("m1")
    r = h.hb("m2")
    assert (r.error, r.message) == (ErrorCode.GROUP_MAX_SIZE_REACHED,
                                    "The share group has reached its maximum capacity of 1 members.")
    assert h.hb("m1", 0).error is ErrorCode.NONE   # a member already in may rejoin


def test_a_subscription_change_drops_the_topic_at_once_and_new_topics_come_at_the_next_heartbeat():
    h = ShareHarness(Topics(orders=2, audit=1))
    r = h.join("m1")
    assert h.parts(r) == [0, 1]
    r = h.hb("m1", r.member_epoch, topics=["audit"])
    assert r.assignment == {}        # orders gone; audit not assignable yet
    r = h.hb("m1", r.member_epoch)
    assert r.assignment == {h.topics.id("audit"): [0]}


def test_new_partitions_of_a_subscribed_topic_become_assigned():
    h = ShareHarness(Topics(orders=2))
    r = h.join("m1")
    h.topics.grow("orders", 3)
    r = h.hb("m1", r.member_epoch)   # the metadata hash moved: the new partition is made assignable
    r = h.hb("m1", r.member_epoch)
    assert h.parts(r) == [0, 1, 2]


def test_a_group_id_of_another_type_and_other_types_on_a_share_group():
    h = ShareHarness()
    h.c.consumer_group_heartbeat(ConsumerHeartbeatRequest("cg", "c1", 0, rebalance_timeout_ms=30000,
                                                          subscribed_topic_names=["orders"], topic_partitions=[]))
    r = h.hb(group="cg")
    assert (r.error, r.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a share group.")
    h.join("m1")
    r = h.c.consumer_group_heartbeat(ConsumerHeartbeatRequest("g", "c1", 0, rebalance_timeout_ms=30000,
                                                              subscribed_topic_names=["orders"], topic_partitions=[]))
    assert (r.error, r.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    answers = []
    h.c.join_group(JoinRequest("g", "", None, "consumer", [("range", b"")], 45000, 30000, "c", "/127.0.0.1"),
                   answers.append)
    assert answers[0].error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.c.describe_group("g").error is ErrorCode.GROUP_ID_NOT_FOUND
    assert h.c.consumer_group_describe("g").message == "Group g is not a consumer group."
    commit = h.c.commit_offsets(OffsetCommitRequest("g", "", -1, None, [OffsetCommitPartition("orders", 0, 5)]))
    assert commit.error is ErrorCode.GROUP_ID_NOT_FOUND
    assert h.c.fetch_offsets("g", None)[0] is ErrorCode.GROUP_ID_NOT_FOUND


def test_list_describe_and_delete():
    h = ShareHarness()
    deleted = []
    on_group_deleted(h.bus, deleted.append)
    h.join("m1")
    listed = h.c.list_groups(types={"share"})
    assert [(g.group_id, g.group_type, str(g.state)) for g in listed] == [("g", "share", "Stable")]
    assert h.c.list_groups(types={"consumer"}) == [] and h.c.list_groups(states={"empty"}) == []
    d = h.c.share_group_describe("g")
    assert (d["group_state"], d["group_epoch"], d["assignment_epoch"], d["assignor_name"]) == ("Stable", 3, 3, "simple")
    assert d["members"][0]["assignment"]["topic_partitions"] == [
        {"topic_id": h.topics.id("orders"), "topic_name": "orders", "partitions": [0, 1, 2]}]
    assert h.c.share_group_describe("nope")["error_message"] == "Group nope not found."
    assert h.c.delete_group("g") is ErrorCode.NON_EMPTY_GROUP
    h.hb("m1", -1)
    assert h.c.delete_group("g") is ErrorCode.NONE
    assert h.group() is None and h.records[-1] == ShareGroupRecord("g", None)
    assert deleted == ["g"]


def test_the_checks_before_share_group_offsets_are_altered_or_deleted():
    """GroupMetadataManager.alterShareGroupOffsets / GroupCoordinatorShard.initiateDeleteShareGroupOffsets."""
    h = ShareHarness()
    h.c.consumer_group_heartbeat(ConsumerHeartbeatRequest("cg", "c1", 0, rebalance_timeout_ms=30000,
                                                          subscribed_topic_names=["orders"], topic_partitions=[]))
    for create in (False, True):
        check = h.c.check_share_offsets_change("cg", create)
        assert (check.error, check.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a share group.")
    check = h.c.check_share_offsets_change("new")
    assert (check.error, check.message, h.group("new")) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group new not found.", None)
    # Alter makes an empty share group of an unknown id, written as one.
    assert h.c.check_share_offsets_change("new", create=True).error is ErrorCode.NONE
    assert h.group("new").state is ShareGroupState.EMPTY and h.records[-1].group_id == "new"
    assert [e.kind for e in h.events if e.group_id == "new"] == [EventKind.SHARE_GROUP_CREATED]
    h.join("m1")
    for create in (False, True):
        check = h.c.check_share_offsets_change("g", create)
        assert (check.error, check.message) == (ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    h.hb("m1", -1)
    assert h.c.check_share_offsets_change("g").error is ErrorCode.NONE
    assert h.c.check_share_offsets_change("").error is ErrorCode.INVALID_GROUP_ID


def test_a_restarted_coordinator_carries_on_with_the_same_epochs_and_assignments():
    h = ShareHarness()
    r = h.join("m1")
    value = [rec for rec in h.records if isinstance(rec, ShareGroupRecord)][-1].value
    again = ShareHarness(h.topics)
    again.c.load((), (), (), None, share=[value])
    r2 = again.hb("m1", r.member_epoch)
    assert (r2.error, r2.member_epoch, r2.assignment) == (ErrorCode.NONE, 3, None)
    again.timer.advance(45_000)   # a loaded member gets a session of its own
    assert [(g, m) for g, m, _ in again.gone] == [("g", "m1")]
