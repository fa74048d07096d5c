"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) request by request, with
kcoord.protocol_client.Connection: what Apache Kafka 4.3.1 answers (error codes, messages,
epochs, the heartbeat interval) is written down here and asserted on both brokers.

Both run with kcoord.testing.consumer_groups.CONSUMER_PROTOCOL_CONFIG (heartbeat interval
1000 ms, session timeout 6000 ms): the [kafka] cases on the consumer_protocol_kafka fixture's
broker, the [kcoord] ones on a server given the same Kafka config names.
"""
from __future__ import annotations

import time
import uuid

import pytest

from kcoord.protocol_client import Admin
from kcoord.testing.consumer_groups import (CONSUMER_PROTOCOL_CONFIG, create_topic, describe, describe_groups, heartbeat,
                                           list_groups, new_member_id, owned_partitions)
from wire.errors import ErrorCode as E

pytestmark = pytest.mark.kcoord(kafka_config=CONSUMER_PROTOCOL_CONFIG)

HEARTBEAT_INTERVAL_MS = int(CONSUMER_PROTOCOL_CONFIG["group.consumer.heartbeat.interval.ms"])
SESSION_S = int(CONSUMER_PROTOCOL_CONFIG["group.consumer.session.timeout.ms"]) / 1000


@pytest.fixture(scope="module")
def reference_kafka(consumer_protocol_kafka):
    return consumer_protocol_kafka


def _names(prefix: str, partitions: int = 3, broker=None) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    group, topic = f"{prefix}-g-{tag}", f"{prefix}-t-{tag}"
    if broker is not None:
        create_topic(broker.bootstrap, topic, partitions)
    return group, topic


class Coordinator:
    """A connection to a group's coordinator: hb(**fields) sends one ConsumerGroupHeartbeat."""

    def __init__(self, broker, group: str):
        self.admin = Admin(broker.bootstrap)
        self.group = group
        self.conn = self.admin.coordinator(group)

    def hb(self, **fields):
        return heartbeat(self.conn, self.group, **fields)

    def join(self, topics, member_id=None, **fields):
        """A first heartbeat (epoch 0) that succeeds; the answer."""
        answer = self.hb(member_id=member_id or new_member_id(), member_epoch=0, rebalance_timeout_ms=30000,
                         topics=topics, **fields)
        assert answer.error_code == 0, (E(answer.error_code).name, answer.error_message)
        return answer

    def close(self):
        self.admin.close()


@pytest.fixture
def coordinator(broker_any):
    made = []

    def make(group):
        c = Coordinator(broker_any, group)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def _error(answer) -> tuple[str, str | None]:
    return E(answer.error_code).name, answer.error_message


# ---------------------------------------------------------------- a first heartbeat that succeeds
def test_first_heartbeat_joins_with_every_partition_and_the_heartbeat_interval(broker_any, coordinator):
    group, topic = _names("cp-join", 3, broker_any)
    c = coordinator(group)
    member = new_member_id()
    answer = c.join([topic], member_id=member)
    # Kafka 4.3.1 bumps a new group to epoch 2 for its first member ("Bumped group epoch to 2").
    assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms) == (member, 2, HEARTBEAT_INTERVAL_MS)
    [tp] = answer.assignment.topic_partitions
    assert sorted(tp.partitions) == [0, 1, 2]
    view = describe(broker_any.bootstrap, group)
    assert (view.error_code, view.state, view.group_epoch, view.assignment_epoch) == (0, "Stable", 2, 2)
    assert view.assignor == "uniform"
    [m] = view.members
    # SubscribedTopicRegex is "" (not null) for a member subscribed by names; MemberType 1: consumer.
    assert (m["member_id"], m["member_epoch"], m["topics"], m["regex"], m["type"]) == (member, 2, [topic], "", 1)
    assert m["assignment"] == m["target"] == [(topic, 0), (topic, 1), (topic, 2)]
    assert m["client_id"] == "kcoord-cli"


def test_an_empty_subscription_joins_at_epoch_1_with_nothing(broker_any, coordinator):
    group, _ = _names("cp-empty")
    answer = coordinator(group).join([])
    assert (answer.member_epoch, answer.heartbeat_interval_ms) == (1, HEARTBEAT_INTERVAL_MS)
    assert answer.assignment.topic_partitions == []


