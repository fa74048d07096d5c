"""Group ACLs (`--group-acls`): real clients logged in over SASL are allowed or refused
per group, and the batched group APIs answer each group on its own."""
from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from kcoord.protocol_client import Connection
from kcoord.security.acls import AclFileError, Authorizer
from kcoord.testing.plugin import start_server
from tests.integration.test_security import _with_topic, confluent_group, kafka_python_group, poll_confluent_until, wait_stable
from wire.errors import ErrorCode

pytestmark = pytest.mark.integration
DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED


def _sasl(user, password):
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": user, "sasl_plain_password": password}


@pytest.fixture(scope="module")
def acl_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("acls")
    (d / "users.txt").write_text("alice:alice-secret\nbob:bob-secret\n")
    (d / "acls.txt").write_text("# principal  operation  group\n"
                                "User:alice   Read       orders-*\n"
                                "User:bob     Describe   orders-1\n"
                                # Topic ACLs are enforced too: both may read the topic.
                                "User:*       Read       Topic:sec-topic\n")
    thread = start_server(sasl_users_file=str(d / "users.txt"), group_acls_file=str(d / "acls.txt"))
    # The topic exists: auto-creating it would need Create on it, as in Kafka.
    thread = _with_topic(thread)
    yield thread
    thread.stop()


def test_an_allowed_principal_consumes_and_another_is_refused(acl_server):
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    alice = kafka_python_group(acl_server.bootstrap, "orders-1", **_sasl("alice", "alice-secret"))
    alice_too = kafka_python_group(acl_server.bootstrap, "orders-2", **_sasl("alice", "alice-secret"))
    try:
        wait_stable(acl_server, "orders-1")
        wait_stable(acl_server, "orders-2")
        assert alice.assignment() and alice_too.assignment()
        # bob may only describe orders-1: joining it is refused, as a Kafka broker refuses it.
        bob = KafkaConsumer(bootstrap_servers=acl_server.bootstrap, group_id="orders-1", **_sasl("bob", "bob-secret"))
        bob.subscribe(["sec-topic"])
        try:
            with pytest.raises(GroupAuthorizationFailedError):
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    bob.poll(timeout_ms=200)
        finally:
            bob.close()
        assert acl_server.app.coordinator.runtime.group("orders-1").members.__len__() == 1
        # Listing shows bob the one group he may describe.
        admin = KafkaAdminClient(bootstrap_servers=acl_server.bootstrap, **_sasl("bob", "bob-secret"))
        try:
            listed = admin.list_groups()
            assert {g["group_id"] if isinstance(g, dict) else g[0] for g in listed} == {"orders-1"}, listed
        finally:
            admin.close()
    finally:
        alice.close()
        alice_too.close()


def test_confluent_consumer_without_an_acl_gets_group_authorization_failed(acl_server):
    from confluent_kafka import KafkaError

    consumer, errors = confluent_group(acl_server.bootstrap, f"payments-{uuid.uuid4().hex[:6]}", **{
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice", "sasl.password": "alice-secret"})
    seen = []
    try:
        def refused():
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None:
                seen.append(msg.error().code())
            return KafkaError.GROUP_AUTHORIZATION_FAILED in seen + [e.code() for e in errors]
        assert poll_confluent_until(consumer, errors, refused, timeout=30), (seen, errors)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def anonymous_server(tmp_path_factory):
    acls = tmp_path_factory.mktemp("acls") / "acls.txt"
    acls.write_text("User:ANONYMOUS Read open-*\nUser:* Delete trash-*\n"
                    "User:ANONYMOUS All Topic:acl-t\n")  # topic ACLs are enforced too
    thread = start_server(group_acls_file=str(acls))
    yield thread
    thread.stop()


def test_batched_group_requests_answer_each_group_on_its_own(anonymous_server):
    with Connection.to(anonymous_server.bootstrap) as c:
        meta = c.call(3, 12, {"topics": [{"name": "acl-t"}], "allow_auto_topic_creation": True,
                              "include_topic_authorized_operations": False})
        topic_id = meta.topics[0].topic_id
        commit = {"generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                  "topics": [{"name": "acl-t", "partitions": [{"partition_index": 0, "committed_offset": 5}]}]}
        assert c.call(8, 8, {"group_id": "open-1", **commit}).topics[0].partitions[0].error_code == 0
        assert c.call(8, 8, {"group_id": "closed-1", **commit}).topics[0].partitions[0].error_code == DENIED
        by_id = c.call(8, 10, {"group_id": "closed-1", **commit, "topics": [
            {"topic_id": topic_id, "partitions": [{"partition_index": 0, "committed_offset": 5}]}]})
        assert (by_id.topics[0].topic_id, by_id.topics[0].partitions[0].error_code) == (topic_id, DENIED)
        join = c.call(11, 5, {"group_id": "closed-1", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                              "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                              "protocols": [{"name": "range", "metadata": b""}]})
        assert join.error_code == DENIED

        found = c.call(10, 4, {"key_type": 0, "coordinator_keys": ["open-1", "closed-1"]})
        assert {k.key: k.error_code for k in found.coordinators} == {"open-1": 0, "closed-1": DENIED}
        fetched = c.call(9, 8, {"groups": [{"group_id": "open-1", "topics": None},
                                           {"group_id": "closed-1", "topics": None}], "require_stable": False})
        by_group = {g.group_id: g for g in fetched.groups}
        assert by_group["closed-1"].error_code == DENIED
        assert by_group["open-1"].error_code == 0 and by_group["open-1"].topics[0].partitions[0].committed_offset == 5
        described = c.call(15, 5, {"groups": ["open-1", "closed-1"], "include_authorized_operations": False})
        assert {g.group_id: g.error_code for g in described.groups} == {"open-1": 0, "closed-1": DENIED}
        # Read does not grant Delete; the trash-* rule does, for everyone.
        deleted = c.call(42, 2, {"groups_names": ["open-1", "trash-1"]})
        assert {r.group_id: r.error_code for r in deleted.results} == \
               {"open-1": DENIED, "trash-1": ErrorCode.GROUP_ID_NOT_FOUND}
        assert [g.group_id for g in c.call(16, 4, {"states_filter": []}).groups] == ["open-1"]
        # Only-denied batches and pre-batch versions are refused whole.
        assert c.call(10, 3, {"key_type": 0, "key": "closed-1"}).error_code == DENIED
        assert c.call(9, 7, {"group_id": "closed-1", "topics": None, "require_stable": False}).error_code == DENIED


def test_acl_file_errors_name_the_line(tmp_path):
    bad = tmp_path / "acls.txt"
    for text, why in (("User:a Read\n", "expected 'principal operation group'"),
                      ("alice Read g\n", "a principal is User:<name>"),
                      ("User:a Write g\n", "operation 'Write' is not one of")):
        bad.write_text("# ok\n" + text)
        with pytest.raises(AclFileError, match=why) as err:
            Authorizer.load(bad)
        assert ":2:" in str(err.value)
    bad.write_text("User:a all g-*\n")
    acls = Authorizer.load(bad)
    assert acls.allowed("User:a", "Delete", "g-1") and not acls.allowed("User:a", "Read", "h")


def test_serve_with_a_bad_acl_file_says_why_and_exits_1(tmp_path):
    bad = tmp_path / "acls.txt"
    bad.write_text("User:alice Write orders\n")
    done = subprocess.run([sys.executable, "-m", "kcoord", "serve", "--listen", "127.0.0.1:0",
                           "--group-acls", str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"kcoord: cannot start: {bad}:1: operation 'Write' is not one of" in done.stderr
    assert "Traceback" not in done.stderr
