"""Raw ConsumerGroupHeartbeat requests (KIP-848) over a socket, on kcoord and on the reference
Kafka (`broker_any`): the same error codes, messages and epochs for invalid requests, unknown
members, fenced epochs, joins and leaves."""
import uuid

from kcoord.protocol_client import Connection
from wire.errors import ErrorCode

HEARTBEAT, DESCRIBE = 68, 69


def _member_id() -> str:
    return str(uuid.uuid4())


def _hb(conn, group, member_id, epoch, version=1, **fields):
    body = {"group_id": group, "member_id": member_id, "member_epoch": epoch, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None}
    body.update(fields)
    if version < 1:
        body.pop("subscribed_topic_regex")
    answer = conn.call(HEARTBEAT, version, body)
    return ErrorCode(answer.error_code).name, answer.error_message, answer.member_epoch, answer


def _join(conn, group, member_id, topics):
    return _hb(conn, group, member_id, 0, rebalance_timeout_ms=30000, subscribed_topic_names=topics,
               topic_partitions=[])


def test_invalid_requests_are_refused_as_kafka_refuses_them(broker_any):
    group = f"cg-{uuid.uuid4().hex[:8]}"
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        assert _hb(conn, group, "", 0, rebalance_timeout_ms=30000, subscribed_topic_names=[],
                   topic_partitions=[])[:2] == ("INVALID_REQUEST", "MemberId can't be empty.")
        assert _hb(conn, group, _member_id(), 0, subscribed_topic_names=[], topic_partitions=[])[:2] == \
            ("INVALID_REQUEST", "RebalanceTimeoutMs must be provided in first request.")
        assert _hb(conn, group, _member_id(), 0, rebalance_timeout_ms=30000, subscribed_topic_names=[])[:2] == \
            ("INVALID_REQUEST", "TopicPartitions must be empty when (re-)joining.")
        assert _hb(conn, group, _member_id(), 0, rebalance_timeout_ms=30000, topic_partitions=[])[:2] == \
            ("INVALID_REQUEST", "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                                "(re-)joining.")
        assert _hb(conn, group, _member_id(), -2)[:2] == ("INVALID_REQUEST", "InstanceId can't be null.")
        assert _hb(conn, group, _member_id(), -7)[:2] == ("INVALID_REQUEST", "MemberEpoch is invalid.")
        error, message, _, _ = _hb(conn, group, _member_id(), 0, rebalance_timeout_ms=30000,
                                   subscribed_topic_names=[], topic_partitions=[], server_assignor="no-such-assignor")
        assert error == "UNSUPPORTED_ASSIGNOR"
        assert message.startswith("ServerAssignor no-such-assignor is not supported. Supported assignors: ")


def test_a_join_without_a_subscription_gets_epoch_1(broker_any):
    group = f"cg-{uuid.uuid4().hex[:8]}"
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        error, _, epoch, answer = _join(conn, group, _member_id(), [])
        assert (error, epoch, list(answer.assignment.topic_partitions)) == ("NONE", 1, [])


def test_join_unknown_member_fenced_epoch_and_leave_as_kafka(broker_any):
    # A topic nobody created: a new group starts at epoch 1 and the join bumps it (the
    # subscription changed) to 2; the assignment is empty whatever the assignor.
    group, topic = f"cg-{uuid.uuid4().hex[:8]}", f"cgt-missing-{uuid.uuid4().hex[:8]}"
    member = _member_id()
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        error, message, epoch, answer = _join(conn, group, member, [topic])
        assert (error, message, epoch, answer.member_id) == ("NONE", None, 2, member)
        assert answer.heartbeat_interval_ms == 5000
        assert answer.assignment is not None and list(answer.assignment.topic_partitions) == []
        stranger = _member_id()
        assert _hb(conn, group, stranger, 2)[:2] == (
            "UNKNOWN_MEMBER_ID", f"Member {stranger} is not a member of group {group}.")
        error, message, _, _ = _hb(conn, group, member, 5)
        assert (error, message) == ("FENCED_MEMBER_EPOCH",
                                    "The consumer group member has a greater member epoch (5) than the one known by "
                                    "the group coordinator (2). The member must abandon all its partitions and "
                                    "rejoin.")
        assert _hb(conn, f"{group}-none", member, 2)[:2] == ("GROUP_ID_NOT_FOUND", f"Consumer group {group}-none not found.")
        error, _, epoch, answer = _hb(conn, group, member, -1)
        assert (error, epoch, answer.member_id) == ("NONE", -1, member)
        d = conn.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}).groups[0]
        assert (ErrorCode(d.error_code).name, d.group_state, d.group_epoch, len(d.members)) == ("NONE", "Empty", 3, 0)


