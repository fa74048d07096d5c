"""SASL (PLAIN, SCRAM-SHA-256/512), TLS and SASL_SSL with real clients, and the
pre-authentication gate over raw sockets."""
from __future__ import annotations

import socket
import ssl
import struct
import time
import uuid

import pytest

from kcoord.testing.plugin import start_server
from tests.integration.certs import make_certs
from wire import codec
from wire.errors import ErrorCode

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
TOPIC = "sec-topic"


@pytest.fixture(scope="module")
def users_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sasl") / "users.txt"
    path.write_text("# name:password\nalice:alice-secret\nbob:p:with:colons\n")
    return str(path)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


async def _create_topic(thread):
    thread.app.broker.topics.create(TOPIC)


def _with_topic(thread):
    # librdkafka's consumer does not auto-create what it subscribes to (kafka-python's
    # metadata request does): the topic exists whichever client a test starts first.
    thread.call(lambda: _create_topic(thread))
    return thread


@pytest.fixture(scope="module")
def sasl_server(users_file):
    thread = _with_topic(start_server(sasl_users_file=users_file))
    yield thread
    thread.stop()


@pytest.fixture(scope="module")
def sasl_ssl_server(users_file, certs):
    thread = _with_topic(start_server(sasl_users_file=users_file, tls_cert_file=str(certs.server_cert),
                                      tls_key_file=str(certs.server_key)))
    yield thread
    thread.stop()


def wait_stable(thread, group, members=1):
    thread.call(lambda: thread.app.coordinator.wait_for(group, state="Stable", members=members, timeout=60), 65)


def kafka_python_group(bootstrap, group, **security):
    from kafka import KafkaConsumer

    from kcoord.conformance.member import subscribe_kafka_python

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=10000,
                             heartbeat_interval_ms=1000, **security)
    subscribe_kafka_python(consumer, [TOPIC])
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
    return consumer


def confluent_group(bootstrap, group, **security):
    from confluent_kafka import Consumer

    errors = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "error_cb": errors.append,
                         "session.timeout.ms": 10000, **security})
    consumer.subscribe([TOPIC])
    return consumer, errors


