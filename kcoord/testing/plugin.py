"""pytest plugin: the `kcoord_server` fixture.

Installed with kcoord (entry point `pytest11`), so any project's tests can use:

    def test_my_consumer(kcoord_server):
        consumer = KafkaConsumer("t", group_id="g", bootstrap_servers=kcoord_server.bootstrap)
        ...
        kcoord_server.wait_for("g", state="Stable", members=1)

The server runs in-process on a free port with group.initial.rebalance.delay.ms
set to 0, on its own event loop thread, so blocking and asyncio clients both work.
State is in memory only unless the test asks otherwise with the `kcoord` marker,
whose keywords are ServerConfig fields:

    @pytest.mark.kcoord(data_dir=str(tmp_path), default_partitions=3)

Several brokers: @pytest.mark.kcoord(brokers=3) (or start_server(brokers=3)); then
kcoord_server.brokers[i] has .node_id, .bootstrap, .running, .stop(), .kill(), .start() and
.leads(topic, partition), and kcoord_server has leader(), move_leader(), elect_preferred() and
coordinator_of(group). Every one runs on the server's loop.

The same test can run against the reference Apache Kafka (kcoord.testing.reference_kafka):

    reference_kafka   session-wide Kafka broker (one JVM per test session; use unique group
                      and topic names), with group.initial.rebalance.delay.ms=0
    broker            kcoord_server, or with --kcoord-broker=kafka (env KCOORD_BROKER=kafka)
                      a handle on the reference Kafka with .bootstrap, .wait_for(), .committed()
    broker_any        parametrised over both: every test using it runs as [kcoord] and [kafka]

    reference_kafka_cluster   a session-wide three-node Kafka (ReferenceKafkaCluster: stop(i), kill(i),
                      start(i), metadata(topic)); every node runs again after each test

--kafka-bootstrap HOST:PORT (env KCOORD_KAFKA_BOOTSTRAP) uses a Kafka you already run instead
of starting one. kcoord.testing.brokers has broker-neutral helpers (wait_group, create_topic, ...).
"""
from __future__ import annotations

import os

import pytest

from kcoord.config import ServerConfig

# The server itself is imported when a test first starts one: a pytest plugin is
# loaded before coverage tools start measuring, and a user's suite that never
# asks for kcoord should not pay for importing it.


class BrokerHandle:
    """One broker of a running kcoord (`KcoordHandle.brokers[i]`). Its controls run on the
    server's loop, as the admin endpoint's do (kcoord.cluster.controls): stop() is a controlled
    shutdown, kill() a kill -9 the controller notices after broker.session.timeout.ms, start()
    brings it back on the same address as a follower; each raises ClusterControlError with one
    line when it cannot apply (stopping a broker that is not running, ...)."""

    def __init__(self, thread, node_id: int):
        self._thread = thread
        self.node_id = node_id

    def __repr__(self) -> str:
        return f"<broker {self.node_id} at {self.bootstrap}: {'running' if self.running else 'down'}>"

    @property
    def _node(self):
        return self._thread.app.cluster.node(self.node_id)

    @property
    def bootstrap(self) -> str:
        """This broker's address alone, as a client's bootstrap.servers."""
        return "%s:%d" % self._node.advertised

    @property
    def running(self) -> bool:
        """Whether its listener accepts connections."""
        return self._node.running

    @property
    def fenced(self) -> bool:
        """Whether the controller counts it out (stopped, or killed and its session over)."""
        return self._node.fenced

    def _control(self, action: str) -> None:
        controls = self._thread.app.controls
        self._thread.call(lambda: getattr(controls, action)(self.node_id))

    def stop(self) -> None:
        self._control("stop")

    def kill(self) -> None:
        self._control("kill")

    def start(self) -> None:
        self._control("start")

    def leads(self, topic: str, partition: int) -> bool:
        topics = self._thread.app.topics
        return self._thread.call(lambda: _on_loop(lambda: getattr(topics.partition(topic, partition), "leader",
                                                                  None) == self.node_id))


