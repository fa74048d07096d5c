"""The consumer group protocol (KIP-848) with a manual clock: join, reconcile, leave, fence,
static members, regex subscriptions, epoch errors, offsets, durability."""
from kcoord.coordinator.consumer.group import ConsumerGroupState as CS
from kcoord.coordinator.consumer.group import MemberState
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.records import ConsumerGroupRecord
from kcoord.coordinator.requests import OffsetCommitPartition, OffsetCommitRequest
from tests.unit.coordinator.consumer_harness import ConsumerHarness, Topics
from wire.errors import ErrorCode as E


def two_members_stable(h):
    h.hb("m1", 0)
    h.hb("m2", 0)
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)   # told to revoke 1, 3
    h.hb("m1", 2, owned={"t": [0, 2]}, partial=True)          # revoked: moves to epoch 3
    return h.hb("m2", 3, owned={}, partial=True)              # gets 1, 3


# ------------------------------------------------------------------ join and reconcile
def test_first_member_gets_everything_at_epoch_2():
    # A new group starts at epoch 1 (as in Kafka 4.3); a subscribing member bumps it to 2.
    h = ConsumerHarness()
    r = h.hb("m1", 0)
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (E.NONE, "m1", 2, 5000)
    assert h.named(r.assignment) == {"t": [0, 1, 2, 3]}
    g = h.group()
    assert (g.state, g.group_epoch, g.assignment_epoch) == (CS.STABLE, 2, 2)


def test_v0_join_with_empty_member_id_gets_a_generated_id():
    h = ConsumerHarness()
    r = h.hb("", 0, version=0)
    assert r.error == E.NONE and len(r.member_id) == 22 and r.member_id in h.group().members


def test_second_member_waits_for_the_revocation_before_getting_partitions():
    h = ConsumerHarness()
    h.hb("m1", 0)
    r2 = h.hb("m2", 0)
    assert (r2.member_epoch, h.named(r2.assignment)) == (3, {})
    assert h.group().members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    assert h.group().state is CS.RECONCILING
    r1 = h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)
    assert (r1.member_epoch, h.named(r1.assignment)) == (2, {"t": [0, 2]})
    assert h.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    # Until m1 stops owning 1 and 3, m2 gets nothing.
    assert h.hb("m2", 3, owned={}, partial=True).assignment is None
    r1 = h.hb("m1", 2, owned={"t": [0, 2]}, partial=True)
    assert (r1.error, r1.member_epoch) == (E.NONE, 3)
    r2 = h.hb("m2", 3, owned={}, partial=True)
    assert (r2.member_epoch, h.named(r2.assignment)) == (3, {"t": [1, 3]})
    assert h.group().state is CS.STABLE
    kinds = [e.kind for e in h.events]
    assert K.PARTITIONS_REVOKING in kinds and K.TARGET_ASSIGNMENT_CHANGED in kinds and K.MEMBER_EPOCH_BUMPED in kinds


def test_full_heartbeat_always_carries_the_assignment():
    h = ConsumerHarness()
    h.hb("m1", 0)
    assert h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True).assignment is None
    assert h.named(h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}).assignment) == {"t": [0, 1, 2, 3]}


# ------------------------------------------------------------------ leave and fencing
def test_leave_bumps_the_group_epoch_and_the_rest_take_over():
    h = ConsumerHarness()
    two_members_stable(h)
    r = h.hb("m2", -1, owned=None, partial=True)
    assert (r.error, r.member_id, r.member_epoch) == (E.NONE, "m2", -1)
    g = h.group()
    assert (g.group_epoch, g.state) == (4, CS.ASSIGNING)
    r = h.hb("m1", 3, owned={"t": [0, 2]}, partial=True)
    assert (r.member_epoch, h.named(r.assignment)) == (4, {"t": [0, 1, 2, 3]})
    assert h.group().state is CS.STABLE


def test_last_member_leaving_empties_the_group():
    h = ConsumerHarness()
    h.hb("m1", 0)
    h.hb("m1", -1, owned=None, partial=True)
    assert h.group().state is CS.EMPTY and h.group().size == 0


