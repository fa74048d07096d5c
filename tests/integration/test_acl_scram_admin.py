"""ACLs and SCRAM users managed at run time (CreateAcls, DescribeAcls, DeleteAcls,
Describe/AlterUserScramCredentials): Kafka's kafka-acls and kafka-configs tools and
confluent-kafka's AdminClient get the same answers from kcoord (`--acls`) as from a
reference Kafka started with StandardAuthorizer (both with User:ANONYMOUS as super user,
over PLAINTEXT); what is created survives a kcoord restart, and a user added at run time
logs in with SCRAM."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

from kcoord.protocol_client import Connection
from kcoord.testing.kafka_tools import ToolSession, normalise
from kcoord.testing.plugin import REFERENCE_KAFKA_CONFIG, start_server
from kcoord.testing.reference_kafka import ReferenceKafka
from wire.errors import ErrorCode

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("acl-kafka")]

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANY_FILTER = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)


@pytest.fixture(scope="module")
def acl_kafka():
    with ReferenceKafka({**REFERENCE_KAFKA_CONFIG, "authorizer.class.name": AUTHORIZER,
                         "super.users": "User:ANONYMOUS"}) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def acl_kcoord(tmp_path_factory):
    thread = start_server(acls=True, super_users=("User:ANONYMOUS",), node_id=1,
                          data_dir=str(tmp_path_factory.mktemp("acl-data")))
    yield thread
    thread.stop()


@pytest.fixture(scope="module")
def tools():
    with ToolSession() as session:
        yield session


def _both(tools, brokers, tool, *args):
    """The tool's (exit code, normalised stdout, first stderr line) on each broker: they must be equal."""
    outcomes = []
    for b in brokers:
        r = tools.run(tool, b.bootstrap, *args)
        lines = [line.replace(b.bootstrap, "BOOTSTRAP") for line in r.stderr.splitlines()
                 if line.strip() and not line.startswith(("\tat ", "ERROR"))]
        err = next((line for line in lines if "Exception" in line), lines[0] if lines else "")
        outcomes.append((r.code, _resources_sorted(_mechanisms_sorted(normalise(r.stdout))), err))
    assert outcomes[0] == outcomes[1], f"{tool} {' '.join(args)}: kcoord {outcomes[0]!r}, Kafka {outcomes[1]!r}"
    return outcomes[0]


def _mechanisms_sorted(text: str) -> str:
    # Kafka lists a user's mechanisms in the order of a HashMap keyed by enum constants,
    # whose hash codes change from one JVM to the next.
    head, sep, tail = text.partition(" are ")
    return head + sep + ", ".join(sorted(tail.split(", "))) if sep and "SCRAM credential" in head else text


def _resources_sorted(text: str) -> str:
    """`kafka-acls --list` prints one block per resource in the order the broker's DescribeAcls
    answer lists them: Kafka's authorizer keeps its ACLs in an order of its own (it changed with
    the topic names' random suffix here), kcoord in the order they were created. What each block
    says is compared; their order is not (docs/deviations.md)."""
    head = "Current ACLs for resource"
    if head not in text:
        return text
    blocks = [head + b for b in text.split(head) if b]
    return "".join(sorted(b if b.endswith("\n") else b + "\n" for b in blocks)).rstrip("\n")


def test_kafka_acls_add_list_remove_answer_as_on_kafka(tools, acl_kcoord, acl_kafka):
    brokers = (acl_kcoord, acl_kafka)
    topic = f"acl-orders-{uuid.uuid4().hex[:6]}"
    group = f"acl-group-{uuid.uuid4().hex[:6]}"
    code, out, _ = _both(tools, brokers, "acls", "--add", "--allow-principal", "User:alice", "--operation", "Read",
                         "--operation", "Describe", "--topic", topic, "--resource-pattern-type", "prefixed")
    assert code == 0 and "patternType=PREFIXED" in out
    code, out, _ = _both(tools, brokers, "acls", "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1",
                         "--operation", "Write", "--topic", f"{topic}-1")
    assert code == 0
    code, out, _ = _both(tools, brokers, "acls", "--add", "--allow-principal", "User:alice", "--operation", "Read",
                         "--group", group)
    assert code == 0
    # One resource at a time: the listings of both are in hash order.
    for args in (("--topic", topic, "--resource-pattern-type", "prefixed"), ("--topic", f"{topic}-1"),
                 ("--group", group), ("--principal", "User:bob", "--topic", f"{topic}-1")):
        code, out, _ = _both(tools, brokers, "acls", "--list", *args)
        assert code == 0 and "Current ACLs for resource" in out, out
    # MATCH: the ACLs that apply to the topic (the prefixed and the literal one).
    code, out, _ = _both(tools, brokers, "acls", "--list", "--topic", f"{topic}-1", "--resource-pattern-type", "match")
    assert code == 0 and out.count("Current ACLs for resource") == 2 and "operation=WRITE" in out
    code, out, _ = _both(tools, brokers, "acls", "--remove", "--force", "--topic", f"{topic}-1")
    assert code == 0
    code, out, _ = _both(tools, brokers, "acls", "--list", "--topic", f"{topic}-1")
    assert code == 0 and "operation" not in out
    code, out, _ = _both(tools, brokers, "acls", "--remove", "--force", "--allow-principal", "User:alice",
                         "--operation", "Read", "--topic", topic, "--resource-pattern-type", "prefixed")
    code, out, _ = _both(tools, brokers, "acls", "--list", "--topic", topic, "--resource-pattern-type", "prefixed")
    assert "operation=DESCRIBE" in out and "operation=READ" not in out
    _both(tools, brokers, "acls", "--remove", "--force", "--group", group)
    _both(tools, brokers, "acls", "--remove", "--force", "--topic", topic, "--resource-pattern-type", "prefixed")