class KcoordHandle:
    kind = "kcoord"

    def __init__(self, thread):
        self._thread = thread
        self._brokers: list[BrokerHandle] | None = None

    @property
    def bootstrap(self) -> str:
        return self._thread.bootstrap

    @property
    def app(self):
        return self._thread.app

    @property
    def config(self):
        return self._thread.config

    @property
    def coordinator(self):
        """The CoordinatorService (its `.runtime` holds every __consumer_offsets partition's GroupCoordinator)."""
        return self._thread.app.coordinator

    @property
    def http_url(self) -> str | None:
        """Base URL of the admin endpoint when started with http_host set, else None."""
        http = self._thread.app.http
        return None if http is None else f"http://{http.host}:{http.port}"

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> committed offset, read from the coordinator."""
        core = self._thread.app.coordinator.runtime
        return self._thread.call(lambda: _on_loop(lambda: {k: v.offset for k, v in core.committed(group).items()}))

    def call(self, coro_factory, timeout: float | None = 30.0):
        return self._thread.call(coro_factory, timeout)

    def wait_for(self, group: str, timeout: float = 30.0, **conditions):
        """Block until `group` matches, e.g. wait_for("g", state="Stable", members=2)."""
        coordinator = self._thread.app.coordinator
        return self._thread.call(lambda: coordinator.wait_for(group, timeout=timeout, **conditions),
                                 timeout + 5)


    # ---- several brokers (start_server(brokers=3), @pytest.mark.kcoord(brokers=3)) ----
    @property
    def brokers(self) -> list[BrokerHandle]:
        """One handle per broker, in node id order (node 0 first)."""
        if self._brokers is None:
            self._brokers = [BrokerHandle(self._thread, node_id) for node_id in self._thread.app.cluster.nodes]
        return self._brokers

    def leader(self, topic: str, partition: int) -> int:
        """The node id leading the partition (-1: none); KeyError if there is no such partition."""
        topics = self._thread.app.topics

        def read():
            found = topics.partition(topic, partition)
            if found is None:
                raise KeyError(f"no partition {topic}-{partition}")
            return found.leader
        return self._thread.call(lambda: _on_loop(read))

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        """Make `broker` lead the partition (it must hold a replica and run); ClusterControlError if not."""
        controls = self._thread.app.controls
        self._thread.call(lambda: _on_loop(lambda: controls.move_leader(topic, partition, broker)))

    def elect_preferred(self, partitions=None) -> dict[tuple[str, int], str | None]:
        """Preferred-leader election of (topic, partition) pairs, or of every partition led elsewhere;
        each partition's outcome: None (elected) or the error Kafka answers (ELECTION_NOT_NEEDED, ...)."""
        controls = self._thread.app.controls
        wanted = None if partitions is None else list(partitions)
        return self._thread.call(lambda: _on_loop(lambda: controls.elect_preferred(wanted)))

    def coordinator_of(self, group: str) -> int:
        """The node id of the broker coordinating `group` now; -1 while none does (its partition has
        no leader, its coordinator is gone with a killed broker, or nothing asked for it yet)."""
        runtime = self._thread.app.coordinator.runtime
        return self._thread.call(lambda: _on_loop(lambda: runtime.coordinator_node(group)))

    def transaction_coordinator_of(self, transactional_id: str) -> int:
        """The node id of the broker coordinating `transactional_id` now; -1 while none does."""
        runtime = self._thread.app.transactions

        def node():
            shard = runtime.shards.get(runtime.partition_for(transactional_id))
            return -1 if shard is None else shard.node
        return self._thread.call(lambda: _on_loop(node))

    # ---- fault injection (kcoord.faults) ----
    def fault(self, rule=None, **spec):
        """Add a fault rule: fault(api="Heartbeat", error="NOT_COORDINATOR", times=2); returns its id."""
        faults = self._thread.app.faults

        async def add():
            return faults.add(rule if rule is not None else spec).id
        return self.call(add)

    def remove_fault(self, rule_id: int) -> bool:
        faults = self._thread.app.faults

        async def remove():
            return faults.remove(rule_id)
        return self.call(remove)

    def clear_faults(self) -> None:
        faults = self._thread.app.faults

        async def clear():
            faults.clear()
        self.call(clear)

    def faults_fired(self) -> list[dict]:
        return list(self._thread.app.faults.fired_log)

    def requests_after(self, seq: int, api_key: int, group: str | None = None) -> int:
        """Requests with `api_key` (for `group`) that arrived after request number `seq`
        (the "seq" of a faults_fired() entry): did the client recover as it should?"""
        history = self._thread.app.faults.history

        async def latest():   # copied on the server's thread, which appends to it
            return list(history)
        return sum(1 for s, key, g in self.call(latest)
                   if s > seq and key == api_key and (group is None or g == group))

    def expire_member(self, group: str, member_id: str) -> bool:
        return self.call(lambda: self._thread.app.faults.expire_member(group, member_id))

    def force_rebalance(self, group: str) -> bool:
        return self.call(lambda: self._thread.app.faults.force_rebalance(group))

    # ---- manual clock ----
    @property
    def clock(self):
        return self._thread.app.coordinator.runtime.timer

    def advance(self, ms: int) -> None:
        """Move the coordinator's manual clock by `ms` (start_server(manual_clock=True)); due timers fire."""
        from kcoord.coordinator.clock import ManualTimer

        clock = self.clock
        if not isinstance(clock, ManualTimer):
            raise RuntimeError("advance() needs a server started with manual_clock=True")

        async def step():
            clock.advance(ms)
        self.call(step)


def start_server(manual_clock: bool = False, kafka_config: dict | None = None, **config):
    """A server on a free port; `manual_clock=True` runs the coordinator on a ManualTimer
    that only moves with KcoordHandle.advance(ms). `kafka_config` takes Kafka config names
    (server.properties keys, as `--config K=V` does; the same dict can configure a
    ReferenceKafka): names kcoord does not model are logged and ignored, as at start-up."""
    from kcoord.coordinator.clock import ManualTimer
    from kcoord.testing.server_thread import ServerThread

    cfg = with_kafka_config(ServerConfig(**{"listen_port": 0, "initial_rebalance_delay_ms": 0, **config}),
                            kafka_config)
    return ServerThread(cfg, clock=ManualTimer() if manual_clock else None).start()