def test_session_expiry_fences_the_member():
    h = ConsumerHarness(consumer_session_timeout_ms=45000)
    two_members_stable(h)
    for _ in range(5):
        h.advance(10000)
        h.hb("m1", 3, owned={"t": [0, 2]}, partial=True)
    assert "m2" not in h.group().members
    assert any(e.kind is K.MEMBER_EXPIRED and e.member_id == "m2" for e in h.events)
    assert h.group().members["m1"].member_epoch == 4


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced():
    h = ConsumerHarness()
    h.hb("m1", 0, rebalance=10000)
    h.hb("m2", 0)
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)   # must revoke 1, 3 within 10 s
    for _ in range(3):
        h.advance(4000)
        h.hb("m2", 3, owned={}, partial=True)
    assert "m1" not in h.group().members
    m2 = h.group().members["m2"]
    assert m2.member_epoch == 4 and {p for ps in m2.assigned.values() for p in ps} == {0, 1, 2, 3}


def test_revoking_in_time_cancels_the_rebalance_timeout():
    h = ConsumerHarness()
    h.hb("m1", 0, rebalance=10000)
    h.hb("m2", 0)
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)
    h.advance(5000)
    h.hb("m1", 2, owned={"t": [0, 2]}, partial=True)
    h.advance(20000)
    assert "m1" in h.group().members


# ------------------------------------------------------------------ epochs and errors
def test_unknown_member_and_epochs():
    h = ConsumerHarness()
    h.hb("m1", 0)
    r = h.hb("nobody", 2, partial=True)
    assert (r.error, r.message) == (E.UNKNOWN_MEMBER_ID, "Member nobody is not a member of group g.")
    r = h.hb("m1", 6, partial=True)
    assert r.error == E.FENCED_MEMBER_EPOCH and "greater member epoch (6)" in r.message
    h.hb("m2", 0)
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)
    h.hb("m1", 2, owned={"t": [0, 2]}, partial=True)           # now at epoch 3, previous 2
    assert h.hb("m1", 2, owned={"t": [0, 2]}, partial=True).error == E.NONE   # the previous epoch, once lost
    r = h.hb("m1", 0, owned=[], topics=("t",))                   # a rejoin at epoch 0 is accepted
    assert r.error == E.NONE


def test_smaller_epoch_owning_more_than_assigned_is_fenced():
    h = ConsumerHarness()
    two_members_stable(h)
    r = h.hb("m1", 2, owned={"t": [0, 1, 2]}, partial=True)
    assert r.error == E.FENCED_MEMBER_EPOCH and "smaller member epoch (2)" in r.message


def test_unknown_group_with_a_nonzero_epoch():
    h = ConsumerHarness()
    r = h.hb("m1", 4, partial=True)
    assert (r.error, r.message) == (E.GROUP_ID_NOT_FOUND, "Consumer group g not found.")


