"""Topic ACLs enforced (issue 15): stock clients logged in over SASL/PLAIN as a user with
particular topic ACLs see the same outcomes (error codes, which topics are visible) on
kcoord (`--acls`) as on a reference Kafka started with StandardAuthorizer and the same
ACLs. An `admin` super user creates the topics and ACLs on both."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ConfigResource, NewTopic, ResourcePatternType, ResourceType)

from kcoord.testing.kafka_tools import ToolSession, normalise
from kcoord.testing.plugin import REFERENCE_KAFKA_CONFIG, start_server
from kcoord.testing.reference_kafka import ReferenceKafka, free_port

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("acl-kafka")]

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED


class _Broker:
    def __init__(self, name, bootstrap):
        self.name, self.bootstrap = name, bootstrap

    def conf(self, user, **extra):
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user], **extra}

    def admin(self, user="admin"):
        return AdminClient(self.conf(user))


@pytest.fixture(scope="module")
def kafka():
    port, sasl_port, controller = free_port(), free_port(), free_port()
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
    config = {**REFERENCE_KAFKA_CONFIG, "authorizer.class.name": AUTHORIZER,
              "super.users": "User:ANONYMOUS;User:admin",
              "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                           f"CONTROLLER://127.0.0.1:{controller}",
              "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                                "CONTROLLER:PLAINTEXT",
              "sasl.enabled.mechanisms": "PLAIN",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas}
    with ReferenceKafka(config, port=port, controller_port=controller):
        yield _Broker("kafka", f"127.0.0.1:{sasl_port}")


@pytest.fixture(scope="module")
def kcoord(tmp_path_factory):
    users = tmp_path_factory.mktemp("topic-acls") / "users.txt"
    users.write_text("".join(f"{u}:{p}\n" for u, p in USERS.items()))
    thread = start_server(acls=True, super_users=("User:admin",), sasl_users_file=str(users),
                          sasl_mechanisms=("PLAIN",))
    yield _Broker("kcoord", thread.bootstrap)
    thread.stop()


@pytest.fixture
def both(kcoord, kafka):
    return (kcoord, kafka)


def _acl(name, operation, pattern=ResourcePatternType.LITERAL, permission=AclPermissionType.ALLOW,
         resource=ResourceType.TOPIC, principal="User:alice"):
    return AclBinding(resource, name, pattern, principal, "*", operation, permission)


def _setup(broker, topics=(), acls=()):
    admin = broker.admin()
    if topics:
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
            f.result(30)
    if acls:
        for f in admin.create_acls(list(acls)).values():
            f.result(30)
    # Kafka's broker applies topics and ACLs from its metadata log a moment after the
    # controller answered: wait until the authorizer lists them and Metadata shows the topics.
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = set(admin.describe_acls(flt).result(30))
        visible = set(admin.list_topics(timeout=10).topics)
        if set(acls) <= listed and set(topics) <= visible:
            break
        time.sleep(0.2)


def _produce(broker, topic, user="alice", count=3):
    """The delivery errors (codes, or None) of `count` records to `topic`."""
    outcomes = []
    producer = Producer(broker.conf(user, **{"message.timeout.ms": 10000, "enable.idempotence": False}))
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(),
                         on_delivery=lambda err, msg: outcomes.append(None if err is None else err.code()))
    producer.flush(20)
    return sorted(set(outcomes), key=str)


def _consume(broker, topic, group, user="alice", want=3, timeout=20):
    """(records read, error codes seen) reading `topic` from the start in `group`."""
    consumer = Consumer(broker.conf(user, **{"group.id": group, "auto.offset.reset": "earliest",
                                             "enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, 0, 0)])
    records, errors = [], set()
    deadline = time.monotonic() + timeout
    try:
        while len(records) < want and not errors and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                errors.add(msg.error().code())
            else:
                records.append(msg.value())
    finally:
        consumer.close()
    return len(records), sorted(errors)


def _uid():
    return uuid.uuid4().hex[:6]


def test_producer_allowed_and_denied(both):
    outcomes = []
    for b in both:
        u = _uid()
        ok, no = f"w-{u}-ok", f"w-{u}-no"
        _setup(b, [ok, no], [_acl(ok, AclOperation.WRITE)])
        outcomes.append((_produce(b, ok), _produce(b, no)))
    assert outcomes[0] == outcomes[1], f"kcoord {outcomes[0]}, Kafka {outcomes[1]}"
    assert outcomes[0] == ([None], [DENIED])


def test_prefixed_allow_and_deny_overriding_it(both):
    outcomes = []
    for b in both:
        u = _uid()
        prefix = f"pre-{u}-"
        a, denied = prefix + "a", prefix + "denied"
        _setup(b, [a, denied], [_acl(prefix, AclOperation.ALL, ResourcePatternType.PREFIXED),
                                _acl(denied, AclOperation.WRITE, permission=AclPermissionType.DENY)])
        outcomes.append((_produce(b, a), _produce(b, denied), _produce(b, f"other-{u}")))
    assert outcomes[0] == outcomes[1], f"kcoord {outcomes[0]}, Kafka {outcomes[1]}"
    assert outcomes[0][:2] == ([None], [DENIED])


def test_consumer_allowed_and_denied(both):
    outcomes = []
    for b in both:
        u = _uid()
        ok, no, group = f"r-{u}-ok", f"r-{u}-no", f"g-{u}"
        _setup(b, [ok, no], [_acl(ok, AclOperation.READ), _acl(group, AclOperation.READ, resource=ResourceType.GROUP)])
        for t in (ok, no):
            assert _produce(b, t, user="admin") == [None]
        outcomes.append((_consume(b, ok, group), _consume(b, no, group, timeout=10)))
    assert outcomes[0] == outcomes[1], f"kcoord {outcomes[0]}, Kafka {outcomes[1]}"
    # librdkafka keeps a partition it may not read from fetching quietly: nothing arrives.
    assert outcomes[0][0] == (3, []) and outcomes[0][1][0] == 0


def test_metadata_shows_only_describable_topics(both):
    outcomes = []
    for b in both:
        u = _uid()
        names = [f"m-{u}-{x}" for x in ("a", "b", "hidden")]
        _setup(b, names, [_acl(f"m-{u}-a", AclOperation.DESCRIBE), _acl(f"m-{u}-b", AclOperation.READ)])
        md = b.admin("alice").list_topics(timeout=10)
        visible = sorted(t.replace(u, "U") for t in md.topics if t.startswith(f"m-{u}-"))
        named = b.admin("alice").list_topics(topic=f"m-{u}-hidden", timeout=10).topics[f"m-{u}-hidden"]
        outcomes.append((visible, named.error.code() if named.error else None))
    assert outcomes[0] == outcomes[1], f"kcoord {outcomes[0]}, Kafka {outcomes[1]}"
    assert outcomes[0] == (["m-U-a", "m-U-b"], DENIED)


def test_commit_denied_on_topic(both):
    outcomes = []
    for b in both:
        u = _uid()
        ok, no, group = f"c-{u}-ok", f"c-{u}-no", f"cg-{u}"
        _setup(b, [ok, no], [_acl(ok, AclOperation.READ), _acl(no, AclOperation.DESCRIBE),
                             _acl(group, AclOperation.READ, resource=ResourceType.GROUP)])
        consumer = Consumer(b.conf("alice", **{"group.id": group, "enable.auto.commit": False}))
        try:
            result = []
            for t in (ok, no):
                try:
                    parts = consumer.commit(offsets=[TopicPartition(t, 0, 0)], asynchronous=False)
                    result.append([p.error.code() if p.error else None for p in parts])
                except KafkaException as err:
                    result.append(err.args[0].code())
            committed = consumer.committed([TopicPartition(ok, 0), TopicPartition(no, 0)], timeout=10)
            result.append([(p.offset, p.error.code() if p.error else None) for p in committed])
        finally:
            consumer.close()
        outcomes.append(result)
    assert outcomes[0] == outcomes[1], f"kcoord {outcomes[0]}, Kafka {outcomes[1]}"
    assert outcomes[0][0] == [None]


def test_create_topics_and_describe_configs_denied(both):
    outcomes = []
    for b in both:
        u = _uid()
        allowed, denied = f"ct-{u}-ok", f"ct-{u}-no"
        _setup(b, [], [_acl(allowed, AclOperation.CREATE), _acl(f"ct-{u}-ok", AclOperation.DESCRIBE_CONFIGS)])
        admin = b.admin("alice")
        created = {}
        for t, f in admin.create_topics([NewTopic(allowed, 1, 1), NewTopic(denied, 1, 1)]).items():
            try:
                f.result(30)
                created[t.replace(u, "U")] = None
            except KafkaException as err:
                created[t.replace(u, "U")] = err.args[0].code()
        _setup(b, [], [])
        configs = {}
        for name in (allowed, denied):
            (f,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, name)]).values()
            try:
                configs[name.replace(u, "U")] = bool(f.result(30))
            except KafkaException as err:
                configs[name.replace(u, "U")] = err.args[0].code()
        outcomes.append((created, configs))
    assert outcomes[0] == outcomes[1], f"kcoord {outcomes[0]}, Kafka {outcomes[1]}"
    assert outcomes[0][0] == {"ct-U-ok": None, "ct-U-no": DENIED}


def test_consumer_protocol_subscription_needs_describe_on_the_topic(both):
    """ConsumerGroupHeartbeat (KIP-848) subscribing by name to a topic the member may not
    Describe gets TOPIC_AUTHORIZATION_FAILED; with Describe and Read it consumes."""
    for broker in both:
        hidden, allowed = f"hid-{uuid.uuid4().hex[:8]}", f"ok-{uuid.uuid4().hex[:8]}"
        group = f"g848-{uuid.uuid4().hex[:8]}"
        _setup(broker, topics=[hidden, allowed],
               acls=[_acl(group, AclOperation.READ, resource=ResourceType.GROUP),
                     _acl(allowed, AclOperation.READ)])
        for topic, expect_denied in ((hidden, True), (allowed, False)):
            consumer = Consumer(broker.conf("alice", **{"group.id": group, "group.protocol": "consumer"}))
            consumer.subscribe([topic])
            errors, assigned = set(), []
            deadline = time.monotonic() + 20
            try:
                while time.monotonic() < deadline and not errors and not assigned:
                    msg = consumer.poll(0.5)
                    if msg is not None and msg.error():
                        errors.add(msg.error().code())
                    assigned = consumer.assignment()
            except KafkaException as err:
                errors.add(err.args[0].code())
            finally:
                consumer.close()
            if expect_denied:
                assert DENIED in errors and not assigned, (broker.name, errors)
            else:
                assert not errors and [tp.topic for tp in assigned] == [allowed], (broker.name, errors, assigned)


def test_cluster_tools_need_acls_on_the_cluster(both, tmp_path):
    """kafka-metadata-quorum (DescribeQuorum: Describe on the cluster) and kafka-client-metrics
    (ListConfigResources, DescribeConfigs: DescribeConfigs; IncrementalAlterConfigs: AlterConfigs)
    fail alike on both brokers for a user without ACLs on the cluster, and work once granted."""
    login = tmp_path / "bob.properties"
    login.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                     "org.apache.kafka.common.security.plain.PlainLoginModule required "
                     f'username="bob" password="{USERS["bob"]}";\n')
    name = f"cm-acl-{_uid()}"
    commands = [("metadata-quorum", "--command-config", str(login), "describe", "--status"),
                ("client-metrics", "--command-config", str(login), "--list"),
                ("client-metrics", "--command-config", str(login), "--alter", "--name", name, "--interval", "1000"),
                ("configs", "--command-config", str(login), "--entity-type", "client-metrics", "--entity-name", name,
                 "--describe")]

    def outcomes(broker, tools):
        out = []
        for tool, *args in commands:
            r = tools.run(tool, broker.bootstrap, *args)
            text = normalise(r.stdout + r.stderr)
            out.append((r.code, "ClusterAuthorizationException" in text or "Cluster authorization failed" in text))
        return out

    with ToolSession() as tools:
        assert [outcomes(b, tools) for b in both] == [[(1, True)] * len(commands)] * 2
        cluster = [_acl("kafka-cluster", op, resource=ResourceType.BROKER, principal="User:bob")
                   for op in (AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS)]
        for b in both:
            _setup(b, [], cluster)
        for b in both:
            alter = tools.run(*commands[2][:1], b.bootstrap, *commands[2][1:])
            assert (alter.code, alter.stdout.strip()) == (0, f"Altered client metrics config for {name}."), b.name
        assert [outcomes(b, tools) for b in both] == [[(0, False)] * len(commands)] * 2