def test_a_heartbeat_that_acknowledges_keeps_the_epoch_and_sends_no_assignment(broker_any, coordinator):
    group, topic = _names("cp-ack", 2, broker_any)
    c = coordinator(group)
    first = c.join([topic])
    again = c.hb(member_id=first.member_id, member_epoch=first.member_epoch, owned=owned_partitions(first.assignment))
    assert _error(again) == ("NONE", None)
    assert (again.member_id, again.member_epoch, again.heartbeat_interval_ms) == (
        first.member_id, first.member_epoch, HEARTBEAT_INTERVAL_MS)
    assert again.assignment is None  # unchanged: not sent again
    # Rejoining at epoch 0 with the same member id: the member's epoch and assignment again.
    rejoin = c.hb(member_id=first.member_id, member_epoch=0, rebalance_timeout_ms=30000, topics=[topic])
    assert _error(rejoin) == ("NONE", None)
    assert rejoin.member_epoch == first.member_epoch
    assert owned_partitions(rejoin.assignment) == owned_partitions(first.assignment)


def test_the_member_id_is_the_brokers_at_version_0_and_the_clients_from_version_1(broker_any, coordinator):
    group, topic = _names("cp-v0", 1, broker_any)
    c = coordinator(group)
    answer = c.hb(member_id="", member_epoch=0, rebalance_timeout_ms=30000, topics=[topic], version=0)
    assert _error(answer) == ("NONE", None)
    assert len(answer.member_id) == 22  # a Uuid, base64url
    assert answer.member_epoch == 2


@pytest.mark.parametrize("timeout_ms", [0, 1])
def test_any_rebalance_timeout_from_0_is_taken(broker_any, coordinator, timeout_ms):
    group, topic = _names("cp-rt", 1, broker_any)
    answer = coordinator(group).hb(member_id=new_member_id(), member_epoch=0, rebalance_timeout_ms=timeout_ms,
                                   topics=[topic])
    assert _error(answer) == ("NONE", None)


def test_names_and_a_regex_together_are_taken(broker_any, coordinator):
    group, topic = _names("cp-both", 1, broker_any)
    answer = coordinator(group).hb(member_id=new_member_id(), member_epoch=0, rebalance_timeout_ms=30000,
                                   topics=[topic], regex="cp-none-.*")
    assert _error(answer) == ("NONE", None)


# ---------------------------------------------------------------- invalid requests
@pytest.mark.parametrize("case, fields, expected", [
    ("empty group id", {"group": ""}, ("INVALID_REQUEST", "GroupId can't be empty.")),
    ("empty member id", {"member_id": ""}, ("INVALID_REQUEST", "MemberId can't be empty.")),
    ("blank member id", {"member_id": "  "}, ("INVALID_REQUEST", "MemberId can't be empty.")),
    ("empty instance id", {"instance_id": ""}, ("INVALID_REQUEST", "InstanceId can't be empty.")),
    ("empty rack id", {"rack_id": ""}, ("INVALID_REQUEST", "RackId can't be empty.")),
    ("no subscription", {"topics": None},
     ("INVALID_REQUEST", "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")),
    ("no rebalance timeout", {"rebalance_timeout_ms": -1},
     ("INVALID_REQUEST", "RebalanceTimeoutMs must be provided in first request.")),
    ("owned partitions", {"owned": "some"}, ("INVALID_REQUEST", "TopicPartitions must be empty when (re-)joining.")),
    ("null owned partitions", {"owned": None},
     ("INVALID_REQUEST", "TopicPartitions must be empty when (re-)joining.")),
    ("epoch -3", {"member_epoch": -3}, ("INVALID_REQUEST", "MemberEpoch is invalid.")),
    ("static leave without an instance id", {"member_epoch": -2}, ("INVALID_REQUEST", "InstanceId can't be null.")),
    ("unknown assignor", {"server_assignor": "no-such-assignor"},
     ("UNSUPPORTED_ASSIGNOR", "ServerAssignor no-such-assignor is not supported. Supported assignors: uniform, range.")),
    ("invalid regex", {"topics": None, "regex": "[unclosed"},
     ("INVALID_REGULAR_EXPRESSION", "SubscribedTopicRegex `[unclosed` is not a valid regular expression: "
                                    "missing closing ].")),
])
def test_invalid_heartbeats(broker_any, coordinator, case, fields, expected):
    group, topic = _names("cp-bad", 1, broker_any)
    c = coordinator(group)
    fields = dict(fields)  # the parameters are shared by both brokers' cases
    c.group = fields.pop("group", group)
    body = {"member_id": new_member_id(), "member_epoch": 0, "rebalance_timeout_ms": 30000, "topics": [topic]}
    if fields.get("owned") == "some":
        fields["owned"] = [{"topic_id": uuid.uuid4(), "partitions": [0]}]
    body.update(fields)
    answer = c.hb(**body)
    assert _error(answer) == expected, case
    assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms, answer.assignment) == (None, 0, 0, None)
    assert describe(broker_any.bootstrap, group).error_code == E.GROUP_ID_NOT_FOUND  # nothing was created


