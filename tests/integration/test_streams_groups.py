"""Streams groups (KIP-1071, group.protocol=streams) with Kafka Streams 4.3.1 itself, on kcoord and
on the reference Kafka 4.3.1: instances of a stateful count (a repartition, a store with its
changelog, exactly_once_v2; tests/integration/java/KcoordStreamsGroupsApp.java) as real JVMs
(kcoord.testing.streams_app.StreamsApp) through scale-out, a clean scale-in, kill -9, restarts and a
standby's promotion; then the same count with the classic protocol. Each case produces a known
input and checks the output: the last count of every key is exact, none went past it.

Stable means every live instance RUNNING, every task active on exactly one of them, each holding
its even share. What the broker's sticky assignor promises is checked at each step (an instance
keeps the tasks it had, a standby is promoted); how long each step took is printed (`-rP`), Kafka
and kcoord side by side when both ran in the process, never asserted.

Both brokers run with STREAMS_GROUP_CONFIG: Kafka's defaults (45 s sessions, and a 45 s minimum;
5 s heartbeats; a 3 s initial delay) would have every kill wait 45 s. Kafka's side is a reference
Kafka of the module's own (`streams_groups_kafka`, xdist group "streams-kafka")."""
from __future__ import annotations

import collections
import time
import uuid
from pathlib import Path

import pytest

from kcoord.testing import kafka_tools
from kcoord.testing.brokers import create_topic
from kcoord.testing.streams_app import StreamsApp, task_ids
from tests.integration.test_transactions_java import TXN_BROKER_CONFIG

SOURCE = Path(__file__).with_name("java") / "KcoordStreamsGroupsApp.java"
PARTITIONS = 6          # tasks 0_0..0_5 (source -> repartition) and 1_0..1_5 (count, stateful)
KEYS = 12
BATCH = 240             # input records per step: 20 more for each key

# Kafka's names; what the broker-side session and heartbeat of every streams group are. Every
# kill waits out a session (a streams member has no static identity to come back with: a restart
# is a new member, its old one is fenced when the session ends), so it is short: 10 s.
STREAMS_GROUP_CONFIG = {
    "group.streams.session.timeout.ms": "10000",
    "group.streams.min.session.timeout.ms": "1000",
    "group.streams.heartbeat.interval.ms": "1000",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.initial.rebalance.delay.ms": "0",
}
BROKER_CONFIG = {**TXN_BROKER_CONFIG, **STREAMS_GROUP_CONFIG}
STREAMS_APP_CONFIG = {"group.protocol": "streams", "processing.guarantee": "exactly_once_v2",
                      "commit.interval.ms": "200", "producer.transaction.timeout.ms": "10000"}
# The classic protocol's sessions are the client's: long enough for a static member's restart.
CLASSIC_APP_CONFIG = {"group.protocol": "classic", "processing.guarantee": "exactly_once_v2",
                      "commit.interval.ms": "200", "producer.transaction.timeout.ms": "10000",
                      "consumer.session.timeout.ms": "20000", "consumer.heartbeat.interval.ms": "1000"}

BROKERS = ["kcoord", "kafka"]

pytestmark = [pytest.mark.integration, pytest.mark.kcoord(kafka_config=BROKER_CONFIG)]

TIMINGS: dict[str, dict[str, dict[str, float]]] = collections.defaultdict(dict)  # test -> broker -> step -> s


@pytest.fixture(scope="module")
def streams_groups_kafka():
    """A reference Kafka with the session Kafka's settings and STREAMS_GROUP_CONFIG."""
    from kcoord.testing.plugin import REFERENCE_KAFKA_CONFIG
    from kcoord.testing.reference_kafka import ReferenceKafka

    kafka = ReferenceKafka({**REFERENCE_KAFKA_CONFIG, **BROKER_CONFIG}).start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="module")
def reference_kafka(streams_groups_kafka):
    return streams_groups_kafka


