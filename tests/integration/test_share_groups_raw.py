"""Share groups (KIP-932) over real sockets with raw requests, kcoord only: ShareGroupHeartbeat
(76 v1) joining with the member id the client made, the partitions assigned at the heartbeat after
the join (as on Kafka), ShareGroupDescribe (77 v1), ListGroups type "share", the other group APIs'
answers for a share group, DeleteGroups, and the group read back from __consumer_offsets after a
kill -9 of `kcoord serve --data-dir` and by the broker taking over from its coordinator's."""
from __future__ import annotations

import time
import uuid

import pytest

from kcoord.protocol_client import Admin, Connection
from kcoord.testing.brokers import create_topic
from kcoord.testing.failover import KcoordCluster
from kcoord.testing.reference_kafka import free_port
from kcoord.testing.serve_process import kill, serve
from wire.errors import ErrorCode

pytestmark = pytest.mark.integration

HEARTBEAT, DESCRIBE, LIST_GROUPS, DELETE_GROUPS, DESCRIBE_GROUPS, OFFSET_FETCH = 76, 77, 16, 42, 15, 9


def _hb(conn, group: str, member: str, epoch: int, topics=None):
    answer = conn.call(HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": epoch,
                                      "rack_id": None, "subscribed_topic_names": topics})
    parts = None
    if answer.assignment is not None:
        parts = {str(t.topic_id): sorted(t.partitions) for t in answer.assignment.topic_partitions}
    return ErrorCode(answer.error_code), answer.error_message, answer.member_epoch, parts


def _describe(conn, group: str):
    return conn.call(DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False}).groups[0]


# As on Kafka, a target assignment is computed at most once per group.share.assignment.interval.ms
# (1 s by default): 0 lets the heartbeat right after the join get the partitions.
AT_ONCE = {"group_share_assignment_interval_ms": 0}


def _join_and_settle(conn, group: str, member: str, topic: str) -> int:
    error, _, epoch, parts = _hb(conn, group, member, 0, [topic])
    assert (error, epoch, parts) == (ErrorCode.NONE, 2, {})   # a new group is at 1; nothing assignable yet
    error, _, epoch, parts = _hb(conn, group, member, epoch)
    assert error is ErrorCode.NONE and epoch == 3 and list(parts.values()) == [[0, 1]]
    return epoch


@pytest.mark.kcoord(**AT_ONCE)
def test_join_assign_describe_list_and_delete_a_share_group(kcoord_server):
    group, topic = f"sg-{uuid.uuid4().hex[:8]}", f"sgt-{uuid.uuid4().hex[:8]}"
    create_topic(kcoord_server.bootstrap, topic, 2)
    member = str(uuid.uuid4())
    with Connection.to(kcoord_server.bootstrap, 10.0) as conn:
        assert _hb(conn, group, "", 0, [topic])[:2] == (ErrorCode.INVALID_REQUEST, None)   # no message, as Kafka
        epoch = _join_and_settle(conn, group, member, topic)

        d = _describe(conn, group)
        assert (ErrorCode(d.error_code), d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == \
            (ErrorCode.NONE, "Stable", 3, 3, "simple")
        [m] = d.members
        assert (m.member_id, m.member_epoch, list(m.subscribed_topic_names)) == (member, 3, [topic])
        assert m.client_host.startswith("/127.0.0.1")
        assert [(t.topic_name, sorted(t.partitions)) for t in m.assignment.topic_partitions] == [(topic, [0, 1])]
        unknown = _describe(conn, f"{group}-none")
        assert (ErrorCode(unknown.error_code), unknown.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                          f"Group {group}-none not found.")

        listed = conn.call(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]}).groups
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed
                if g.group_id == group] == [(group, "share", "Stable", "share")]
        assert all(g.group_id != group for g in conn.call(LIST_GROUPS, 5, {"states_filter": ["Empty"],
                                                                         "types_filter": ["share"]}).groups)
        classic = conn.call(DESCRIBE_GROUPS, 6, {"groups": [group], "include_authorized_operations": False}).groups[0]
        assert (ErrorCode(classic.error_code), classic.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                          f"Group {group} is not a classic group.")
        fetched = conn.call(OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}],
                                              "require_stable": False}).groups[0]
        assert ErrorCode(fetched.error_code) is ErrorCode.GROUP_ID_NOT_FOUND

        deleted = conn.call(DELETE_GROUPS, 2, {"groups_names": [group]}).results
        assert [(r.group_id, ErrorCode(r.error_code)) for r in deleted] == [(group, ErrorCode.NON_EMPTY_GROUP)]
        assert _hb(conn, group, member, -1)[:3] == (ErrorCode.NONE, None, -1)
        assert _describe(conn, group).group_state == "Empty"
        deleted = conn.call(DELETE_GROUPS, 2, {"groups_names": [group]}).results
        assert [(r.group_id, ErrorCode(r.error_code)) for r in deleted] == [(group, ErrorCode.NONE)]
        assert ErrorCode(_describe(conn, group).error_code) is ErrorCode.GROUP_ID_NOT_FOUND
        assert _hb(conn, group, member, epoch)[:2] == (ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group} not found.")