# ---------------------------------------------------------------- a member's epoch and id
def test_unknown_member_id_with_an_epoch(broker_any, coordinator):
    group, topic = _names("cp-unknown", 1, broker_any)
    c = coordinator(group)
    c.join([topic])
    stranger = new_member_id()
    answer = c.hb(member_id=stranger, member_epoch=1)
    assert _error(answer) == ("UNKNOWN_MEMBER_ID", f"Member {stranger} is not a member of group {group}.")
    gone = c.hb(member_id=stranger, member_epoch=-1)
    assert _error(gone) == ("UNKNOWN_MEMBER_ID", f"Member {stranger} is not a member of group {group}.")


def test_heartbeats_to_an_unknown_group(broker_any, coordinator):
    group, _ = _names("cp-nogroup")
    c = coordinator(group)
    answer = c.hb(member_id=new_member_id(), member_epoch=1)
    assert _error(answer) == ("GROUP_ID_NOT_FOUND", f"Consumer group {group} not found.")
    leave = c.hb(member_id=new_member_id(), member_epoch=-1)  # worded differently
    assert _error(leave) == ("GROUP_ID_NOT_FOUND", f"Group {group} not found.")


def test_a_wrong_epoch_is_fenced(broker_any, coordinator):
    group, topic = _names("cp-fenced", 2, broker_any)
    c = coordinator(group)
    first = c.join([topic])
    epoch = first.member_epoch
    ahead = c.hb(member_id=first.member_id, member_epoch=epoch + 4)
    assert _error(ahead) == ("FENCED_MEMBER_EPOCH",
                             f"The consumer group member has a greater member epoch ({epoch + 4}) than the one known by "
                             f"the group coordinator ({epoch}). The member must abandon all its partitions and rejoin.")
    behind = c.hb(member_id=first.member_id, member_epoch=epoch - 1)
    assert _error(behind) == ("FENCED_MEMBER_EPOCH",
                              f"The consumer group member has a smaller member epoch ({epoch - 1}) than the one known "
                              f"by the group coordinator ({epoch}). The member must abandon all its partitions and "
                              f"rejoin.")
    assert (ahead.member_id, ahead.member_epoch, ahead.heartbeat_interval_ms) == (None, 0, 0)
    # A fenced request changes nothing: the member is still there at its epoch.
    [m] = describe(broker_any.bootstrap, group).members
    assert (m["member_id"], m["member_epoch"]) == (first.member_id, epoch)


def test_leave_with_epoch_minus_1(broker_any, coordinator):
    group, topic = _names("cp-leave", 2, broker_any)
    c = coordinator(group)
    first = c.join([topic])
    gone = c.hb(member_id=first.member_id, member_epoch=-1)
    assert _error(gone) == ("NONE", None)
    assert (gone.member_id, gone.member_epoch, gone.heartbeat_interval_ms, gone.assignment) == (
        first.member_id, -1, 0, None)
    view = describe(broker_any.bootstrap, group)
    assert (view.state, view.group_epoch, view.assignment_epoch, view.size) == (
        "Empty", first.member_epoch + 1, first.member_epoch, 0)
    again = c.hb(member_id=first.member_id, member_epoch=-1)
    assert _error(again) == ("UNKNOWN_MEMBER_ID", f"Member {first.member_id} is not a member of group {group}.")