def test_invalid_requests_get_kafkas_messages():
    h = ConsumerHarness()
    cases = [
        (dict(member_id="", epoch=0, version=1), "MemberId can't be empty."),
        (dict(member_id="m", epoch=0, group=" "), "GroupId can't be empty."),
        (dict(member_id="m", epoch=0, instance=""), "InstanceId can't be empty."),
        (dict(member_id="m", epoch=0, rack=""), "RackId can't be empty."),
        (dict(member_id="m", epoch=0, rebalance=-1), "RebalanceTimeoutMs must be provided in first request."),
        (dict(member_id="m", epoch=0, owned=None), "TopicPartitions must be empty when (re-)joining."),
        (dict(member_id="m", epoch=0, owned={"t": [0]}), "TopicPartitions must be empty when (re-)joining."),
        (dict(member_id="m", epoch=0, topics=None),
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        (dict(member_id="m", epoch=-2, partial=True), "InstanceId can't be null."),
        (dict(member_id="m", epoch=-3, partial=True), "MemberEpoch is invalid."),
    ]
    for kw, message in cases:
        r = h.hb(**kw)
        assert (r.error, r.message) == (E.INVALID_REQUEST, message), kw
    r = h.hb("m", 0, assignor="sticky")
    assert (r.error, r.message) == (E.UNSUPPORTED_ASSIGNOR,
                                    "ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
    assert h.group() is None


def test_group_max_size():
    h = ConsumerHarness(consumer_max_size=1)
    h.hb("m1", 0)
    r = h.hb("m2", 0)
    assert (r.error, r.message) == (E.GROUP_MAX_SIZE_REACHED,
                                    "The consumer group has reached its maximum capacity of 1 members.")
    assert h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True).error == E.NONE


# ------------------------------------------------------------------ static members
def test_static_member_leaves_for_now_and_its_replacement_keeps_the_assignment():
    h = ConsumerHarness()
    h.hb("a1", 0, instance="i")
    h.hb("b", 0)
    h.hb("a1", 2, owned={"t": [0, 1, 2, 3]}, partial=True, instance="i")
    h.hb("a1", 2, owned={"t": [0, 2]}, partial=True, instance="i")
    epoch = h.group().group_epoch
    r = h.hb("a1", -2, owned=None, partial=True, instance="i")
    assert (r.error, r.member_epoch) == (E.NONE, -2)
    assert h.group().group_epoch == epoch            # no rebalance for a static member away
    r = h.hb("a2", 0, instance="i")
    assert (r.error, r.member_id, h.named(r.assignment)) == (E.NONE, "a2", {"t": [0, 2]})
    assert h.group().group_epoch == epoch and "a1" not in h.group().members
    assert any(e.kind is K.MEMBER_REPLACED for e in h.events)


def test_static_instance_in_use_is_unreleased():
    h = ConsumerHarness()
    h.hb("a1", 0, instance="i")
    r = h.hb("a2", 0, instance="i")
    assert r.error == E.UNRELEASED_INSTANCE_ID
    assert r.message == ("Static member a2 with instance id i cannot join the group because the instance id is "
                         "owned by a1 member.")
    r = h.hb("a2", 2, instance="i", partial=True)
    assert (r.error, r.message) == (E.FENCED_INSTANCE_ID, "Static member a2 with instance id i was fenced by member a1.")


def test_static_member_away_is_fenced_when_its_session_expires():
    h = ConsumerHarness()
    h.hb("a1", 0, instance="i")
    h.hb("a1", -2, owned=None, partial=True, instance="i")
    h.advance(45000)
    assert h.group().size == 0


# ------------------------------------------------------------------ subscriptions and topics
def test_regex_subscription_is_resolved_in_the_background_and_refreshed():
    # As Kafka: a regex new to the group first subscribes the member to nothing (epoch 1, no
    # partitions); its resolution runs as an operation of its own and bumps the group epoch.
    topics = Topics(orders=2, other=1)
    h = ConsumerHarness(topics, consumer_regex_refresh_interval_ms=10000)
    r = h.hb("m1", 0, topics=None, regex="ord.*")
    assert (r.member_epoch, h.named(r.assignment)) == (1, {})
    h.advance(0)                                               # the background resolution
    assert (h.group().group_epoch, h.group().state) == (2, CS.ASSIGNING)
    r = h.hb("m1", 1, owned={}, partial=True)
    assert (r.member_epoch, h.named(r.assignment)) == (2, {"orders": [0, 1]})
    # A new matching topic is noticed at a heartbeat once 10 s have passed since the last resolution.
    topics.create("ordersv2", 1)
    h.advance(9000)
    assert h.hb("m1", 2, owned={"orders": [0, 1]}, partial=True).assignment is None
    h.advance(0)
    assert h.group().group_epoch == 2
    h.advance(1001)
    h.hb("m1", 2, owned={"orders": [0, 1]}, partial=True)
    h.advance(0)
    assert h.group().group_epoch == 3
    r = h.hb("m1", 2, owned={"orders": [0, 1]}, partial=True)
    assert (r.member_epoch, h.named(r.assignment)) == (3, {"orders": [0, 1], "ordersv2": [0]})


def test_a_regex_already_resolved_for_another_member_bumps_the_epoch_at_once():
    topics = Topics(orders=2)
    h = ConsumerHarness(topics)
    h.hb("m1", 0, topics=None, regex="ord.*")
    h.advance(0)
    h.hb("m1", 1, owned={}, partial=True)
    r = h.hb("m2", 0, topics=None, regex="ord.*")
    assert (h.group().group_epoch, r.member_epoch) == (3, 3)


def test_invalid_regex():
    h = ConsumerHarness()
    r = h.hb("m1", 0, topics=None, regex="(")
    assert r.error == E.INVALID_REGULAR_EXPRESSION
    assert r.message == "SubscribedTopicRegex `(` is not a valid regular expression: missing closing )."


def test_invalid_regexes_get_re2js_wording():
    h = ConsumerHarness()
    for regex, why in [("[unclosed", "missing closing ]"), ("a)", "unexpected )"),
                       ("*a", "missing argument to repetition operator"),
                       ("[z-a]", "invalid character class range"),
                       ("a(?=b)", "invalid or unsupported Perl syntax"),  # RE2 has no look-arounds
                       ("(a)\\1", "invalid escape sequence")]:          # nor back-references
        r = h.hb("m1", 0, topics=None, regex=regex)
        assert (r.error, r.message, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (
            E.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {why}.",
            None, 0, 0)
    assert h.group() is None


def test_leave_answers_carry_no_heartbeat_interval():
    h = ConsumerHarness()
    h.hb("m1", 0)
    r = h.hb("m1", -1, topics=None, rebalance=-1, partial=True)
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (E.NONE, "m1", -1, 0)
    g = h.group()
    assert (g.state, g.group_epoch, g.assignment_epoch) == (CS.EMPTY, 3, 2)
    h.hb("s1", 0, instance="i1")
    r = h.hb("s1", -2, instance="i1", topics=None, rebalance=-1, partial=True)
    assert (r.error, r.member_epoch, r.heartbeat_interval_ms) == (E.NONE, -2, 0)
    assert h.group().state is CS.RECONCILING


# ------------------------------------------------------------------ the assignment interval
def test_targets_are_computed_at_most_once_per_assignment_interval():
    h = ConsumerHarness(consumer_assignment_interval_ms=1000)
    r1 = h.hb("m1", 0)                       # a new group: computed at once
    assert (r1.member_epoch, h.named(r1.assignment)) == (2, {"t": [0, 1, 2, 3]})
    h.advance(200)
    r2 = h.hb("m2", 0)                       # within the interval: the old epoch, nothing
    assert (r2.member_epoch, h.named(r2.assignment)) == (2, {})
    g = h.group()
    assert (g.state, g.group_epoch, g.assignment_epoch) == (CS.ASSIGNING, 3, 2)
    h.advance(799)
    assert h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True).assignment is None
    assert h.group().assignment_epoch == 2
    h.advance(1)                             # 1000 ms after the last computation
    r1 = h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)
    assert (h.group().assignment_epoch, r1.member_epoch, h.named(r1.assignment)) == (3, 2, {"t": [0, 2]})
    assert h.group().state is CS.RECONCILING


