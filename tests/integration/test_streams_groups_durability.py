"""A streams group (KIP-1071) of Kafka Streams 4.3.1 instances (tests/integration/test_streams_groups.py's
stateful count, exactly_once_v2) across the loss of its coordinator, kcoord only: `kcoord serve
--data-dir` killed with -9 and started again on the same port and data dir, and the broker
coordinating the group in a three-broker kcoord killed. Either way the coordinator that takes
over has only what __consumer_offsets kept (kcoord.log.offsets_loader, StreamsProtocol.load):
the group must come back as it was (StreamsGroupDescribe: the same group and assignment epochs,
the same members at the same member epochs holding the same tasks), the instances carry on with
the tasks they had, and the counts stay exact."""
from __future__ import annotations

import time
import uuid

import pytest

from kcoord.cli import streams_groups
from kcoord.protocol_client import Admin, ProtocolError
from kcoord.testing.brokers import create_topic
from kcoord.testing.failover import KcoordCluster
from kcoord.testing.reference_kafka import free_port
from kcoord.testing.serve_process import kill, serve
from kcoord.testing.streams_app import StreamsApp, task_ids
from tests.integration.test_streams_groups import (BROKER_CONFIG, PARTITIONS, SOURCE, STREAMS_APP_CONFIG, Counts,
                                                   assert_exact_counts)

pytestmark = pytest.mark.integration


def _view(bootstrap: str, group: str) -> dict:
    """What StreamsGroupDescribe says of the group that a coordinator taking over must keep:
    state, group and assignment epochs, member id -> (member epoch, active, standby tasks)."""
    with Admin(bootstrap, 10) as admin:
        d = streams_groups.describe(admin, group)
    assert d is not None, f"{group} is no streams group"
    return {"state": d.group_state, "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
            "members": {m.member_id: (m.member_epoch, streams_groups.tasks(m.assignment.active_tasks),
                                      streams_groups.tasks(m.assignment.standby_tasks)) for m in d.members}}


def _settled(bootstrap: str, group: str, members: int, timeout: float = 60) -> dict:
    """_view once the group is Stable with `members` members, each at the assignment epoch,
    which is the group's (no rebalance under way)."""
    deadline, seen = time.monotonic() + timeout, "nothing yet"
    while time.monotonic() < deadline:
        try:
            view = _view(bootstrap, group)
            epochs = {e for e, _, _ in view["members"].values()}
            if (view["state"] == "Stable" and len(view["members"]) == members
                    and epochs == {view["assignment_epoch"]} and view["assignment_epoch"] == view["group_epoch"]):
                return view
            seen = repr(view)
        except (OSError, ProtocolError) as err:   # the coordinator is away, or still loading
            seen = f"{type(err).__name__}: {err}"
        time.sleep(0.2)
    raise AssertionError(f"{group} not settled with {members} members within {timeout}s: {seen}")


def _app(bootstrap: str, prefix: str, tmp_path, app_id: str | None = None, config: dict | None = None,
         create=create_topic) -> tuple[StreamsApp, Counts]:
    tag = uuid.uuid4().hex[:6]
    source, sink = f"{prefix}-in-{tag}", f"{prefix}-out-{tag}"
    create(bootstrap, source, PARTITIONS)
    create(bootstrap, sink, PARTITIONS)
    app = StreamsApp(SOURCE, bootstrap, app_id or f"{prefix}-app-{tag}", source, sink, tasks=task_ids(PARTITIONS),
                     config={**STREAMS_APP_CONFIG, **(config or {})}, home=tmp_path / "app")
    return app, Counts(bootstrap, source)


def test_a_streams_group_comes_back_as_it_was_after_kill_9_of_kcoord(tmp_path):
    """kill -9 of `kcoord serve --data-dir` under two running instances, started again at once:
    the restarted server reads the group back from its __consumer_offsets, members and epochs as
    they were, each member with a fresh 10 s session from the load (as Kafka's coordinator gives
    one to every member it loads); each instance's next heartbeat is that of a member it knows at
    its epoch, so nothing rebalances and no task moves."""
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    extra = [arg for name, value in BROKER_CONFIG.items() for arg in ("--config", f"{name}={value}")]
    data, log = tmp_path / "data", open(tmp_path / "kcoord.log", "a")
    server = serve(data, port, extra=extra, log=log)
    try:
        app, counts = _app(bootstrap, "kd", tmp_path)
        with app:
            app.add(2)
            app.wait_stable("start 2")
            counts.produce()
            before, held = _settled(bootstrap, app.application_id, 2), app.active()

            kill(server)
            server = serve(data, port, extra=extra, log=log)
            assert _settled(bootstrap, app.application_id, 2) == before
            app.wait_stable("kcoord killed -9 and restarted")
            assert app.active() == held
            assert _settled(bootstrap, app.application_id, 2) == before

            counts.produce()
            assert_exact_counts(bootstrap, app.output_topic, counts)
            assert _settled(bootstrap, app.application_id, 2) == before
    finally:
        kill(server)
        log.close()


def test_a_streams_group_rides_through_a_kill_of_its_coordinators_broker(tmp_path):
    """A three-broker kcoord; the broker leading the group's __consumer_offsets partition is
    killed (kill -9: fenced after its broker session). Every topic, the internal ones too
    (replication.factor=3), has a replica on the other two. The group's new coordinator loads it
    from the replicated __consumer_offsets; the instances find it and heartbeat on at the epochs
    they had: not even the one more group epoch a rejoin would bring. Unlike a Connect worker (the
    classic protocol, test_coordinator_failover.py), Kafka Streams' streams heartbeat answered
    NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or lost with its broker, only looks the
    coordinator up again and retries with its member id and epoch; it rejoins only when fenced
    (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH), which a coordinator that loaded the group never
    answers a member of it. So the group's describe must be the same before and after, exactly."""
    victim = 0
    with KcoordCluster(kafka_config=BROKER_CONFIG) as cluster:
        [app_id] = cluster.groups_on(victim, 1, f"kf-app-{uuid.uuid4().hex[:6]}")
        app, counts = _app(cluster.bootstrap, "kf", tmp_path, app_id, {"replication.factor": "3"},
                           create=lambda bootstrap, topic, n: cluster.create_topic(topic, n))
        with app:
            app.add(2)
            app.wait_stable("start 2")
            counts.produce()
            before, held = _settled(cluster.bootstrap, app_id, 2), app.active()
            assert cluster.coordinator_of(app_id) == victim

            cluster.kill(victim)
            cluster.wait_coordinator_moved(app_id, victim)
            assert _settled(cluster.bootstrap, app_id, 2) == before
            app.wait_stable("its coordinator's broker killed")
            assert app.active() == held
            assert _settled(cluster.bootstrap, app_id, 2) == before

            counts.produce()
            assert_exact_counts(cluster.bootstrap, app.output_topic, counts)
            assert _settled(cluster.bootstrap, app_id, 2) == before
