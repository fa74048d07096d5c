"""Fault rules that stop or kill a broker of a three-broker kcoord when a request matches
(kill_broker, stop_broker): which broker goes, what the client that sent the request sees, and
the rules refused because they could never fire."""
from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kcoord.faults import FaultRuleError
from kcoord.protocol_client import Connection, ProtocolError
from kcoord.testing import brokers as kb
from kcoord.testing.plugin import KcoordHandle, start_server

FIND, COMMIT, METADATA = 10, 8, 3


@pytest.fixture
def cluster():
    handle = KcoordHandle(start_server(brokers=3, default_replication_factor=3, http_host="127.0.0.1"))
    yield handle
    handle._thread.stop()


def _find(address: str, group: str) -> int:
    with Connection.to(address) as conn:
        answer = conn.call(FIND, 3, {"key": group, "key_type": 0})
    assert answer.error_code == 0, answer
    return answer.node_id


def _commit_body(group: str, topic: str, offset: int) -> dict:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]}


# Each refused with the one line saying why, on a three-broker kcoord.
NEVER_FIRE = [
    ({"action": "kill_broker", "api": "Metadata", "broker": "coordinator"},
     "Metadata names no group, so kill_broker has no coordinator to act on (broker=coordinator)"),
    ({"action": "stop_broker", "api": "Heartbeat", "broker": 7}, "broker=7: no such broker (brokers: 0, 1, 2)"),
    ({"action": "delay", "delay_ms": 5, "api": "Heartbeat", "broker": 1},
     "broker=1 names the broker stop_broker or kill_broker acts on; delay acts on no broker"),
    ({"action": "kill_broker", "api": "Heartbeat", "broker": "leader"},
     "broker='leader': a broker's node id, or coordinator (the request's group's)"),
]


@pytest.mark.parametrize("spec,why", NEVER_FIRE, ids=[str(s) for s, _ in NEVER_FIRE])
def test_a_broker_rule_that_could_never_fire_is_refused(cluster, spec, why):
    with pytest.raises(FaultRuleError) as refused:
        cluster.fault(**spec)
    assert str(refused.value) == why
    assert cluster.app.faults.list() == []


def test_a_list_with_a_broker_it_does_not_have_adds_none_over_http(cluster):
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(cluster.http_url + "/faults", method="POST", data=json.dumps([
        {"action": "kill_broker", "api": "OffsetCommit"}, {"action": "kill_broker", "api": "Heartbeat", "broker": 3},
    ]).encode())
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    assert json.loads(refused.value.read()) == {"error": "broker=3: no such broker (brokers: 0, 1, 2)"}
    assert cluster.app.faults.list() == []


def test_kill_broker_takes_the_request_down_unanswered_and_the_controller_notices_later():
    handle = KcoordHandle(start_server(manual_clock=True, brokers=3, default_replication_factor=3,
                                       broker_session_timeout_ms=9000, coordinator_load_ms=0))
    try:
        topic, group = f"t-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
        kb.create_topic(handle.brokers[0].bootstrap, topic, 1, replication_factor=3, wait=False)
        coordinator = _find(handle.brokers[0].bootstrap, group)
        handle.fault(action="kill_broker", api="OffsetCommit", group=group, once=True)
        with Connection.to(handle.brokers[coordinator].bootstrap) as conn:
            with pytest.raises((ProtocolError, ConnectionError)):
                conn.call(COMMIT, 8, _commit_body(group, topic, 5))
        [fired] = handle.faults_fired()
        assert (fired["action"], fired["node"], fired["broker"]) == ("kill_broker", coordinator, coordinator)
        killed = handle.brokers[coordinator]
        assert not killed.running and not killed.fenced and handle.committed(group) == {}
        with pytest.raises(ConnectionRefusedError):
            Connection.to(killed.bootstrap)
        # Until its session times out, the controller still names it: FindCoordinator too.
        survivor = handle.brokers[(coordinator + 1) % 3]
        assert _find(survivor.bootstrap, group) == coordinator
        handle.advance(9000)
        assert killed.fenced
        moved = _find(survivor.bootstrap, group)
        assert moved not in (coordinator, -1)
        with Connection.to(handle.brokers[moved].bootstrap) as conn:
            answer = conn.call(COMMIT, 8, _commit_body(group, topic, 5))
        assert answer.topics[0].partitions[0].error_code == 0
        assert handle.committed(group) == {(topic, 0): 5}
    finally:
        handle._thread.stop()