def test_static_member_leave_with_epoch_minus_2_keeps_its_place(broker_any, coordinator):
    group, topic = _names("cp-static", 2, broker_any)
    c = coordinator(group)
    first = c.join([topic], instance_id="inst-1")
    epoch = first.member_epoch
    gone = c.hb(member_id=first.member_id, member_epoch=-2, instance_id="inst-1")
    assert _error(gone) == ("NONE", None)
    assert (gone.member_id, gone.member_epoch, gone.heartbeat_interval_ms) == (first.member_id, -2, 0)
    view = describe(broker_any.bootstrap, group)
    # The static member stays until its session times out.
    assert (view.state, view.group_epoch, view.size) == ("Reconciling", epoch, 1)
    [m] = view.members
    assert (m["member_id"], m["instance_id"], m["member_epoch"]) == (first.member_id, "inst-1", -2)
    assert m["assignment"] == m["target"] == [(topic, 0), (topic, 1)]  # kept for its return
    # It comes back with a new member id at epoch 0: the same assignment and epoch, no new group epoch.
    back = c.join([topic], instance_id="inst-1")
    assert back.member_id != first.member_id
    assert back.member_epoch == epoch
    assert owned_partitions(back.assignment) == owned_partitions(first.assignment)
    view = describe(broker_any.bootstrap, group)
    assert (view.state, view.group_epoch, [m["member_id"] for m in view.members]) == ("Stable", epoch, [back.member_id]), view
    # The old member id is fenced by the new one.
    old = c.hb(member_id=first.member_id, member_epoch=-1, instance_id="inst-1")
    assert _error(old) == ("FENCED_INSTANCE_ID", f"Static member {first.member_id} with instance id inst-1 was "
                                                 f"fenced by member {back.member_id}.")
    unknown = c.hb(member_id=new_member_id(), member_epoch=-2, instance_id="inst-9")
    assert _error(unknown) == ("UNKNOWN_MEMBER_ID", "Instance id inst-9 is unknown.")


def test_a_second_static_member_with_a_live_instance_id_is_refused(broker_any, coordinator):
    group, topic = _names("cp-unreleased", 1, broker_any)
    c = coordinator(group)
    first = c.join([topic], instance_id="inst-1")
    other = new_member_id()
    answer = c.hb(member_id=other, member_epoch=0, rebalance_timeout_ms=30000, topics=[topic], instance_id="inst-1")
    assert _error(answer) == ("UNRELEASED_INSTANCE_ID",
                              f"Static member {other} with instance id inst-1 cannot join the group because the "
                              f"instance id is owned by {first.member_id} member.")


# ---------------------------------------------------------------- regex, session expiry
def test_a_regex_is_resolved_after_the_first_heartbeat(broker_any, coordinator):
    group, topic = _names("cp-rx", 2, broker_any)
    c = coordinator(group)
    first = c.hb(member_id=new_member_id(), member_epoch=0, rebalance_timeout_ms=30000, regex=f"{topic}|nothing")
    assert _error(first) == ("NONE", None)
    # Kafka resolves the regex asynchronously: epoch 1 and nothing, then a later heartbeat gets the topic.
    assert (first.member_epoch, first.assignment.topic_partitions) == (1, [])
    deadline = time.monotonic() + 15
    while True:
        answer = c.hb(member_id=first.member_id, member_epoch=first.member_epoch)
        assert _error(answer) == ("NONE", None)
        if answer.assignment is not None and answer.assignment.topic_partitions:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert answer.member_epoch == 2
    [m] = describe(broker_any.bootstrap, group).members
    assert (m["topics"], m["regex"], m["assignment"]) == ([], f"{topic}|nothing", [(topic, 0), (topic, 1)])