def test_list_describe_and_delete_a_consumer_group_as_kafka(broker_any):
    group, member = f"cg-{uuid.uuid4().hex[:8]}", _member_id()
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        assert _join(conn, group, member, [])[0] == "NONE"
        listed = conn.call(16, 5, {"states_filter": [], "types_filter": ["consumer"]})
        mine = [(g.protocol_type, g.group_state, g.group_type) for g in listed.groups if g.group_id == group]
        assert mine == [("consumer", "Stable", "consumer")]
        classic_only = conn.call(16, 5, {"states_filter": [], "types_filter": ["classic"]})
        assert group not in [g.group_id for g in classic_only.groups]
        described = conn.call(15, 6, {"groups": [group], "include_authorized_operations": False}).groups[0]
        assert (ErrorCode(described.error_code).name, described.error_message, described.group_state) == (
            "GROUP_ID_NOT_FOUND", f"Group {group} is not a classic group.", "Dead")
        deleted = conn.call(42, 2, {"groups_names": [group]}).results[0]
        assert ErrorCode(deleted.error_code).name == "NON_EMPTY_GROUP"
        assert _hb(conn, group, member, 1)[0] == "NONE"
        assert _hb(conn, group, member, -1)[0] == "NONE"
        deleted = conn.call(42, 2, {"groups_names": [group]}).results[0]
        assert ErrorCode(deleted.error_code).name == "NONE"
        gone = conn.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}).groups[0]
        assert (ErrorCode(gone.error_code).name, gone.error_message) == ("GROUP_ID_NOT_FOUND", f"Group {group} not found.")


def test_static_member_leave_and_replacement_as_kafka(broker_any):
    group, first, second = f"cg-{uuid.uuid4().hex[:8]}", _member_id(), _member_id()
    with Connection.to(broker_any.bootstrap, 10.0) as conn:
        r = _hb(conn, group, first, 0, instance_id="i-1", rebalance_timeout_ms=30000, subscribed_topic_names=[],
                topic_partitions=[])
        assert r[:3] == ("NONE", None, 1)
        r = _hb(conn, group, second, 0, instance_id="i-1", rebalance_timeout_ms=30000, subscribed_topic_names=[],
                topic_partitions=[])
        assert r[:2] == ("UNRELEASED_INSTANCE_ID", f"Static member {second} with instance id i-1 cannot join the "
                                                   f"group because the instance id is owned by {first} member.")
        assert _hb(conn, group, second, 1, instance_id="i-1")[:2] == (
            "FENCED_INSTANCE_ID", f"Static member {second} with instance id i-1 was fenced by member {first}.")
        r = _hb(conn, group, first, -2, instance_id="i-1")
        assert (r[0], r[2], r[3].member_id) == ("NONE", -2, first)
        r = _hb(conn, group, second, 0, instance_id="i-1", rebalance_timeout_ms=30000, subscribed_topic_names=[],
                topic_partitions=[])
        assert r[:3] == ("NONE", None, 1)
        d = conn.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}).groups[0]
        assert ([(m.member_id, m.instance_id, m.client_host) for m in d.members], d.group_epoch) == (
            [(second, "i-1", "/127.0.0.1")], 1)