def poll_confluent_until(consumer, errors, predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        consumer.poll(0.2)
    return predicate()


# ---- real clients: success ----------------------------------------------------------------

@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_group_logs_in(sasl_server, mechanism):
    group = f"kp-{mechanism}-{uuid.uuid4().hex[:6]}"
    consumer = kafka_python_group(sasl_server.bootstrap, group, security_protocol="SASL_PLAINTEXT",
                                  sasl_mechanism=mechanism, sasl_plain_username="alice",
                                  sasl_plain_password="alice-secret")
    try:
        wait_stable(sasl_server, group)
        assert consumer.assignment()
    finally:
        consumer.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_group_logs_in(sasl_server, mechanism):
    group = f"ck-{mechanism}-{uuid.uuid4().hex[:6]}"
    consumer, errors = confluent_group(sasl_server.bootstrap, group, **{
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": "bob", "sasl.password": "p:with:colons"})
    try:
        assert poll_confluent_until(consumer, errors, lambda: bool(consumer.assignment())), errors
        wait_stable(sasl_server, group)
    finally:
        consumer.close()


def test_sasl_ssl_kafka_python_and_confluent(sasl_ssl_server, certs):
    group = f"sasl-ssl-{uuid.uuid4().hex[:6]}"
    kp = kafka_python_group(sasl_ssl_server.bootstrap, group, security_protocol="SASL_SSL",
                            ssl_cafile=str(certs.ca), sasl_mechanism="SCRAM-SHA-512",
                            sasl_plain_username="alice", sasl_plain_password="alice-secret")
    ck, errors = confluent_group(sasl_ssl_server.bootstrap, group, **{
        "security.protocol": "SASL_SSL", "ssl.ca.location": str(certs.ca), "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice", "sasl.password": "alice-secret"})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            kp.poll(timeout_ms=100)
            ck.poll(0.1)
            state = sasl_ssl_server.call(lambda: _describe(sasl_ssl_server, group), 10)
            if state == ("Stable", 2):
                break
        assert state == ("Stable", 2), (state, errors)
    finally:
        kp.close()
        ck.close()


async def _describe(thread, group):
    g = thread.app.coordinator.runtime.groups.get(group)
    return (g.state.value if hasattr(g.state, "value") else str(g.state), len(g.members)) if g else None


def test_tls_with_client_certificates(certs):
    thread = start_server(tls_cert_file=str(certs.server_cert), tls_key_file=str(certs.server_key),
                          tls_client_ca_file=str(certs.ca))
    try:
        group = f"tls-{uuid.uuid4().hex[:6]}"
        consumer = kafka_python_group(thread.bootstrap, group, security_protocol="SSL", ssl_cafile=str(certs.ca),
                                      ssl_certfile=str(certs.client_cert), ssl_keyfile=str(certs.client_key))
        try:
            wait_stable(thread, group)
        finally:
            consumer.close()
        # Rejections: a client without a certificate, and a client that does not trust the server.
        host, port = thread.bootstrap.rsplit(":", 1)
        no_cert = ssl.create_default_context(cafile=str(certs.ca))
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            with socket.create_connection((host, int(port)), timeout=10) as raw:
                with no_cert.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                    tls.sendall(_frame(codec.encode_request(18, 0, {"correlation_id": 1}, {})))
                    if not tls.recv(4):
                        raise ConnectionError("closed")
        wrong_ca = ssl.create_default_context(cafile=str(certs.other_ca))
        wrong_ca.load_cert_chain(str(certs.client_cert), str(certs.client_key))
        with pytest.raises(ssl.SSLCertVerificationError):
            with socket.create_connection((host, int(port)), timeout=10) as raw:
                wrong_ca.wrap_socket(raw, server_hostname="127.0.0.1")
    finally:
        thread.stop()


# ---- real clients: rejection ---------------------------------------------------------------

def test_kafka_python_wrong_password_is_rejected(sasl_server):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    before = sasl_server.app.server.limit_hits["sasl.authentication.failed"]
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=sasl_server.bootstrap, security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice", sasl_plain_password="wrong",
                      request_timeout_ms=5000, max_block_ms=5000)
    assert sasl_server.app.server.limit_hits["sasl.authentication.failed"] > before


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_confluent_wrong_password_gets_authentication_error(sasl_server, mechanism):
    from confluent_kafka import KafkaError

    group = f"ck-bad-{uuid.uuid4().hex[:6]}"
    consumer, errors = confluent_group(sasl_server.bootstrap, group, **{
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": "alice", "sasl.password": "nope"})
    try:
        assert poll_confluent_until(consumer, errors, lambda: any(
            e.code() == KafkaError._AUTHENTICATION for e in errors)), errors
        assert "Authentication failed" in str([e.str() for e in errors])
        assert not consumer.assignment()
        assert group not in sasl_server.app.coordinator.runtime.groups
    finally:
        consumer.close()


def test_plaintext_client_against_sasl_listener_gets_nothing(sasl_server):
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    with pytest.raises(KafkaError):
        KafkaConsumer(bootstrap_servers=sasl_server.bootstrap, group_id="never", request_timeout_ms=5000,
                      api_version_auto_timeout_ms=5000).topics()
    assert "never" not in sasl_server.app.coordinator.runtime.groups


# ---- raw protocol ---------------------------------------------------------------------------

def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _recv_frame(sock) -> bytes | None:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    size = struct.unpack(">i", head)[0]
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _connect(thread):
    host, port = thread.bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=15)


def _call(sock, api_key, version, body, correlation_id=7):
    sock.sendall(_frame(codec.encode_request(api_key, version, {"correlation_id": correlation_id,
                                                                "client_id": "raw"}, body)))
    data = _recv_frame(sock)
    return None if data is None else codec.decode_response(api_key, version, data)[1]


def _closed(sock) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


JOIN_BODY = {"group_id": "raw-g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
             "group_instance_id": None, "protocol_type": "consumer",
             "protocols": [{"name": "range", "metadata": b""}]}


@pytest.mark.parametrize("api_key,version,body", [
    (11, 5, JOIN_BODY),
    (3, 1, {"topics": None}),
    (10, 1, {"key": "raw-g", "key_type": 0}),
])
def test_requests_before_authentication_close_the_connection(sasl_server, api_key, version, body):
    with _connect(sasl_server) as sock:
        versions = _call(sock, 18, 0, {})
        assert versions.error_code == 0
        sock.sendall(_frame(codec.encode_request(api_key, version, {"correlation_id": 1, "client_id": "raw"}, body)))
        assert _closed(sock)
    assert "raw-g" not in sasl_server.app.coordinator.runtime.groups


def test_wrong_password_answers_sasl_authentication_failed_then_closes(sasl_server):
    with _connect(sasl_server) as sock:
        hs = _call(sock, 17, 1, {"mechanism": "PLAIN"})
        assert hs.error_code == 0 and "PLAIN" in hs.mechanisms
        resp = _call(sock, 36, 2, {"auth_bytes": b"\0alice\0wrong"})
        assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert _closed(sock)


def test_unsupported_mechanism_then_closes(sasl_server):
    with _connect(sasl_server) as sock:
        hs = _call(sock, 17, 1, {"mechanism": "GSSAPI"})
        assert hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert set(hs.mechanisms) == set(MECHANISMS)
        assert _closed(sock)


def test_plain_login_then_group_api_is_served(sasl_server):
    with _connect(sasl_server) as sock:
        assert _call(sock, 17, 1, {"mechanism": "PLAIN"}).error_code == 0
        assert _call(sock, 36, 1, {"auth_bytes": b"\0alice\0alice-secret"}).error_code == 0
        found = _call(sock, 10, 1, {"key": "raw-g", "key_type": 0})
        assert found.error_code == 0
        # Once logged in, another handshake is an illegal SASL state, as in Kafka.
        assert _call(sock, 17, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_legacy_v0_handshake_with_raw_tokens(sasl_server):
    with _connect(sasl_server) as sock:
        assert _call(sock, 17, 0, {"mechanism": "PLAIN"}).error_code == 0
        sock.sendall(_frame(b"\0alice\0alice-secret"))
        assert _recv_frame(sock) == b""
        assert _call(sock, 10, 1, {"key": "raw-g", "key_type": 0}).error_code == 0
    with _connect(sasl_server) as sock:
        assert _call(sock, 17, 0, {"mechanism": "PLAIN"}).error_code == 0
        sock.sendall(_frame(b"\0alice\0bad"))
        assert _closed(sock)


def test_sasl_apis_on_a_plaintext_listener_are_illegal_state(kcoord_server):
    with _connect(kcoord_server._thread) as sock:
        assert _call(sock, 17, 1, {"mechanism": "PLAIN"}).error_code == ErrorCode.ILLEGAL_SASL_STATE


# ---- Java client ------------------------------------------------------------------------------

def _jaas(mechanism, user, password):
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    return f'{module} required username="{user}" password="{password}";'


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_java_consumer_logs_in_over_sasl_ssl(sasl_ssl_server, certs, mechanism):
    from tests.integration import javaclient

    group = f"java-{mechanism}-{uuid.uuid4().hex[:6]}"
    events = javaclient.login(sasl_ssl_server.bootstrap, TOPIC, group, {
        "security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
        "sasl.jaas.config": _jaas(mechanism, "alice", "alice-secret"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca)})
    assert events[-1]["event"] == "assigned", events
    # The Java consumer closes (LeaveGroup) right after its assignment: the group went through a generation.
    assert sasl_ssl_server.app.coordinator.runtime.groups[group].generation >= 1


def test_java_consumer_with_wrong_password_fails_authentication(sasl_server):
    from tests.integration import javaclient

    events = javaclient.login(sasl_server.bootstrap, TOPIC, f"java-bad-{uuid.uuid4().hex[:6]}", {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": _jaas("SCRAM-SHA-512", "alice", "wrong")}, max_seconds=30)
    assert events[-1]["event"] == "error", events
    assert events[-1]["error"].endswith("SaslAuthenticationException"), events