def test_stop_broker_coordinator_from_another_brokers_request_answers_it_after_the_stop(cluster):
    group = f"g-{uuid.uuid4().hex[:6]}"
    coordinator = _find(cluster.brokers[0].bootstrap, group)
    other = cluster.brokers[(coordinator + 1) % 3]
    cluster.fault(action="stop_broker", api="FindCoordinator", group=group, broker="coordinator")
    # A controlled shutdown moves the group's partition before the request is answered: the
    # answer already names the new coordinator, and Metadata no longer lists the stopped broker.
    moved = _find(other.bootstrap, group)
    assert moved not in (coordinator, -1) and cluster.coordinator_of(group) == moved
    assert not cluster.brokers[coordinator].running and cluster.brokers[coordinator].fenced
    [fired] = cluster.faults_fired()
    assert (fired["node"], fired["broker"]) == (other.node_id, coordinator)
    with Connection.to(other.bootstrap) as conn:
        listed = conn.call(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    assert sorted(b.node_id for b in listed.brokers) == sorted({0, 1, 2} - {coordinator})


def test_kafka_python_commits_on_the_next_coordinator_after_a_rule_kills_the_one_it_committed_to():
    handle = KcoordHandle(start_server(brokers=3, default_replication_factor=3, broker_session_timeout_ms=1000))
    try:
        topic, group = f"t-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
        kb.create_topic(handle.brokers[0].bootstrap, topic, 1, replication_factor=3, wait=False)
        consumer = KafkaConsumer(bootstrap_servers=handle.bootstrap, group_id=group, enable_auto_commit=False)
        try:
            consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)})
            first = handle.coordinator_of(group)
            handle.fault(action="kill_broker", api="OffsetCommit", group=group, once=True)
            # The commit's connection dies with its coordinator; the client looks the coordinator
            # up again (the killed one, until the controller fences it, then its successor) and
            # commits there, within the one commit() call.
            consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(2, "", -1)})
        finally:
            consumer.close(autocommit=False)
        assert [f["broker"] for f in handle.faults_fired()] == [first]
        assert handle.brokers[first].fenced and handle.coordinator_of(group) not in (first, -1)
        assert handle.committed(group) == {(topic, 0): 2}
        assert handle.requests_after(handle.faults_fired()[0]["seq"], COMMIT, group) >= 1
    finally:
        handle._thread.stop()


def test_stop_broker_on_the_coordinator_itself_closes_the_request_unanswered(cluster):
    group = f"g-{uuid.uuid4().hex[:6]}"
    coordinator = _find(cluster.brokers[0].bootstrap, group)
    cluster.fault(action="stop_broker", api="JoinGroup", group=group)
    with Connection.to(cluster.brokers[coordinator].bootstrap) as conn:
        with pytest.raises((ProtocolError, ConnectionError)):
            conn.call(11, 5, {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                              "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                              "protocols": [{"name": "range", "metadata": b""}]})
    stopped = cluster.brokers[coordinator]
    assert not stopped.running and stopped.fenced   # a controlled shutdown: fenced at once
    assert cluster.coordinator_of(group) not in (coordinator, -1)
    assert cluster.requests_after(cluster.faults_fired()[0]["seq"], 11, group) == 0


def test_a_rule_naming_a_broker_waits_while_that_broker_is_down(cluster):
    cluster.brokers[2].stop()
    cluster.fault(action="kill_broker", api="Metadata", broker=2)
    with Connection.to(cluster.brokers[0].bootstrap) as conn:
        body = {"topics": [], "allow_auto_topic_creation": False}
        assert sorted(b.node_id for b in conn.call(METADATA, 12, body).brokers) == [0, 1]
        assert cluster.faults_fired() == []   # nothing to kill: the rule did not fire
        cluster.brokers[2].start()
        # Killed before this answer, but the controller counts it in until its session times out.
        assert sorted(b.node_id for b in conn.call(METADATA, 12, body).brokers) == [0, 1, 2]
    [fired] = cluster.faults_fired()
    assert (fired["node"], fired["broker"]) == (0, 2)
    assert not cluster.brokers[2].running and not cluster.brokers[2].fenced