class Counts:
    """The input produced so far, and what its count must come to per key."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic
        self.expected: collections.Counter[str] = collections.Counter()
        self.sent = 0

    def produce(self, n: int = BATCH) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        for i in range(self.sent, self.sent + n):
            value = f"d{i % KEYS}"
            producer.produce(self.topic, key=f"k{i}".encode(), value=value.encode())
            self.expected[value] += 1
        assert producer.flush(30) == 0
        self.sent += n


def _read_counts(bootstrap: str, topic: str, expected: dict[str, int], timeout: float) -> dict[str, list[int]]:
    """key -> the counts a read_committed reader finds, in order; read until every key's last
    count reached its expected one (or `timeout`), then on until nothing more comes for 3 s."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    counts: dict[str, list[int]] = collections.defaultdict(list)
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        deadline, quiet_since = time.monotonic() + timeout, time.monotonic()
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error():
                reached = all(counts.get(k, [0])[-1] >= n for k, n in expected.items())
                if reached and time.monotonic() - quiet_since > 3:
                    break
                continue
            quiet_since = time.monotonic()
            counts[message.key().decode()].append(int(message.value()))
    finally:
        consumer.close()
    return dict(counts)


def assert_exact_counts(bootstrap: str, topic: str, counts: Counts, timeout: float = 180) -> None:
    found = _read_counts(bootstrap, topic, dict(counts.expected), timeout)
    assert {k: c[-1] for k, c in found.items()} == dict(counts.expected)
    assert {k: max(c) for k, c in found.items()} == dict(counts.expected)  # nothing counted twice


def _setup(broker_any, prefix: str, tmp_path, config: dict, **options) -> tuple[StreamsApp, Counts]:
    tag = uuid.uuid4().hex[:6]
    source, sink, app_id = f"{prefix}-in-{tag}", f"{prefix}-out-{tag}", f"{prefix}-app-{tag}"
    create_topic(broker_any.bootstrap, source, PARTITIONS)
    create_topic(broker_any.bootstrap, sink, PARTITIONS)
    app = StreamsApp(SOURCE, broker_any.bootstrap, app_id, source, sink, tasks=task_ids(PARTITIONS),
                     config=config, home=tmp_path, **options)
    return app, Counts(broker_any.bootstrap, source)


def _record(test: str, request, app: StreamsApp) -> None:
    """Print the steps' timings, with the other broker's beside them when it ran in this process."""
    broker = request.node.callspec.params["broker_any"]
    TIMINGS[test][broker] = {s.label: s.seconds for s in app.steps}
    moved = {s.label: s.moved for s in app.steps}
    print(f"\n{test}: seconds from each change until the group ran stable again (tasks moved on {broker})")
    print(f"  {'step':<48} {'kcoord':>8} {'kafka':>8} {'moved':>6}")
    for label in moved:
        cells = [TIMINGS[test].get(b, {}).get(label) for b in ("kcoord", "kafka")]
        print(f"  {label:<48} " + " ".join(f"{c:>8.1f}" if c is not None else f"{'-':>8}" for c in cells)
              + f" {moved[label]:>6}")


def _not_within(held: dict[str, set[str]], within: dict[str, set[str]], names) -> dict[str, tuple]:
    """The instances among `names` whose tasks in `held` are not all theirs in `within`:
    name -> (held, within); {} when each kept to its own."""
    return {n: (sorted(held[n]), sorted(within[n])) for n in names if not held[n] <= within[n]}