def test_kafka_configs_manage_scram_users_as_on_kafka(tools, acl_kcoord, acl_kafka):
    brokers = (acl_kcoord, acl_kafka)
    user = f"scram-{uuid.uuid4().hex[:6]}"
    code, out, _ = _both(tools, brokers, "configs", "--alter", "--add-config",
                         "SCRAM-SHA-256=[iterations=8192,password=secret]",
                         "--entity-type", "users", "--entity-name", user)
    assert code == 0 and f"Completed updating config for user {user}." in out
    code, out, _ = _both(tools, brokers, "configs", "--alter", "--add-config", "SCRAM-SHA-512=[password=other]",
                         "--entity-type", "users", "--entity-name", user)
    assert code == 0
    code, out, _ = _both(tools, brokers, "configs", "--describe", "--entity-type", "users", "--entity-name", user)
    assert code == 0 and "SCRAM-SHA-256=iterations=8192" in out and "SCRAM-SHA-512=iterations=4096" in out, out
    code, out, err = _both(tools, brokers, "configs", "--alter", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]",
                           "--entity-type", "users", "--entity-name", user)
    assert code == 1 and "less than the minimum 4096" in err
    code, out, _ = _both(tools, brokers, "configs", "--alter", "--delete-config", "SCRAM-SHA-512",
                         "--entity-type", "users", "--entity-name", user)
    assert code == 0
    code, out, err = _both(tools, brokers, "configs", "--alter", "--delete-config", "SCRAM-SHA-512",
                           "--entity-type", "users", "--entity-name", user)
    assert code == 1 and "Attempt to delete a user credential that does not exist" in err
    code, out, _ = _both(tools, brokers, "configs", "--describe", "--entity-type", "users", "--entity-name", user)
    assert "SCRAM-SHA-512" not in out and "SCRAM-SHA-256=iterations=8192" in out
    _both(tools, brokers, "configs", "--alter", "--delete-config", "SCRAM-SHA-256", "--entity-type", "users",
          "--entity-name", user)
    code, out, _ = _both(tools, brokers, "configs", "--describe", "--entity-type", "users", "--entity-name", user)
    assert code == 0 and "SCRAM" not in out


def _error(future):
    try:
        future.result()
    except Exception as err:  # confluent's KafkaException carries a KafkaError
        e = err.args[0]
        return e.code(), e.str()
    return None