def test_an_assigned_topic_id_resolves_with_metadata_by_id(broker_any, coordinator):
    """What the Java 4.x consumer does with a broker-side regex's assignment (it knows no names):
    Metadata v12+ by topic id, the name left "" (its schema default, not null). Kafka answers
    with the topic; kcoord once looked "" up as a name (UNKNOWN_TOPIC_OR_PARTITION) and the
    client never took its partitions."""
    group, topic = _names("cp-rx-id", 2, broker_any)
    c = coordinator(group)
    first = c.hb(member_id=new_member_id(), member_epoch=0, rebalance_timeout_ms=30000, regex=topic)
    deadline = time.monotonic() + 15
    while True:
        answer = c.hb(member_id=first.member_id, member_epoch=first.member_epoch)
        if answer.assignment is not None and answer.assignment.topic_partitions:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    [tp] = answer.assignment.topic_partitions
    meta = c.admin.bootstrap_conn if hasattr(c.admin, "bootstrap_conn") else c.conn
    unknown = uuid.uuid4()
    resp = meta.call(3, 12, {"topics": [{"name": "", "topic_id": tp.topic_id}, {"name": "", "topic_id": unknown}],
                             "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    found = {t.topic_id: (E(t.error_code).name, t.name, sorted(p.partition_index for p in t.partitions))
             for t in resp.topics}
    assert found[tp.topic_id] == ("NONE", topic, [0, 1])
    assert found[unknown][0] == "UNKNOWN_TOPIC_ID"


def test_a_silent_member_expires_after_the_session_timeout(broker_any, coordinator):
    group, topic = _names("cp-expire", 1, broker_any)
    c = coordinator(group)
    first = c.join([topic])
    began = time.monotonic()
    while describe(broker_any.bootstrap, group).size:
        assert time.monotonic() - began < SESSION_S + 5
        time.sleep(0.1)
    took = time.monotonic() - began
    assert SESSION_S - 0.5 <= took <= SESSION_S + 2, took  # Kafka: 6.1 s
    view = describe(broker_any.bootstrap, group)
    assert (view.state, view.group_epoch) == ("Empty", first.member_epoch + 1)
    late = c.hb(member_id=first.member_id, member_epoch=first.member_epoch)
    assert _error(late) == ("UNKNOWN_MEMBER_ID", f"Member {first.member_id} is not a member of group {group}.")


# ---------------------------------------------------------------- ConsumerGroupDescribe, DescribeGroups, ListGroups
def test_describe_an_unknown_group(broker_any):
    group, _ = _names("cp-describe")
    view = describe(broker_any.bootstrap, group)
    assert (view.error_code, view.error_message) == (E.GROUP_ID_NOT_FOUND, f"Group {group} not found.")


def test_classic_apis_on_a_consumer_group(broker_any, coordinator):
    group, topic = _names("cp-classic", 1, broker_any)
    coordinator(group).join([topic])
    classic = describe_groups(broker_any.bootstrap, group)
    assert (classic.error_code, classic.error_message, classic.group_state) == (
        E.GROUP_ID_NOT_FOUND, f"Group {group} is not a classic group.", "Dead")
    assert list_groups(broker_any.bootstrap, types=["consumer"])[group] == {
        "protocol_type": "consumer", "state": "Stable", "type": "consumer"}
    assert group not in list_groups(broker_any.bootstrap, types=["classic"])


# ---------------------------------------------------------------- online migration, request by request
# Kafka 4.3.1's default group.consumer.migration.policy (bidirectional): classic members inside a
# consumer group, the upgrade of a classic group and its downgrade, answer by answer.
JOIN, SYNC, HEARTBEAT, LEAVE = 11, 14, 12, 13


def _subscription(topics, owned=(), version=1) -> bytes:
    import struct

    from wire import codec
    body = {"topics": list(topics), "user_data": None,
            "owned_partitions": [{"topic": t, "partitions": list(ps)} for t, ps in owned]}
    return struct.pack(">h", version) + codec.compiled_message("ConsumerProtocolSubscription", version).encode(body)


def _assignment(parts, user_data=None) -> bytes:
    import struct

    from wire import codec
    return struct.pack(">h", 0) + codec.compiled_message("ConsumerProtocolAssignment", 0).encode(
        {"assigned_partitions": [{"topic": t, "partitions": ps} for t, ps in parts.items()], "user_data": user_data})


def _partitions(assignment: bytes) -> list[tuple[str, int]]:
    from kcoord.protocol_client import consumer_assignment
    return sorted(consumer_assignment(assignment))


class Classic:
    """One classic member on a raw connection: JoinGroup v5, SyncGroup v5, Heartbeat v3, LeaveGroup v3."""

    def __init__(self, coordinator: Coordinator, protocols=None, topic=None):
        self.conn, self.group = coordinator.conn, coordinator.group
        self.protocols = protocols or [("range", _subscription([topic]))]
        self.member_id, self.generation = "", -1

    def join(self, owned=(), topic=None, raw=False):
        protocols = self.protocols if not owned else [(n, _subscription([topic], owned)) for n, _ in self.protocols]
        answer = self.conn.call(JOIN, 5, {
            "group_id": self.group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 30000,
            "member_id": self.member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": n, "metadata": m} for n, m in protocols]})
        if answer.error_code == E.MEMBER_ID_REQUIRED and not raw:
            self.member_id = answer.member_id
            return self.join(owned, topic)
        if answer.error_code == 0:
            self.member_id, self.generation = answer.member_id, answer.generation_id
        return answer

    def sync(self, assignments=None, name="range", generation=None):
        return self.conn.call(SYNC, 5, {
            "group_id": self.group, "generation_id": self.generation if generation is None else generation,
            "member_id": self.member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocol_name": name, "assignments": [{"member_id": m, "assignment": a}
                                                   for m, a in (assignments or {}).items()]})

    def heartbeat(self, generation=None, member_id=None):
        return self.conn.call(HEARTBEAT, 3, {
            "group_id": self.group, "generation_id": self.generation if generation is None else generation,
            "member_id": member_id or self.member_id, "group_instance_id": None}).error_code


def _types(broker, group) -> dict[str, tuple[int, int]]:
    return {m["member_id"]: (m["type"], m["member_epoch"]) for m in describe(broker.bootstrap, group).members}


def test_a_classic_member_inside_a_consumer_group(broker_any, coordinator):
    group, topic = _names("cp-mig-in", 3, broker_any)
    c = coordinator(group)
    a = c.join([topic])
    assert (a.member_epoch, [p for t in owned_partitions(a.assignment) for p in t["partitions"]]) == (2, [0, 1, 2])
    classic = Classic(c, topic=topic)
    first = classic.join(raw=True)
    assert (E(first.error_code).name, len(first.member_id)) == ("MEMBER_ID_REQUIRED", 22)   # a Uuid
    classic.member_id = first.member_id
    joined = classic.join()
    # Answered at once, as a follower, with the member epoch as generation. The group epoch moved to
    # 3, but within group.consumer.assignment.interval.ms (1 s) of A's target no new one is
    # computed: the member reconciles to the target of epoch 2, which gives it nothing.
    assert (joined.error_code, joined.generation_id, joined.leader, joined.protocol_name, list(joined.members)) == (
        0, 2, "", "range", [])
    synced = classic.sync()
    assert (synced.error_code, synced.protocol_type, synced.protocol_name, _partitions(synced.assignment)) == (
        0, "consumer", "range", [])
    assert E(classic.heartbeat()).name == "NONE"                       # at the assignment epoch
    assert _types(broker_any, group) == {a.member_id: (1, 2), classic.member_id: (0, 2)}
    time.sleep(1.2)   # past the assignment interval: A's next heartbeat computes the target of epoch 3
    # A revokes what the target takes from it; then the classic member is told to rejoin for it.
    owned = [{"topic_id": t["topic_id"], "partitions": t["partitions"]} for t in owned_partitions(a.assignment)]
    r = c.hb(member_id=a.member_id, member_epoch=2, owned=owned)
    kept = owned_partitions(r.assignment)
    r = c.hb(member_id=a.member_id, member_epoch=2, owned=kept)
    assert r.member_epoch == 3
    assert E(classic.heartbeat()).name == "REBALANCE_IN_PROGRESS"
    assert classic.join().generation_id == 3
    mine = _partitions(classic.sync().assignment)
    assert mine and sorted([p for _, p in mine] + [p for t in kept for p in t["partitions"]]) == [0, 1, 2]
    assert E(classic.heartbeat()).name == "NONE"
    # What a classic member is refused.
    assert E(classic.heartbeat(generation=4)).name == "ILLEGAL_GENERATION"
    assert E(classic.heartbeat(member_id=a.member_id)).name == "UNKNOWN_MEMBER_ID"   # not a classic member
    assert E(classic.sync(name="roundrobin").error_code).name == "INCONSISTENT_GROUP_PROTOCOL"
    assert E(classic.sync(generation=2).error_code).name == "ILLEGAL_GENERATION"
    other = Classic(c, protocols=[("roundrobin", _subscription([topic]))])
    assert E(other.join().error_code).name == "INCONSISTENT_GROUP_PROTOCOL"
    left = c.conn.call(LEAVE, 3, {"group_id": group, "members": [
        {"member_id": classic.member_id, "group_instance_id": None},
        {"member_id": "ghost", "group_instance_id": None}]})
    assert (left.error_code, [(m.member_id, E(m.error_code).name) for m in left.members]) == (
        0, [(classic.member_id, "NONE"), ("ghost", "UNKNOWN_MEMBER_ID")])
    assert list(_types(broker_any, group)) == [a.member_id]
    assert list_groups(broker_any.bootstrap)[group]["type"] == "consumer"


def test_upgrade_and_downgrade_answer_by_answer(broker_any, coordinator):
    group, topic = _names("cp-mig-up", 3, broker_any)
    c = coordinator(group)
    classic = Classic(c, topic=topic)
    assert classic.join().generation_id == 1
    assert classic.sync({classic.member_id: _assignment({topic: [0, 1, 2]})}).error_code == 0
    a = c.join([topic])
    # Upgraded: the classic member at epoch = generation 1, owning its assignment; the new
    # member bumped the group epoch to 2 and waits for what the classic member still holds.
    assert (a.member_epoch, owned_partitions(a.assignment)) == (2, [])
    assert _types(broker_any, group) == {classic.member_id: (0, 1), a.member_id: (1, 2)}
    view = describe(broker_any.bootstrap, group)
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Reconciling", 2, 2)
    assert list_groups(broker_any.bootstrap)[group]["type"] == "consumer"
    assert E(classic.heartbeat()).name == "REBALANCE_IN_PROGRESS"
    # A cooperative rejoin reporting what it owns: it must revoke first, at its epoch.
    answer = classic.join(owned=[(topic, [0, 1, 2])], topic=topic)
    assert answer.generation_id == 1
    kept = _partitions(classic.sync().assignment)
    assert 0 < len(kept) < 3
    assert E(classic.heartbeat()).name == "REBALANCE_IN_PROGRESS"      # still revoking
    answer = classic.join(owned=[(topic, [p for _, p in kept])], topic=topic)
    assert answer.generation_id == 2 and _partitions(classic.sync().assignment) == kept
    # The consumer-protocol member leaves: a classic group again, at generation = group epoch,
    # rebalancing; the classic member rejoins into generation 3.
    assert c.hb(member_id=a.member_id, member_epoch=-1).error_code == 0
    assert list_groups(broker_any.bootstrap)[group]["type"] == "classic"
    d = describe_groups(broker_any.bootstrap, group)
    assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data, [m.member_id for m in d.members]) == (
        0, "PreparingRebalance", "consumer", "", [classic.member_id])
    assert E(classic.heartbeat(generation=2)).name == "REBALANCE_IN_PROGRESS"
    rejoined = classic.join(owned=[(topic, [p for _, p in kept])], topic=topic)
    assert (rejoined.error_code, rejoined.generation_id, rejoined.leader) == (0, 3, classic.member_id)


@pytest.mark.parametrize("case", ["user data", "malformed"])
def test_refused_upgrades(broker_any, coordinator, case):
    group, topic = _names("cp-mig-no", 3, broker_any)
    c = coordinator(group)
    protocols = [("range", b"\x00\x01\x00") if case == "malformed" else ("range", _subscription([topic]))]
    classic = Classic(c, protocols=protocols)
    assert classic.join().error_code == 0
    user_data = b"custom" if case == "user data" else None
    assert classic.sync({classic.member_id: _assignment({topic: [0, 1, 2]}, user_data)}).error_code == 0
    answer = c.hb(member_id=new_member_id(), member_epoch=0, rebalance_timeout_ms=30000, topics=[topic])
    why = ("an unsupported custom assignor is in use. Please refer to the documentation or switch to a default "
           "assignor before re-attempting the upgrade." if case == "user data"
           else "the embedded consumer protocol is malformed.")
    assert _error(answer) == ("GROUP_ID_NOT_FOUND",
                              f"Cannot upgrade classic group {group} to consumer group because {why}")
    assert list_groups(broker_any.bootstrap)[group]["type"] == "classic"
