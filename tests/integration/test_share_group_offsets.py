"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92) over
real sockets with the raw protocol client, against a real kcoord: what a share group's members
acknowledged shows as start offset and lag (v1), an altered start offset is where the next fetch
starts, deleted state is gone; a group with members, an unknown group, a consumer group, ACLs and
share.version 0 get Kafka 4.3.1's answers (KafkaApis, GroupCoordinatorService, GroupMetadataManager).
Kafka's own kafka-share-groups tool on both brokers is test_share_groups_tool.py."""
from __future__ import annotations

import uuid

import pytest

from kcoord.protocol_client import Connection
from kcoord.security.acls import AclFilter, Operation, PatternType, Permission, ResourceType
from kcoord.testing.brokers import create_topic
from tests.integration.test_share_fetch import (ACCEPT, Member, _allow, acquired, make_topic, on_loop, open_session,
                                                produce)
from wire.errors import ErrorCode

pytestmark = [pytest.mark.integration]

ZERO = uuid.UUID(int=0)
NOT_HOSTED = "This server does not host this topic-partition."


@pytest.fixture
def server(kcoord_server):
    """A fresh kcoord; share.version is 1 there, as Kafka 4.3 formats a new cluster."""
    return kcoord_server


def describe(conn, group: str, topics: dict[str, list[int]] | None, version: int = 1):
    wanted = None if topics is None else [{"topic_name": t, "partitions": ps} for t, ps in topics.items()]
    return conn.call(90, version, {"groups": [{"group_id": group, "topics": wanted}]}).groups[0]


def offsets(group) -> dict[tuple[str, int], tuple]:
    """(topic, partition) -> (start offset, lag, error code)."""
    return {(t.topic_name, p.partition_index): (p.start_offset, p.lag, p.error_code)
            for t in group.topics for p in t.partitions}


def alter(conn, group: str, starts: dict[tuple[str, int], int]):
    topics: dict[str, list] = {}
    for (t, p), offset in starts.items():
        topics.setdefault(t, []).append({"partition_index": p, "start_offset": offset})
    return conn.call(91, 0, {"group_id": group, "topics": [{"topic_name": t, "partitions": ps}
                                                           for t, ps in topics.items()]})


def altered(answer) -> dict[tuple[str, int], tuple]:
    return {(t.topic_name, p.partition_index): (p.error_code, p.error_message)
            for t in answer.responses for p in t.partitions}


def delete(conn, group: str, topics: list[str]):
    return conn.call(92, 0, {"group_id": group, "topics": [{"topic_name": t} for t in topics]})


def heartbeat(conn, group: str, member: Member, epoch: int, topics=None):
    answer = conn.call(76, 1, {"group_id": group, "member_id": member.member_id, "member_epoch": epoch,
                               "rack_id": None, "subscribed_topic_names": topics})
    assert answer.error_code == 0, answer
    return answer


def accept_all(server, topic: str, count: int, group: str = "share-g") -> Member:
    """A member of `group` (joined by heartbeat) that acquired and accepted the `count` records
    produced to `topic` after its session opened."""
    pid = (make_topic(server, topic), 0)
    member = Member(server.bootstrap, group=group)
    heartbeat(member.conn, group, member, 0, [topic])
    open_session(member, [pid])
    produce(server, topic, *[f"v{i}".encode() for i in range(count)])
    assert acquired(member.fetch(max_wait_ms=5000), pid) == [(0, count - 1, 1)]
    member.acknowledge({pid: [(0, count - 1, [ACCEPT])]})
    return member