def _admin_answers(bootstrap, user):
    """What confluent-kafka's AdminClient is told for a set of good and bad requests."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    answers = {}
    bad_cluster = AclBinding(ResourceType.BROKER, "not-kafka-cluster", ResourcePatternType.LITERAL, "User:x", "*",
                             AclOperation.ALTER, AclPermissionType.ALLOW)
    no_colon = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "alice", "*",
                          AclOperation.READ, AclPermissionType.ALLOW)
    created = admin.create_acls([bad_cluster, no_colon])
    answers["create"] = {str(b.name): _error(f) for b, f in created.items()}
    deletion = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)
    answers["delete-missing"] = {u: _error(f) for u, f in admin.alter_user_scram_credentials([deletion]).items()}
    many = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 20000), b"pw")
    answers["too-many"] = {u: _error(f) for u, f in admin.alter_user_scram_credentials([many]).items()}
    twice = [UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"a"),
             UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"b")]
    answers["twice"] = {u: _error(f) for u, f in admin.alter_user_scram_credentials(twice).items()}
    answers["describe-missing"] = {u: _error(f) for u, f in admin.describe_user_scram_credentials([user]).items()}
    return answers


def test_confluent_admin_errors_as_on_kafka(acl_kcoord, acl_kafka):
    user = f"nobody-{uuid.uuid4().hex[:6]}"
    on_kcoord, on_kafka = (_admin_answers(b.bootstrap, user) for b in (acl_kcoord, acl_kafka))
    assert on_kcoord == on_kafka
    assert on_kcoord["create"]["not-kafka-cluster"][1] == \
        "The only valid name for the CLUSTER resource is kafka-cluster"
    assert "no colon" in on_kcoord["create"]["t"][1]
    assert on_kcoord["delete-missing"][user][1] == "Attempt to delete a user credential that does not exist"
    assert on_kcoord["too-many"][user][1] == "Too many iterations"
    assert on_kcoord["twice"][user][1] == "A user credential cannot be altered twice in the same request"
    assert "does not exist" in on_kcoord["describe-missing"][user][1]


def test_without_an_authorizer_acl_requests_are_security_disabled(tools):
    # Kafka's AclApis answers; not run against a reference Kafka of its own (a third JVM).
    kcoord = start_server(node_id=1)
    try:
        # (confluent-kafka's describe_acls answers [] here: librdkafka drops the top-level error.)
        host, port = kcoord.bootstrap.rsplit(":", 1)
        with Connection(host, int(port)) as conn:
            answer = conn.call(29, 3, {"resource_type_filter": 1, "resource_name_filter": None,
                                       "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                                       "operation": 1, "permission_type": 1})
        assert (answer.error_code, answer.error_message) == \
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
        r = tools.run("acls", kcoord.bootstrap, "--list")
        assert r.code == 1 and "SecurityDisabledException: No Authorizer is configured on the broker" in r.stdout
        r = tools.run("acls", kcoord.bootstrap, "--add", "--allow-principal", "User:a", "--operation", "Read",
                      "--topic", "t")
        assert r.code == 1 and "SecurityDisabledException" in r.stdout + r.stderr
    finally:
        kcoord.stop()


def _sasl(user, password):
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user, "sasl.password": password}


def _topics(bootstrap, user, password, timeout=10):
    admin = AdminClient({"bootstrap.servers": bootstrap, **_sasl(user, password)})
    return admin.list_topics(timeout=timeout)


def test_a_user_added_at_run_time_logs_in_and_survives_a_restart(tmp_path):
    (tmp_path / "users.txt").write_text("admin:admin-secret\n")
    config = dict(sasl_users_file=str(tmp_path / "users.txt"), acls=True, super_users=("User:admin",),
                  data_dir=str(tmp_path / "data"))
    kcoord = start_server(**config)
    try:
        admin = AdminClient({"bootstrap.servers": kcoord.bootstrap, **_sasl("admin", "admin-secret")})
        carol = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                             b"carol-secret")
        assert [f.result() for f in admin.alter_user_scram_credentials([carol]).values()] == [None]
        acl = AclBinding(ResourceType.TOPIC, "carol-", ResourcePatternType.PREFIXED, "User:carol", "*",
                         AclOperation.ALL, AclPermissionType.ALLOW)
        assert [f.result() for f in admin.create_acls([acl]).values()] == [None]
        assert _topics(kcoord.bootstrap, "carol", "carol-secret") is not None
        # carol is no super user: managing ACLs needs Alter on the cluster.
        refused = AdminClient({"bootstrap.servers": kcoord.bootstrap, **_sasl("carol", "carol-secret")})
        code, _ = _error(next(iter(refused.create_acls([acl]).values())))
        assert code == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    finally:
        kcoord.stop()
    kcoord = start_server(**config)
    try:
        assert _topics(kcoord.bootstrap, "carol", "carol-secret") is not None
        admin = AdminClient({"bootstrap.servers": kcoord.bootstrap, **_sasl("admin", "admin-secret")})
        assert admin.describe_acls(ANY_FILTER).result() == [acl]
        described = admin.describe_user_scram_credentials(["carol"])["carol"].result()
        assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == \
            [(ScramMechanism.SCRAM_SHA_256, 8192)]
        gone = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
        assert [f.result() for f in admin.alter_user_scram_credentials([gone]).values()] == [None]
        with pytest.raises(Exception):  # librdkafka logs the authentication error and retries until the timeout
            _topics(kcoord.bootstrap, "carol", "carol-secret", timeout=3)
        assert kcoord.app.server.limit_hits["sasl.authentication.failed"] > 0
    finally:
        kcoord.stop()