def test_the_assignment_timestamp_survives_a_restart():
    from kcoord.coordinator.consumer.snapshot import restore, snapshot
    h = ConsumerHarness(consumer_assignment_interval_ms=1000)
    h.hb("m1", 0)
    assert restore(snapshot(h.group())).assignment_timestamp_ms == h.timer.now_ms()


def test_partition_count_change_bumps_the_group_epoch():
    topics = Topics(t=2)
    h = ConsumerHarness(topics)
    h.hb("m1", 0)
    topics.grow("t", 3)
    r = h.hb("m1", 2, owned={"t": [0, 1]}, partial=True)
    assert (r.member_epoch, h.named(r.assignment)) == (3, {"t": [0, 1, 2]})


def test_subscription_change_revokes_what_is_no_longer_subscribed():
    topics = Topics(a=1, b=1)
    h = ConsumerHarness(topics)
    h.hb("m1", 0, topics=("a", "b"))
    r = h.hb("m1", 2, topics=("b",), owned={"a": [0], "b": [0]})
    assert h.named(r.assignment) == {"b": [0]}
    assert h.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    r = h.hb("m1", 2, owned={"b": [0]}, partial=True)
    assert (r.error, r.member_epoch) == (E.NONE, 3)


# ------------------------------------------------------------------ describe, list, delete, offsets
def test_describe_counts_partitions_pending_revocation_as_the_members_own():
    # As Kafka's ConsumerGroupMember does: until m1 has given up 1 and 3 they are still its own.
    h = ConsumerHarness()
    h.hb("m1", 0)
    h.hb("m2", 0)
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)   # told to revoke 1, 3
    d = h.c.consumer_group_describe("g")
    mine = {m["member_id"]: ([a["partitions"] for a in m["assignment"]],
                             [a["partitions"] for a in m["target_assignment"]]) for m in d.members}
    assert mine == {"m1": ([[0, 1, 2, 3]], [[0, 2]]), "m2": ([], [[1, 3]])}