def test_describe_shows_what_the_members_accepted_and_the_lag_at_v1(server):
    member = accept_all(server, "so-describe", 5)
    produce(server, "so-describe", b"x", b"y", b"z")
    with Connection.to(server.bootstrap) as conn:
        v1 = describe(conn, "share-g", {"so-describe": [0]})
        assert (v1.error_code, offsets(v1)) == (0, {("so-describe", 0): (5, 3, 0)})
        assert v1.topics[0].topic_id == on_loop(server, lambda: server.app.broker.topics.get("so-describe").topic_id)
        # v0 has no lag on the wire (a v0 client reads Kafka's default, -1).
        [[v0]] = [t.partitions for t in describe(conn, "share-g", {"so-describe": [0]}, version=0).topics]
        assert (v0.start_offset, v0.error_code, "lag" in v0) == (5, 0, False)
        # Null topics: every share-partition the group has state for.
        assert offsets(describe(conn, "share-g", None)) == {("so-describe", 0): (5, 3, 0)}
        empty = describe(conn, "share-g", {})
        assert (empty.error_code, list(empty.topics)) == (0, [])
        # A partition or topic with no state is no offset information, not an error (as Kafka).
        unknown = describe(conn, "share-g", {"so-describe": [1], "so-nowhere": [0]})
        assert offsets(unknown) == {("so-describe", 1): (-1, -1, 0), ("so-nowhere", 0): (-1, -1, 0)}
        assert {t.topic_name: t.topic_id for t in unknown.topics}["so-nowhere"] == ZERO

        # The member is still in the group: its start offsets stay.
        for answer in (alter(conn, "share-g", {("so-describe", 0): 0}), delete(conn, "share-g", ["so-describe"])):
            assert (answer.error_code, answer.error_message, list(answer.responses)) == \
                (ErrorCode.NON_EMPTY_GROUP, "The group is not empty.", [])
        assert offsets(describe(conn, "share-g", None)) == {("so-describe", 0): (5, 3, 0)}
    member.close()


def test_alter_after_the_member_left_is_where_the_next_fetch_starts(server):
    member = accept_all(server, "so-alter", 6)
    heartbeat(member.conn, "share-g", member, -1)   # leaves: the group is empty
    member.close()
    with Connection.to(server.bootstrap) as conn:
        answer = alter(conn, "share-g", {("so-alter", 0): 2, ("so-alter", 3): 0, ("so-nowhere", 0): 1})
        assert (answer.error_code, answer.error_message) == (0, None)
        assert altered(answer) == {("so-alter", 0): (0, None), ("so-alter", 3): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                                                 NOT_HOSTED),
                                   ("so-nowhere", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)}
        assert {t.topic_name: t.topic_id for t in answer.responses}["so-nowhere"] == ZERO
        assert offsets(describe(conn, "share-g", {"so-alter": [0]})) == {("so-alter", 0): (2, 4, 0)}
    pid = (on_loop(server, lambda: server.app.broker.topics.get("so-alter").topic_id), 0)
    again = Member(server.bootstrap)
    assert acquired(open_session(again, [pid]), pid) == [(2, 5, 1)]   # accepted before, delivered anew
    again.close()


