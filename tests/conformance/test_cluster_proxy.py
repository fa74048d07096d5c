"""The recording proxy for a whole cluster (kcoord.conformance.recorder.ClusterProxy) in front
of a three-broker kcoord: every broker an answer names gets a listener of its own and every
address in answers points at the matching listener; a broker that is down looks down through
its listener (connects refused, connections ended) and up again once it is back; and the
stop of a coordinator's broker reaches a parked JoinGroup as NOT_COORDINATOR."""
from __future__ import annotations

import socket
import time
import uuid

import pytest

from kcoord.conformance.member import subscribe_kafka_python
from kcoord.conformance.recorder import ProxyThread
from kcoord.protocol_client import Connection, ProtocolError
from kcoord.testing.brokers import create_topic
from wire.errors import ErrorCode
from wire.records import build_batch

pytestmark = pytest.mark.kcoord(brokers=3)

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER, PRODUCE, JOIN = 3, 10, 60, 0, 11


@pytest.fixture
def proxies():
    with ProxyThread() as thread:
        yield thread


def _address(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


def _brokers(kcoord_server) -> dict[int, tuple[str, int]]:
    return {b.node_id: _address(b.bootstrap) for b in kcoord_server.brokers}


def _until(condition, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout:g}s")
        time.sleep(0.05)


def _refused(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def _answers(address: tuple[str, int]) -> bool:
    try:
        with Connection(*address, timeout=5):
            return True
    except (OSError, ProtocolError):
        return False


def _coordinator(kcoord_server, group: str) -> int:
    """The broker coordinating `group`, as FindCoordinator tells it straight from the cluster."""
    with Connection.to(kcoord_server.bootstrap) as conn:
        return _until(lambda: (lambda a: a.node_id if a.error_code == 0 else None)(
            conn.call(FIND_COORDINATOR, 3, {"key": group, "key_type": 0})), f"a coordinator for {group}")


def test_every_broker_gets_its_listener_and_every_answer_points_there(kcoord_server, proxies):
    upstream = _brokers(kcoord_server)
    proxy = proxies.cluster(kcoord_server.bootstrap)
    with Connection.to(proxy.bootstrap) as conn:
        metadata = conn.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        again = conn.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        group = f"proxied-{uuid.uuid4().hex[:6]}"
        node = _coordinator(kcoord_server, group)
        find_v3 = conn.call(FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
        find_v4 = conn.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        cluster = conn.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                  "endpoint_type": 1})
    listeners = proxy.brokers
    # One listener per broker, in front of that broker, and a port of its own.
    assert {i: p.upstream for i, p in listeners.items()} == upstream
    advertised = {i: p.address for i, p in listeners.items()}
    assert len(set(advertised.values())) == 3
    assert set(proxy.bootstrap.split(",")) == {f"{h}:{p}" for h, p in advertised.values()}
    # Every answer names the listeners, and the same ones each time.
    for answer in (metadata, again):
        assert {b.node_id: (b.host, b.port) for b in answer.brokers} == advertised
    assert {b.broker_id: (b.host, b.port) for b in cluster.brokers} == advertised
    assert (find_v3.node_id, (find_v3.host, find_v3.port)) == (node, advertised[node])
    [coordinator] = find_v4.coordinators
    assert (coordinator.node_id, (coordinator.host, coordinator.port)) == (node, advertised[node])
    # The transcript keeps what the brokers said, and which broker each exchange went to.
    exchanges = proxy.transcript.sorted()
    meta = next(e for e in exchanges if e["api"] == "Metadata")
    assert {b["node_id"]: (b["host"], b["port"]) for b in meta["response"]["brokers"]} == upstream
    assert all(e["upstream"] == "%s:%d" % upstream[e["broker"]] for e in exchanges if "broker" in e)
    assert {e.get("broker") for e in exchanges if e["api"] == "Metadata"} <= set(upstream)


def test_a_produce_to_a_follower_is_told_the_leaders_listener(kcoord_server, proxies):
    """KIP-951: a NOT_LEADER_OR_FOLLOWER answer names the leader's address (node_endpoints)."""
    topic = f"proxied-{uuid.uuid4().hex[:6]}"
    create_topic(kcoord_server.bootstrap, topic, 1, replication_factor=3, wait=False)
    leader = _until(lambda: (lambda n: n if n >= 0 else None)(kcoord_server.leader(topic, 0)), "a leader")
    follower = next(i for i in range(3) if i != leader)
    proxy = proxies.cluster(kcoord_server.bootstrap)
    with Connection.to(proxy.bootstrap) as conn:
        conn.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    batch = build_batch([(b"k", b"v", int(time.time() * 1000))])
    with Connection(*proxy.brokers[follower].address) as conn:
        answer = conn.call(PRODUCE, 11, {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
                                         "topic_data": [{"name": topic, "partition_data": [
                                             {"index": 0, "records": batch}]}]})
    [partition] = answer.responses[0].partition_responses
    assert partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert partition.current_leader.leader_id == leader
    assert [(n.node_id, (n.host, n.port)) for n in answer.node_endpoints] == \
        [(leader, proxy.brokers[leader].address)]
    recorded = next(e for e in proxy.transcript.sorted() if e["api"] == "Produce")
    assert (recorded["broker"], [(n["host"], n["port"]) for n in recorded["response"]["node_endpoints"]]) == \
        (follower, [_brokers(kcoord_server)[leader]])


def test_a_consumer_stays_on_the_listeners(kcoord_server, proxies):
    from kafka import KafkaConsumer, KafkaProducer

    topic, group = f"proxied-{uuid.uuid4().hex[:6]}", f"proxied-{uuid.uuid4().hex[:6]}"
    create_topic(kcoord_server.bootstrap, topic, 3, replication_factor=3, wait=False)
    proxy = proxies.cluster(kcoord_server.bootstrap)
    producer = KafkaProducer(bootstrap_servers=proxy.bootstrap)
    for i in range(3):
        producer.send(topic, b"v", partition=i).get(30)
    producer.close()
    consumer = KafkaConsumer(group_id=group, auto_offset_reset="earliest", bootstrap_servers=proxy.bootstrap,
                             consumer_timeout_ms=30000)
    subscribe_kafka_python(consumer, [topic])
    assert sum(1 for _, m in zip(range(3), consumer)) == 3
    listeners = {p.address[1] for p in proxy.listeners}
    assert {b.port for b in consumer._client.cluster.brokers()} <= listeners
    consumer.close()
    exchanges = proxy.transcript.sorted()
    # The group's exchanges went to its coordinator, the produce to each partition's leader.
    coordinator = kcoord_server.coordinator_of(group)
    assert {e["broker"] for e in exchanges if e["api"] in ("JoinGroup", "SyncGroup")} == {coordinator}
    assert {e["broker"] for e in exchanges if e["api"] == "Produce"} == \
        {kcoord_server.leader(topic, i) for i in range(3)}


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_broker_that_is_down_is_refused_through_its_listener_until_it_is_back(kcoord_server, proxies, how):
    proxy = proxies.cluster(kcoord_server.bootstrap)
    with Connection.to(proxy.bootstrap) as conn:
        conn.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    victim = kcoord_server.brokers[1]
    listener = proxy.brokers[1].address
    held = Connection(*listener)   # a client's connection through the listener
    getattr(victim, how)()
    # The held connection ends as the broker's did, and new ones are refused, as by its port.
    with pytest.raises((ProtocolError, OSError)):
        held.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    held.close()
    _until(lambda: _refused(listener), "the listener refusing connects")
    assert _refused(listener) and _refused(_brokers(kcoord_server)[1])
    assert all(_answers(proxy.brokers[i].address) for i in (0, 2))
    victim.start()
    _until(lambda: _answers(listener), "the listener serving again on its port")
    assert proxy.brokers[1].address == listener


def test_a_broker_first_named_while_it_is_down_gets_a_refusing_listener(kcoord_server, proxies):
    """Killed, a broker is still named in Metadata until its session ends: its listener opens
    refusing connects, and serves once the broker is back."""
    kcoord_server.brokers[2].kill()
    proxy = proxies.cluster(kcoord_server.brokers[0].bootstrap)
    with Connection.to(proxy.bootstrap) as conn:
        named = conn.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert 2 in {b.node_id for b in named.brokers}
    listener = proxy.brokers[2].address
    assert _refused(listener)
    kcoord_server.brokers[2].start()
    _until(lambda: _answers(listener), "the listener serving once its broker is back")


def test_a_join_parked_when_its_coordinators_broker_stops_is_answered_not_coordinator(kcoord_server, proxies):
    """The controlled shutdown's unload answers the parked JoinGroup before the broker's listener
    closes, as Kafka's does; the proxy's transcript shows the answer."""
    group = f"parked-{uuid.uuid4().hex[:6]}"
    proxy = proxies.cluster(kcoord_server.bootstrap)
    with Connection.to(proxy.bootstrap) as conn:
        conn.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        node = _coordinator(kcoord_server, group)

    def join(conn, member_id=""):
        return conn.call(JOIN, 7, {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 60000,
                                   "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
                                   "protocols": [{"name": "range", "metadata": b""}], "reason": None})

    first = Connection(*proxy.brokers[node].address)
    second = Connection(*proxy.brokers[node].address)
    member = join(first, join(first).member_id)
    assert member.error_code == 0
    needed = join(second)
    assert needed.error_code == ErrorCode.MEMBER_ID_REQUIRED
    # The second member's join waits for the first to rejoin, which it never does.
    second.send(JOIN, 7, {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 60000,
                          "member_id": needed.member_id, "group_instance_id": None, "protocol_type": "consumer",
                          "protocols": [{"name": "range", "metadata": b""}], "reason": None})
    kcoord_server.wait_for(group, state="PreparingRebalance")
    kcoord_server.brokers[node].stop()
    _, parked = second.receive(JOIN, 7)
    assert parked.error_code == ErrorCode.NOT_COORDINATOR
    first.close()
    second.close()
    [recorded] = [e for e in proxy.transcript.sorted()
                  if e["api"] == "JoinGroup" and e["request"]["member_id"] == needed.member_id]
    assert (recorded["broker"], recorded["response"]["error_code"]) == (node, ErrorCode.NOT_COORDINATOR)
    kcoord_server.brokers[node].start()