def with_kafka_config(cfg: ServerConfig, kafka_config: dict | None) -> ServerConfig:
    """`cfg` with Kafka config names (server.properties keys) set, as `--config K=V` sets them;
    names kcoord does not model are logged and ignored, as at start-up."""
    from kcoord import broker_config

    if kafka_config:
        resolved = broker_config.resolve({k: str(v) for k, v in kafka_config.items()})
        broker_config.log_warnings(resolved)
        broker_config.apply(cfg, resolved)
    return cfg


async def _on_loop(fn):
    return fn()


# What the reference Kafka of a test session is started with: groups form without the
# initial rebalance delay (as kcoord_server's), tests may use short session timeouts, and
# a transaction past its timeout is aborted within a second (Kafka checks every 10 s by default).
REFERENCE_KAFKA_CONFIG = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
                          "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}
BROKERS = ("kcoord", "kafka")


def pytest_addoption(parser):
    group = parser.getgroup("kcoord", "kcoord and the reference Apache Kafka")
    group.addoption("--kcoord-broker", choices=BROKERS, default=None,
                    help="what the `broker` fixture is: kcoord (default) or the reference Apache Kafka "
                         "(env KCOORD_BROKER)")
    group.addoption("--kafka-bootstrap", default=None, metavar="HOST:PORT",
                    help="use this running Kafka as the reference broker instead of starting one "
                         "(env KCOORD_KAFKA_BOOTSTRAP)")


def _broker_choice(config) -> str:
    choice = config.getoption("--kcoord-broker") or os.environ.get("KCOORD_BROKER") or "kcoord"
    if choice not in BROKERS:
        raise pytest.UsageError(f"KCOORD_BROKER={choice!r}: choose one of {', '.join(BROKERS)}")
    return choice


def pytest_configure(config):
    config.addinivalue_line("markers", "kcoord(**config): ServerConfig fields for the kcoord_server fixture "
                                       "(e.g. data_dir=..., http_host='127.0.0.1', brokers=3)")


def _kcoord_handle(request):
    """A fresh server configured by the test's `kcoord` marker, stopped after the test."""
    marker = request.node.get_closest_marker("kcoord")
    thread = start_server(**(marker.kwargs if marker else {}))
    try:
        yield KcoordHandle(thread)
    finally:
        thread.stop()


@pytest.fixture
def kcoord_server(request):
    yield from _kcoord_handle(request)


@pytest.fixture
def kcoord_manual_clock_server():
    """Like kcoord_server, but coordinator time moves only with `advance(ms)`."""
    thread = start_server(manual_clock=True)
    try:
        yield KcoordHandle(thread)
    finally:
        thread.stop()


@pytest.fixture(scope="session")
def reference_kafka(request):
    """The session's reference Apache Kafka (a ReferenceKafka, or the --kafka-bootstrap one)."""
    from kcoord.testing.brokers import ExternalKafka

    external = request.config.getoption("--kafka-bootstrap") or os.environ.get("KCOORD_KAFKA_BOOTSTRAP")
    if external:
        yield ExternalKafka(external)
        return
    from kcoord.testing.reference_kafka import ReferenceKafka

    kafka = ReferenceKafka(REFERENCE_KAFKA_CONFIG).start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="session")
def reference_kafka_cluster_session():
    """The session's three-node reference Kafka, started with the session Kafka's settings."""
    from kcoord.testing.reference_kafka import ReferenceKafkaCluster

    with ReferenceKafkaCluster(REFERENCE_KAFKA_CONFIG) as cluster:
        yield cluster


@pytest.fixture
def reference_kafka_cluster(reference_kafka_cluster_session):
    """The session's three-node reference Kafka (ReferenceKafkaCluster); the nodes a test
    stopped or killed are started again after it, so the next test finds all three."""
    yield reference_kafka_cluster_session
    reference_kafka_cluster_session.restore()


@pytest.fixture
def broker(request):
    """kcoord_server's handle, or with --kcoord-broker=kafka a KafkaHandle on the reference Kafka."""
    if _broker_choice(request.config) == "kafka":
        from kcoord.testing.brokers import KafkaHandle

        return KafkaHandle(request.getfixturevalue("reference_kafka"))
    return request.getfixturevalue("kcoord_server")


@pytest.fixture(params=BROKERS, ids=list(BROKERS))
def broker_any(request):
    """Each test using it runs twice: on a fresh kcoord server and on the reference Kafka."""
    if request.param == "kafka":
        from kcoord.testing.brokers import KafkaHandle

        yield KafkaHandle(request.getfixturevalue("reference_kafka"))
        return
    yield from _kcoord_handle(request)
