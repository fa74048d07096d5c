"""The admin endpoint's cluster routes (/brokers, /partitions, /elections) on a three-broker
kcoord: what they report matches what Kafka clients are told over the brokers' own sockets, and
each control does to the listeners and leaders what it says."""
import http.client
import json
import socket
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from kcoord.conformance.member import subscribe_kafka_python
from kcoord.protocol_client import Connection
from kcoord.testing import brokers as kb
from kcoord.testing.plugin import KcoordHandle, start_server


@pytest.fixture
def server():
    s = start_server(brokers=3, http_host="127.0.0.1", http_port=0)
    yield s
    s.stop()


def _http(server, method, path, body=None):
    conn = http.client.HTTPConnection(server.app.http.host, server.app.http.port, timeout=30)
    conn.request(method, path, body=None if body is None else json.dumps(body).encode())
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read() or b"null")


def _address(server, node_id):
    return "%s:%d" % server.app.cluster.node(node_id).advertised


def _metadata(address, topic):
    """partition -> (leader, replicas, isr), as a client is told by the broker at `address`."""
    with Connection.to(address) as conn:
        answer = conn.call(3, conn.version(3, 12, 1), {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return {p.partition_index: (p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
            for t in answer.topics if t.name == topic for p in t.partitions}


def _topic(server, partitions=6):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    kb.create_topic(_address(server, 0), topic, partitions, replication_factor=3, wait=False)
    return topic


def test_brokers_and_partitions_report_what_metadata_tells_clients(server):
    topic = _topic(server)
    status, brokers = _http(server, "GET", "/brokers")
    assert status == 200
    assert [(b["id"], "%s:%d" % (b["host"], b["port"]), b["running"], b["fenced"], b["controller"])
            for b in brokers] == [(i, _address(server, i), True, False, i == 0) for i in range(3)]
    told = _metadata(_address(server, 2), topic)
    assert {b["id"]: b["partitions_led_by_topic"].get(topic, 0) for b in brokers} == \
        {i: sum(1 for leader, _, _ in told.values() if leader == i) for i in range(3)}
    status, partitions = _http(server, "GET", f"/partitions?topic={topic}")
    assert status == 200
    assert {p["partition"]: (p["leader"], p["replicas"], p["isr"]) for p in partitions} == told
    assert all(p["preferred_leader"] == p["replicas"][0] for p in partitions)
    assert _http(server, "GET", f"/partitions/{topic}")[1] == partitions
    assert _http(server, "GET", "/partitions/nope") == (404, {"error": "no topic nope"})


def test_stopping_broker_0_keeps_the_endpoint_and_moves_its_leadership(server):
    topic = _topic(server)
    led_by_0 = {p for p, (leader, _, _) in _metadata(_address(server, 0), topic).items() if leader == 0}
    assert led_by_0
    status, stopped = _http(server, "POST", "/brokers/0/stop")
    assert status == 200 and (stopped["running"], stopped["fenced"], stopped["partitions_led"]) == (False, True, 0)
    # The endpoint is the app's: it answers with node 0 gone, whose listener no longer accepts.
    status, brokers = _http(server, "GET", "/brokers")
    assert status == 200 and [b["controller"] for b in brokers] == [False, True, False]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(server.app.cluster.node(0).advertised, timeout=5).close()
    told = _metadata(_address(server, 1), topic)
    for p in led_by_0:  # the next in-sync replica leads; 0 left the ISR
        leader, replicas, isr = told[p]
        assert leader == replicas[1] and 0 not in isr
    # A client bootstrapping from every broker produces to each partition through the survivors.
    producer = KafkaProducer(bootstrap_servers=server.bootstrap)
    try:
        for p in range(6):
            producer.send(topic, b"v", partition=p).get(timeout=30)
    finally:
        producer.close()
    assert _http(server, "POST", "/brokers/0/stop") == (400, {"error": "broker 0 is not running"})

    status, started = _http(server, "POST", "/brokers/0/start")
    assert status == 200 and (started["running"], started["fenced"]) == (True, False)
    told = _metadata(_address(server, 0), topic)
    assert all(0 in isr for _, _, isr in told.values())
    assert not any(leader == 0 for leader, _, _ in told.values()), "back as a follower"
    status, elected = _http(server, "POST", "/elections/preferred", {"partitions": [{"topic": topic}]})
    assert status == 200
    assert {(r["partition"], r["error"]) for r in elected["results"]} == \
        {(p, None if p in led_by_0 else "ELECTION_NOT_NEEDED") for p in range(6)}
    assert {p for p, (leader, _, _) in _metadata(_address(server, 2), topic).items() if leader == 0} == led_by_0


def test_a_killed_broker_keeps_its_partitions_until_its_session_expires():
    server = start_server(manual_clock=True, brokers=3, http_host="127.0.0.1", http_port=0,
                          broker_session_timeout_ms=9000)
    try:
        topic = _topic(server)
        led_by_1 = {p for p, (leader, _, _) in _metadata(_address(server, 0), topic).items() if leader == 1}
        status, killed = _http(server, "POST", "/brokers/1/kill")
        assert status == 200 and (killed["running"], killed["fenced"]) == (False, False)
        assert {p for p, (leader, _, _) in _metadata(_address(server, 0), topic).items() if leader == 1} == led_by_1
        KcoordHandle(server).advance(8999)
        assert not _http(server, "GET", "/brokers")[1][1]["fenced"]
        KcoordHandle(server).advance(1)
        assert _http(server, "GET", "/brokers")[1][1]["fenced"]
        assert not any(leader == 1 for leader, _, _ in _metadata(_address(server, 0), topic).values())
        # Started again, it serves on the same address.
        assert _http(server, "POST", "/brokers/1/start")[0] == 200
        Connection.to(_address(server, 1)).close()
    finally:
        server.stop()


def test_moving_a_leader_and_what_is_refused(server):
    topic = _topic(server, 1)
    leader, replicas, _ = _metadata(_address(server, 0), topic)[0]
    target = replicas[1]
    status, moved = _http(server, "POST", f"/partitions/{topic}/0/leader", {"broker": target})
    assert status == 200 and moved["leader"] == target and moved["leader_epoch"] == 1
    assert _metadata(_address(server, leader), topic)[0][0] == target
    assert _http(server, "POST", f"/partitions/{topic}/0/leader", {"broker": target}) == \
        (400, {"error": f"cannot move {topic}-0 to broker {target}: ELECTION_NOT_NEEDED"})
    assert _http(server, "POST", f"/partitions/{topic}/0/leader", {"broker": 7}) == \
        (404, {"error": "no broker 7 (brokers: 0, 1, 2)"})
    assert _http(server, "POST", f"/partitions/{topic}/5/leader", {"broker": 0}) == \
        (404, {"error": f"no partition {topic}-5"})
    assert _http(server, "POST", f"/partitions/{topic}/0/leader", {"to": 0}) == \
        (400, {"error": 'expected {"broker": ID}'})
    assert _http(server, "POST", "/brokers/9/kill") == (404, {"error": "no broker 9 (brokers: 0, 1, 2)"})
    assert _http(server, "POST", "/brokers/one/kill")[0] == 400
    assert _http(server, "POST", "/brokers/1/start") == (400, {"error": "broker 1 is already running"})
    # With no body, every partition led elsewhere goes back to its preferred leader.
    status, elected = _http(server, "POST", "/elections/preferred")
    assert status == 200 and {"topic": topic, "partition": 0, "error": None} in elected["results"]
    assert _metadata(_address(server, 0), topic)[0][0] == leader
    assert _http(server, "POST", "/elections/preferred", {"partitions": [{"topic": topic, "partition": "x"}]})[0] \
        == 400
    assert _http(server, "POST", "/elections/preferred", {"partitions": [{"topic": topic, "partition": 3}]}) == \
        (200, {"results": [{"topic": topic, "partition": 3, "error": "UNKNOWN_TOPIC_OR_PARTITION"}]})


def _stable(server, group):
    found = server.app.coordinator.runtime.group(group)
    return found is not None and str(found.state) == "Stable"


def _samples(server):
    conn = http.client.HTTPConnection(server.app.http.host, server.app.http.port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_per_broker_follow_the_requests_and_the_leadership(server):
    topic = _topic(server, 6)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    subscribe_kafka_python(consumer, [topic])
    try:
        deadline = time.monotonic() + 60
        while not (_stable(server, group) and consumer.assignment()):
            assert time.monotonic() < deadline, "the consumer did not join"
            consumer.poll(timeout_ms=200)
        for tp in consumer.assignment():   # an earliest position: ListOffsets to the partition's leader
            consumer.position(tp)
        coordinator = server.app.coordinator.runtime.coordinator_node(group)
        samples = _samples(server)
    finally:
        consumer.close()
    joined = {dict(labels)["broker"] for name, labels in samples
              if name == "kcoord_requests_total" and dict(labels)["api"] == "JoinGroup"}
    assert joined == {str(coordinator)}, "only the coordinator answers JoinGroup"
    listed = {dict(labels)["broker"] for name, labels in samples
              if name == "kcoord_requests_total" and dict(labels)["api"] == "ListOffsets"}
    leaders = {leader for leader, _, _ in _metadata(_address(server, 0), topic).values()}
    assert {str(b) for b in leaders} <= listed, "each partition's offsets are asked of its leader"
    brokers = _http(server, "GET", "/brokers")[1]
    assert {b["id"]: samples[("kcoord_partitions_led", (("broker", str(b["id"])),))] for b in brokers} == \
        {b["id"]: b["partitions_led"] for b in brokers}
    assert sum(b["partitions_led"] for b in brokers) == 6 + 50   # the topic and __consumer_offsets
    assert {i: samples[("kcoord_groups_coordinated", (("broker", str(i)),))] for i in range(3)} == \
        {i: 1 if i == coordinator else 0 for i in range(3)}
    assert _http(server, "GET", "/groups")[1][0]["coordinator"] == coordinator
    _http(server, "POST", f"/brokers/{coordinator}/stop")
    samples = _samples(server)
    assert [samples[("kcoord_broker_running", (("broker", str(i)),))] for i in range(3)] == \
        [0 if i == coordinator else 1 for i in range(3)]
    assert samples[("kcoord_partitions_led", (("broker", str(coordinator)),))] == 0