@pytest.mark.parametrize("broker_any", BROKERS, indirect=True)
def test_streams_group_scales_out_in_and_survives_kills(broker_any, tmp_path, request):
    app, counts = _setup(broker_any, "sg", tmp_path, STREAMS_APP_CONFIG)
    with app:
        i0, i1, i2 = app.add(3)
        app.wait_stable("start 3")
        counts.produce()

        three = app.active()
        (i3,) = app.add(1)
        app.wait_stable("scale out to 4")
        four = app.active()
        # The new instance's tasks are the only ones that moved: every other kept a subset of its own.
        assert _not_within(four, three, [i0.name, i1.name, i2.name]) == {}
        assert four[i3.name]
        counts.produce()

        app.stop(i3)
        app.wait_stable("scale in to 3 (clean stop)")
        after = app.active()
        assert _not_within(four, after, [i0.name, i1.name, i2.name]) == {}  # they only gained
        counts.produce()

        before = app.active()
        app.kill(i1)
        app.wait_stable("kill -9 one of 3 (session timeout)")
        after = app.active()
        assert _not_within(before, after, [i0.name, i2.name]) == {}  # the survivors only gained
        counts.produce()

        app.restart(i1)
        app.wait_stable("restart it after its session ended")
        counts.produce()

        # Killed and started again at once. Kafka Streams 4.3.1 refuses group.instance.id with the
        # streams protocol (no static membership yet), so its successor is a new member beside
        # the dead one until that one's session ends: tasks may move meanwhile (the table's
        # "moved"); what must hold is that the group runs again with every task once.
        app.kill(i2)
        app.restart(i2)
        app.wait_stable("kill -9 and restart at once")
        counts.produce()
        assert_exact_counts(broker_any.bootstrap, app.output_topic, counts)
    _record("streams protocol, 3 instances", request, app)


@pytest.mark.parametrize("broker_any", BROKERS, indirect=True)
def test_streams_group_promotes_a_standby(broker_any, tmp_path, request):
    """streams.num.standby.replicas=1 is the group's config (the client's num.standby.replicas is
    not the streams protocol's): set with Kafka's kafka-configs before the first member joins."""
    app, counts = _setup(broker_any, "sb", tmp_path, STREAMS_APP_CONFIG,
                         standby_tasks={f"1_{p}" for p in range(PARTITIONS)})
    code, out, err = kafka_tools.run_tool("configs", broker_any.bootstrap, "--alter", "--entity-type", "groups",
                                          "--entity-name", app.application_id,
                                          "--add-config", "streams.num.standby.replicas=1")
    assert code == 0, out + err
    with app:
        app.add(3)
        app.wait_stable("start 3 with a standby each")
        counts.produce()
        assert_exact_counts(broker_any.bootstrap, app.output_topic, counts)  # the stores have state

        # The broker's assignor places a task that lost its instance on the one with its standby
        # first (ordered by partition): the lowest-partition stateful task of the victim.
        active, standby = app.active(), app.standby()
        victim = next(n for n, tasks in active.items() if any(t.startswith("1_") for t in tasks))
        task = min((t for t in active[victim] if t.startswith("1_")), key=lambda t: int(t.split("_")[1]))
        holder = next(n for n, tasks in standby.items() if task in tasks)
        app.kill(next(i for i in app.instances if i.name == victim))
        app.wait_stable("kill -9 an active: standby promoted")
        assert app.owner(task) == holder
        counts.produce()
        assert_exact_counts(broker_any.bootstrap, app.output_topic, counts)
    _record("streams protocol, standby replicas 1", request, app)


@pytest.mark.parametrize("broker_any", ["kcoord", "kafka"], indirect=True)
def test_classic_streams_app_static_restart_and_kill(broker_any, tmp_path, request):
    """group.protocol=classic with static members (group.instance.id): one killed and started
    again within its session gets its tasks back; one killed for good loses them when its session
    ends."""
    app, counts = _setup(broker_any, "sc", tmp_path, CLASSIC_APP_CONFIG, static=True)
    with app:
        i0, i1, i2 = app.add(3)
        app.wait_stable("start 3", balanced=False)  # Streams' own assignor may warm up before it moves
        counts.produce()

        before = app.active()
        app.kill(i2)
        app.restart(i2)
        app.wait_stable("static: kill -9 and restart within the session", balanced=False)
        assert app.active() == before
        counts.produce()

        app.kill(i1)
        app.wait_stable("kill -9 one of 3 (session timeout)", balanced=False)
        counts.produce()
        assert_exact_counts(broker_any.bootstrap, app.output_topic, counts)
    _record("classic protocol, 3 static instances", request, app)