def test_delete_forgets_the_state_of_whole_topics(server):
    member = accept_all(server, "so-delete", 4)
    heartbeat(member.conn, "share-g", member, -1)
    member.close()
    make_topic(server, "so-unfetched")
    with Connection.to(server.bootstrap) as conn:
        answer = delete(conn, "share-g", ["so-delete", "so-unfetched", "so-nowhere"])
        assert (answer.error_code, answer.error_message) == (0, None)
        assert [(t.topic_name, t.error_code, t.error_message) for t in answer.responses] == [
            ("so-delete", 0, None),
            ("so-unfetched", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete."),
            ("so-nowhere", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)]
        everything = describe(conn, "share-g", None)
        assert (everything.error_code, list(everything.topics)) == (0, [])
        assert offsets(describe(conn, "share-g", {"so-delete": [0]})) == {("so-delete", 0): (-1, -1, 0)}
        # Deleted again: nothing left to delete.
        assert [t.error_code for t in delete(conn, "share-g", ["so-delete"]).responses] == \
            [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


def test_delete_groups_deletes_the_share_partition_state(server):
    member = accept_all(server, "so-gone", 3)
    heartbeat(member.conn, "share-g", member, -1)
    member.close()
    with Connection.to(server.bootstrap) as conn:
        deleted = conn.call(42, 2, {"groups_names": ["share-g"]}).results
        assert [(r.group_id, r.error_code) for r in deleted] == [("share-g", 0)]
        assert offsets(describe(conn, "share-g", {"so-gone": [0]})) == {("so-gone", 0): (-1, -1, 0)}
        assert list(describe(conn, "share-g", None).topics) == []


def test_unknown_groups_and_groups_of_another_type(server):
    make_topic(server, "so-types")
    with Connection.to(server.bootstrap) as conn:
        answer = delete(conn, "sg-unknown", ["so-types"])
        assert (answer.error_code, answer.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group sg-unknown not found.")
        # As Kafka's getOrMaybeCreateShareGroup: alter makes an empty share group of an unknown id.
        assert altered(alter(conn, "sg-new", {("so-types", 0): 0})) == {("so-types", 0): (0, None)}
        made = conn.call(77, 1, {"group_ids": ["sg-new"], "include_authorized_operations": False}).groups[0]
        assert (made.error_code, made.group_state) == (0, "Empty")
        assert offsets(describe(conn, "sg-new", None)) == {("so-types", 0): (0, 0, 0)}

        joined = conn.call(68, 0, {"group_id": "cg-1", "member_id": "", "member_epoch": 0, "instance_id": None,
                                   "rack_id": None, "rebalance_timeout_ms": 30000,
                                   "subscribed_topic_names": ["so-types"], "server_assignor": None,
                                   "topic_partitions": []})
        assert joined.error_code == 0, joined
        for answer in (alter(conn, "cg-1", {("so-types", 0): 0}), delete(conn, "cg-1", ["so-types"])):
            assert (answer.error_code, answer.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                 "Group cg-1 is not a share group.")
        # Describe does not look the group up (as Kafka): a consumer group has no share state.
        assert offsets(describe(conn, "cg-1", {"so-types": [0]})) == {("so-types", 0): (-1, -1, 0)}


def test_share_version_zero_refuses_all_three(server):
    make_topic(server, "so-off")
    on_loop(server, lambda: server.app.features.update({"share.version": 0}))
    with Connection.to(server.bootstrap) as conn:
        group = describe(conn, "share-g", None)
        assert (group.error_code, list(group.topics)) == (ErrorCode.UNSUPPORTED_VERSION, [])
        assert alter(conn, "share-g", {("so-off", 0): 0}).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert delete(conn, "share-g", ["so-off"]).error_code == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.kcoord(acls=True)
def test_group_and_topic_acls(server):
    authorizer = server.app.broker.authorizer
    on_loop(server, lambda: authorizer.create([
        _allow(ResourceType.CLUSTER, "kafka-cluster", Operation.CREATE),
        _allow(ResourceType.GROUP, "share-g", Operation.READ),    # ShareFetch, Alter; implies Describe
        _allow(ResourceType.TOPIC, "so-seen", Operation.READ), _allow(ResourceType.TOPIC, "so-hidden", Operation.READ),
        _allow(ResourceType.TOPIC, "so-seen", Operation.DESCRIBE), _allow(ResourceType.TOPIC, "so-seen", Operation.WRITE)]))
    member = accept_all(server, "so-seen", 2)
    heartbeat(member.conn, "share-g", member, -1)
    member.close()
    hidden = Member(server.bootstrap)
    pid = (make_topic(server, "so-hidden"), 0)
    open_session(hidden, [pid])
    hidden.close()
    # Read implies Describe: so-hidden's state is there, then the client may no longer see it.
    on_loop(server, lambda: authorizer.delete([AclFilter(ResourceType.TOPIC, "so-hidden", PatternType.LITERAL, None,
                                                         None, Operation.ANY, Permission.ANY)]))
    create_topic(server.bootstrap, "so-denied", 1, wait=False)
    with Connection.to(server.bootstrap) as conn:
        assert describe(conn, "other-g", None).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        # All topics: those the client may not describe are left out.
        assert set(offsets(describe(conn, "share-g", None))) == {("so-seen", 0)}
        named = describe(conn, "share-g", {"so-seen": [0], "so-hidden": [0]})
        assert offsets(named) == {("so-seen", 0): (2, 0, 0),
                                  ("so-hidden", 0): (-1, -1, ErrorCode.TOPIC_AUTHORIZATION_FAILED)}

        assert alter(conn, "other-g", {("so-seen", 0): 0}).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert altered(alter(conn, "share-g", {("so-seen", 0): 1, ("so-denied", 0): 0})) == {
            ("so-seen", 0): (0, None),
            ("so-denied", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")}
        # Delete needs Delete on the group.
        assert delete(conn, "share-g", ["so-seen"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        on_loop(server, lambda: authorizer.create([_allow(ResourceType.GROUP, "share-g", Operation.DELETE)]))
        answer = delete(conn, "share-g", ["so-seen", "so-denied"])
        assert [(t.topic_name, t.error_code) for t in answer.responses] == [
            ("so-denied", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("so-seen", 0)]