def test_describe_list_and_delete():
    h = ConsumerHarness()
    two_members_stable(h)
    d = h.c.consumer_group_describe("g")
    assert (d.error, d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (E.NONE, "Stable", 3, 3, "uniform")
    assert {m["member_id"]: [a["partitions"] for a in m["assignment"]] for m in d.members} == \
        {"m1": [[0, 2]], "m2": [[1, 3]]}
    assert h.c.consumer_group_describe("nope").error == E.GROUP_ID_NOT_FOUND
    assert [(g.group_id, g.group_type, str(g.state)) for g in h.c.list_groups(types={"Consumer"})] == \
        [("g", "consumer", "Stable")]
    assert h.c.list_groups(types={"classic"}) == []
    classic = h.c.describe_group("g")
    assert (classic.error, classic.message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a classic group.")
    assert h.c.delete_group("g") == E.NON_EMPTY_GROUP
    h.hb("m1", -1, owned=None, partial=True)
    h.hb("m2", -1, owned=None, partial=True)
    assert h.c.delete_group("g") == E.NONE
    assert h.group() is None and isinstance(h.records[-1], ConsumerGroupRecord) and h.records[-1].value is None


def commit(h, member, epoch, partitions, version=9):
    return h.c.commit_offsets(OffsetCommitRequest("g", member, epoch, None,
                                                  [OffsetCommitPartition("t", p, 10) for p in partitions],
                                                  version=version))


def test_offset_commit_checks_member_epochs():
    h = ConsumerHarness()
    two_members_stable(h)
    assert commit(h, "m1", 3, [0, 2]).error == E.NONE
    assert commit(h, "m1", 4, [0]).error == E.STALE_MEMBER_EPOCH
    assert commit(h, "ghost", 2, [0]).error == E.UNKNOWN_MEMBER_ID
    assert commit(h, "m1", 3, [0], version=8).error == E.UNSUPPORTED_VERSION
    # An older epoch is fine for partitions given before it, refused for newer ones.
    result = commit(h, "m1", 2, [0, 1])
    assert result.partitions == [("t", 0, E.NONE), ("t", 1, E.STALE_MEMBER_EPOCH)]
    assert commit(h, "", -1, [0]).error == E.UNKNOWN_MEMBER_ID      # admin commit to an active group
    assert h.c.fetch_offsets("g", [("t", 0)], "m1", 3)[0] == E.NONE
    assert h.c.fetch_offsets("g", [("t", 0)], "m1", 2)[0] == E.STALE_MEMBER_EPOCH
    assert h.c.fetch_offsets("g", [("t", 0)])[1][0].offset == 10


def test_classic_join_to_a_consumer_group_is_refused_and_an_empty_one_gives_way():
    # Refused with group.consumer.migration.policy=disabled (test_migration.py: the other policies).
    from tests.unit.coordinator.harness import Box
    from kcoord.coordinator import JoinRequest
    h = ConsumerHarness(consumer_migration_policy="disabled")
    h.hb("m1", 0)
    box = Box()
    h.c.join_group(JoinRequest("g", "", None, "consumer", [("range", b"")], 10000, 30000, "c", "/h"), box)
    assert box.error == E.INCONSISTENT_GROUP_PROTOCOL
    h.hb("m1", -1, owned=None, partial=True)
    box = Box()
    h.c.join_group(JoinRequest("g", "", None, "consumer", [("range", b"")], 10000, 30000, "c", "/h"), box)
    assert box.error == E.MEMBER_ID_REQUIRED and h.group() is None and h.c.group("g") is not None


def test_heartbeat_to_a_non_empty_classic_group_is_refused():
    from tests.unit.coordinator.harness import Box
    from kcoord.coordinator import JoinRequest
    h = ConsumerHarness(consumer_migration_policy="disabled")
    box = Box()
    h.c.join_group(JoinRequest("g", "", None, "consumer", [("range", b"")], 10000, 30000, "c", "/h",
                               require_known_member_id=False), box)
    r = h.hb("m1", 0)
    assert (r.error, r.message) == (E.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group g to consumer group "
                                                          "because online upgrade is disabled.")


# ------------------------------------------------------------------ durability
def test_restart_restores_epochs_and_assignments():
    h = ConsumerHarness()
    two_members_stable(h)
    value = [r for r in h.records if isinstance(r, ConsumerGroupRecord)][-1].value
    h2 = ConsumerHarness(h.topics)
    h2.c.load_consumer_group(value)
    g = h2.group()
    assert (g.group_epoch, g.assignment_epoch, str(g.state)) == (3, 3, "Stable")
    assert g.members["m1"].assigned == h.group().members["m1"].assigned
    r = h2.hb("m1", 3, owned={"t": [0, 2]}, partial=True)
    assert (r.error, r.member_epoch) == (E.NONE, 3)
    h2.advance(45000)   # m2 never came back: fenced
    assert "m2" not in h2.group().members


# ------------------------------------------------------------------ the real assignors
def _converge(h, members, rounds=6):
    """Heartbeat every member, each reporting what it was last told it owns, until Stable."""
    owned = {m: {} for m in members}
    epochs = {m: 0 for m in members}
    for _ in range(rounds):
        for m in members:
            r = h.hb(m, epochs[m], owned=owned[m], partial=epochs[m] != 0)
            assert r.error == E.NONE, r
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                owned[m] = h.named(r.assignment)
    return owned


def test_uniform_and_range_assignors_reach_a_stable_disjoint_assignment():
    from kcoord.coordinator import GroupCoordinator
    from kcoord.coordinator.assignors import assignors
    for name in ("uniform", "range"):
        h = ConsumerHarness(Topics(t=4))
        h.c = GroupCoordinator(h.timer, h.c.config, h.topics, h.c.bus, assignors=assignors)
        h.c.record_sink = h
        owned = _converge(h, ["a", "b"])
        h.hb("a", h.group().members["a"].member_epoch, owned=owned["a"], partial=True, assignor=name)
        owned = _converge(h, ["a", "b"])
        assert h.group().state is CS.STABLE, name
        got = sorted(p for m in owned.values() for p in m.get("t", []))
        assert got == [0, 1, 2, 3] and all(len(m.get("t", [])) == 2 for m in owned.values()), (name, owned)


def test_an_assignor_failure_leaves_the_group_as_it_was():
    from kcoord.coordinator.assignors.spec import AssignorError

    class Failing:
        name = "uniform"

        def assign(self, members, topics, subscription_type=None):
            raise AssignorError("no way")

    h = ConsumerHarness()
    h.hb("m1", 0)
    before = (h.group().group_epoch, set(h.group().members))
    h.c.consumer._assignors = lambda: {"uniform": Failing(), "range": Failing()}
    r = h.hb("m2", 0)
    assert r.error == E.UNKNOWN_SERVER_ERROR and r.message.endswith(": no way")
    assert (h.group().group_epoch, set(h.group().members)) == before
    assert not any(e.member_id == "m2" for e in h.events)


def test_a_fault_hook_fences_a_consumer_group_member():
    h = ConsumerHarness()
    two_members_stable(h)
    assert h.c.expire_member_now("g", "m2") is True
    assert "m2" not in h.group().members and h.group().state is CS.ASSIGNING
    assert h.c.expire_member_now("g", "m2") is False
    r = h.hb("m2", 3, owned={"t": [1, 3]}, partial=True)
    assert r.error == E.UNKNOWN_MEMBER_ID   # fenced: it must rejoin with epoch 0


def test_a_member_read_back_in_an_unknown_state_starts_again_once_it_owns_nothing():
    from kcoord.coordinator.consumer.snapshot import snapshot
    h = ConsumerHarness()
    two_members_stable(h)
    value = snapshot(h.group())
    for m in value["members"]:
        if m["member_id"] == "m1":
            m["state"] = "some_future_state"
    h2 = ConsumerHarness(h.topics)
    h2.c.load_consumer_group(value)
    assert h2.group().members["m1"].state is MemberState.UNKNOWN
    r = h2.hb("m1", 3, owned={"t": [0, 2]}, partial=True)
    assert (r.error, r.message) == (E.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                                                          "The member must abandon all its partitions and rejoin.")
    assert h2.group().members["m1"].state is MemberState.UNKNOWN
    r = h2.hb("m1", 3, owned={}, partial=True)
    assert (r.error, r.member_epoch) == (E.NONE, 3)
    assert h2.group().members["m1"].state is MemberState.STABLE