def test_a_share_group_comes_back_as_it_was_after_kill_9_of_kcoord(tmp_path):
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    group, topic = f"sg-{uuid.uuid4().hex[:8]}", f"sgt-{uuid.uuid4().hex[:8]}"
    data, log = tmp_path / "data", open(tmp_path / "kcoord.log", "a")
    extra = ["--config", "group.share.assignment.interval.ms=0"]
    server = serve(data, port, extra=extra, log=log)
    try:
        create_topic(bootstrap, topic, 2)
        member = str(uuid.uuid4())
        with Connection.to(bootstrap, 10.0) as conn:
            epoch = _join_and_settle(conn, group, member, topic)
            before = _describe(conn, group)
        kill(server)
        server = serve(data, port, extra=extra, log=log)
        with Connection.to(bootstrap, 10.0) as conn:
            after = _describe(conn, group)
            assert (after.group_state, after.group_epoch, after.assignment_epoch) == \
                (before.group_state, before.group_epoch, before.assignment_epoch)
            assert [(m.member_id, m.member_epoch, [(t.topic_name, sorted(t.partitions))
                                                   for t in m.assignment.topic_partitions]) for m in after.members] == \
                [(member, epoch, [(topic, [0, 1])])]
            # The member carries on at its epoch: nothing is reassigned.
            assert _hb(conn, group, member, epoch) == (ErrorCode.NONE, None, epoch, None)
    finally:
        kill(server)
        log.close()


def _view(conn, group: str) -> tuple:
    # Under load a three-broker kcoord may still be loading the group's partition (its leader
    # settling after the start): clients retry COORDINATOR_LOAD_IN_PROGRESS, and so does this.
    deadline = time.monotonic() + 30
    d = _describe(conn, group)
    while d.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and time.monotonic() < deadline:
        time.sleep(0.2)
        d = _describe(conn, group)
    return (ErrorCode(d.error_code), d.group_state, d.group_epoch, d.assignment_epoch,
            [(m.member_id, m.member_epoch, [(t.topic_name, sorted(t.partitions)) for t in m.assignment.topic_partitions])
             for m in d.members])


def test_a_share_group_rides_through_a_kill_of_its_coordinators_broker():
    """A three-broker kcoord; the broker coordinating the group is killed. The broker that leads
    its __consumer_offsets partition next loads the group from the replicated records: the same
    epochs, the member at its epoch with its partitions, and its next heartbeat changes nothing."""
    victim = 0
    with KcoordCluster(kafka_config={"group.share.assignment.interval.ms": "0"}) as cluster:
        [group] = cluster.groups_on(victim, 1, "sg-move")
        topic, member = f"sgt-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
        cluster.create_topic(topic, 2)
        with Admin(cluster.bootstrap, 10) as admin:
            conn = admin.coordinator(group)
            epoch = _join_and_settle(conn, group, member, topic)
            before = _view(conn, group)
        assert before[0] is ErrorCode.NONE and before[4] == [(member, epoch, [(topic, [0, 1])])]
        cluster.kill(victim)
        cluster.wait_coordinator_moved(group, victim)
        with Admin(cluster.bootstrap, 10) as admin:
            conn = admin.coordinator(group)
            assert _view(conn, group) == before
            assert _hb(conn, group, member, epoch) == (ErrorCode.NONE, None, epoch, None)


def test_share_version_0_turns_share_groups_off_as_on_kafka(kcoord_server):
    async def set_level(level: int):
        kcoord_server.app.features.update({"share.version": level})
    kcoord_server.call(lambda: set_level(0))
    group = f"sg-{uuid.uuid4().hex[:8]}"
    with Connection.to(kcoord_server.bootstrap, 10.0) as conn:
        assert _hb(conn, group, str(uuid.uuid4()), 0, ["t"])[0] is ErrorCode.UNSUPPORTED_VERSION
        assert ErrorCode(_describe(conn, group).error_code) is ErrorCode.UNSUPPORTED_VERSION
        kcoord_server.call(lambda: set_level(1))
        assert _hb(conn, group, str(uuid.uuid4()), 0, ["t"])[0] is ErrorCode.NONE
