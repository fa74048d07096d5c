"""Each stock client's documented recovery from coordinator errors, driven by fault rules.

  NOT_COORDINATOR on JoinGroup  -> the client looks the coordinator up again and rejoins
  REBALANCE_IN_PROGRESS on a heartbeat -> the client rejoins the group
  FENCED_INSTANCE_ID on a heartbeat (static member) -> the client stops with a fenced error
  COORDINATOR_LOAD_IN_PROGRESS on a heartbeat (a coordinator loading after a failover) -> the
      client heartbeats again and keeps its partitions; aiokafka 0.14 stops instead
"""
from __future__ import annotations

import time
import uuid

import pytest

from kcoord.conformance.members import Member

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT = 10, 11, 12
CLIENTS = ["kafka-python", "aiokafka", "confluent", "java", "java4"]


def _setup(server, name):
    topic, group = f"t-{name}-{uuid.uuid4().hex[:6]}", f"g-{name}-{uuid.uuid4().hex[:6]}"

    async def create():
        server.app.broker.topics.create(topic, 2)
    server.call(create)
    return topic, group


def _fired(server, rule_id):
    return [f for f in server.faults_fired() if f["rule"] == rule_id]


def _eventually(check, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout}s: {what}")


@pytest.mark.parametrize("client", CLIENTS)
def test_not_coordinator_rediscovers_and_rejoins(kcoord_server, client):
    topic, group = _setup(kcoord_server, "notcoord")
    rule = kcoord_server.fault(api="JoinGroup", group=group, error="NOT_COORDINATOR", once=True)
    m = Member(client, kcoord_server.bootstrap, topic, group)
    try:
        m.wait_event("assigned", timeout=60)
        fired = _fired(kcoord_server, rule)
        assert len(fired) == 1, f"the JoinGroup fault never fired: {kcoord_server.faults_fired()}"
        seq = fired[0]["seq"]
        assert kcoord_server.requests_after(seq, FIND_COORDINATOR, group) >= 1, \
            f"{client} did not look the coordinator up again after NOT_COORDINATOR"
        assert kcoord_server.requests_after(seq, JOIN_GROUP, group) >= 1
        kcoord_server.wait_for(group, state="Stable", members=1)
    finally:
        m.stop()


@pytest.mark.parametrize("client", CLIENTS)
def test_rebalance_in_progress_rejoins(kcoord_server, client):
    topic, group = _setup(kcoord_server, "rip")
    m = Member(client, kcoord_server.bootstrap, topic, group)
    try:
        m.wait_event("assigned", timeout=60)
        kcoord_server.wait_for(group, state="Stable", members=1)
        rule = kcoord_server.fault(api="Heartbeat", group=group, error="REBALANCE_IN_PROGRESS", once=True)
        fired = _eventually(lambda: _fired(kcoord_server, rule), "the heartbeat fault fires")
        _eventually(lambda: kcoord_server.requests_after(fired[0]["seq"], JOIN_GROUP, group),
                    f"{client} rejoins after REBALANCE_IN_PROGRESS")
        kcoord_server.wait_for(group, state="Stable", members=1)
        assert m.proc.poll() is None, f"{client} stopped instead of rejoining: {m.events}"
    finally:
        m.stop()


@pytest.mark.parametrize("client", CLIENTS)
def test_fenced_instance_id_stops_static_member(kcoord_server, client):
    topic, group = _setup(kcoord_server, "fenced")
    m = Member(client, kcoord_server.bootstrap, topic, group, instance_id="static-1")
    rule = None
    try:
        m.wait_event("assigned", timeout=60)
        kcoord_server.wait_for(group, state="Stable", members=1)
        if client == "kafka-python":
            # kafka-python's heartbeat thread only stops heartbeating on a fenced heartbeat;
            # the consumer raises FencedInstanceIdError when a group request in poll() is
            # fenced: fence the rejoins of a forced rebalance. Every one of them, as Kafka
            # fences every request of a replaced static member: a join still in flight when
            # poll()'s timeout ends is dropped by kafka-python, error and all (the stall in
            # docs/testing.md), and its next join would otherwise go through.
            rule = kcoord_server.fault(api="JoinGroup", group=group, error="FENCED_INSTANCE_ID")
            # A rebalance still completing when the rule went in (kafka-python's first join can be
            # followed by a second, the stall again) absorbs a forced one: force until a join meets
            # the rule.
            deadline = time.monotonic() + 60
            while not _fired(kcoord_server, rule) and time.monotonic() < deadline:
                assert kcoord_server.force_rebalance(group)
                settle = time.monotonic() + 3
                while not _fired(kcoord_server, rule) and time.monotonic() < settle:
                    time.sleep(0.2)
        else:
            rule = kcoord_server.fault(api="Heartbeat", group=group, error="FENCED_INSTANCE_ID", once=True)
        if client == "aiokafka":
            # aiokafka 0.14 does not know error 82: its heartbeat task fails with
            # UnknownError and the consumer stops.
            m.wait_event("closed", timeout=60)
            assert any(e["event"] == "error" and "UnknownError" in e["message"] for e in m.events), m.events
        else:
            m.wait_event("fenced", timeout=60)
        fired = len(_fired(kcoord_server, rule))
        assert fired >= 1 if client == "kafka-python" else fired == 1, fired
    finally:
        m.stop()
        if rule is not None:   # kafka-python's is not once: it would stay on the session's server
            kcoord_server.remove_fault(rule)


@pytest.mark.parametrize("client", CLIENTS)
def test_load_in_progress_on_a_heartbeat_is_retried(kcoord_server, client):
    """What a member meets when its coordinator moved and the new one is still loading (Kafka's
    answer then, and kcoord's during --coordinator-load-ms, docs/cluster.md). Kafka's Java
    client, librdkafka and kafka-python back off and heartbeat again. aiokafka 0.14 treats it as
    unexpected ("Unexpected exception in heartbeat task: GroupLoadInProgressError") and its
    consumer stops: which is why the failover scenarios (test_coordinator_failover.py) leave
    aiokafka out (docs/testing.md)."""
    topic, group = _setup(kcoord_server, "loading")
    m = Member(client, kcoord_server.bootstrap, topic, group)
    try:
        m.wait_event("assigned", timeout=60)
        kcoord_server.wait_for(group, state="Stable", members=1)
        generation = kcoord_server.app.coordinator.runtime.group(group).generation
        rule = kcoord_server.fault(api="Heartbeat", group=group, error="COORDINATOR_LOAD_IN_PROGRESS", once=True)
        fired = _eventually(lambda: _fired(kcoord_server, rule), "the heartbeat fault fires")
        if client == "aiokafka":
            _eventually(lambda: any(e.get("event") == "error" and "GroupLoadInProgress" in e.get("message", "")
                                    for e in m.events), "aiokafka stops on the error", timeout=30)
            return
        _eventually(lambda: kcoord_server.requests_after(fired[0]["seq"], HEARTBEAT, group) >= 2,
                    f"{client} heartbeats on after COORDINATOR_LOAD_IN_PROGRESS")
        kcoord_server.wait_for(group, state="Stable", members=1)
        assert m.proc.poll() is None, f"{client} stopped: {m.events}"
        assert kcoord_server.app.coordinator.runtime.group(group).generation == generation, \
            f"{client} rejoined after the error"
    finally:
        m.stop()
