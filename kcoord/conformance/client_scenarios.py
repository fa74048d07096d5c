"""Client scenarios: stock clients (kafka-python, aiokafka, confluent-kafka, Java) as
member processes against the broker under test; observed through the clients'
own rebalance callbacks, so any broker can be checked."""
from __future__ import annotations

import asyncio
import time
import uuid

from kcoord.conformance import raw_scenarios
from kcoord.conformance.members import CONSUMER_PROTOCOL_CLIENTS, Member
from kcoord.conformance.raw_scenarios import Outcome
from kcoord.conformance.rawclient import RawConnection, parse_bootstrap

PARTITIONS = 3
TIMEOUT = 90


class NoTopicCreation(Exception):
    pass


def _topic(bootstrap: str, name: str) -> str:
    topic = f"kcoord-check-{name}-{uuid.uuid4().hex[:8]}"
    host, port = parse_bootstrap(bootstrap)

    async def create():
        broker = raw_scenarios.Broker(host, port)
        await broker.probe()
        await raw_scenarios._create_topic(broker, topic, PARTITIONS)
    async def auto_create() -> int:
        # No CreateTopics (librdkafka's mock): let Metadata auto-create it, learn its partitions.
        async with RawConnection(host, port) as c:
            for _ in range(50):
                r = await c.call(3, 4, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})
                if r.topics and r.topics[0].error_code == 0 and r.topics[0].partitions:
                    return len(r.topics[0].partitions)
                await asyncio.sleep(0.2)
        raise NoTopicCreation(f"cannot create topic {topic}: no CreateTopics and no auto-creation")

    try:
        asyncio.run(create())
        return topic, PARTITIONS
    except raw_scenarios.Unsupported:
        return topic, asyncio.run(auto_create())


def _consumer_protocol_topic(bootstrap: str, name: str) -> tuple[str, int]:
    """A topic for consumer-protocol members, once the group coordinator assigns all of it, so
    that no first epoch goes by with nothing (kcoord.conformance.consumer_protocol_scenarios)."""
    from kcoord.conformance.consumer_protocol_scenarios import ready_topic

    host, port = parse_bootstrap(bootstrap)

    async def create():
        broker = raw_scenarios.Broker(host, port)
        await broker.probe()
        return await ready_topic(broker, PARTITIONS, f"kcoord-check-{name}-{uuid.uuid4().hex[:8]}")

    try:
        return asyncio.run(create()), PARTITIONS
    except raw_scenarios.Unsupported:
        return _topic(bootstrap, name)


def _owned(member: Member) -> set[int]:
    """Partitions the member owns now, replaying its callbacks (eager: assigned replaces)."""
    owned: set[int] = set()
    for e in list(member.events):
        if e["event"] == "assigned":
            owned = set(e.get("owned", e["partitions"])) if "owned" in e else owned | set(e["partitions"])
        elif e["event"] == "revoked":
            owned -= set(e["partitions"])
    return owned


def _wait(predicate, timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _settle(*members: Member, quiet: float = 2.0, timeout: float = TIMEOUT) -> None:
    """Wait until no member has reported a rebalance callback for `quiet` seconds: a first
    assignment made before the topic's metadata arrived is followed by another."""
    deadline = time.monotonic() + timeout
    counts, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = [len(m.events) for m in members]
        if now != counts:
            counts, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.1)


def _stop_all(*members: Member) -> None:
    for m in members:
        try:
            m.stop(timeout=20)
        except Exception:
            m.kill()


def _two_sharing(n: int, started: list[Member], second, disjoint: bool = False) -> Outcome | None:
    """The opening of every two-member scenario: `started[0]` alone owns all `n` partitions
    and settles, then `second()` starts (appended to `started`, for the caller to stop) and
    the two share the topic and settle. None when all that happened, else the failing Outcome.

    One after the other: members started together race for the first join, which makes
    every run (and transcript) a different story. `disjoint` asks that no partition be
    owned twice, which the consumer group protocol guarantees once it has settled."""
    a = started[0]
    if not _wait(lambda: _owned(a) == set(range(n))):
        return Outcome(False, f"a lone member owns {sorted(_owned(a))}", f"a lone member owns {list(range(n))}")
    _settle(a)
    b = second()
    started.append(b)

    def shared() -> bool:
        owned_a, owned_b = _owned(a), _owned(b)
        return bool(owned_a and owned_b and owned_a | owned_b == set(range(n))
                    and not (disjoint and owned_a & owned_b))
    if not _wait(shared):
        return Outcome(False, f"never shared the topic: a {sorted(_owned(a))}, b {sorted(_owned(b))}",
                       "both members own partitions")
    _settle(a, b)
    return None


def consume_in_group(bootstrap: str, client: str) -> Outcome:
    topic, n = _topic(bootstrap, "join")
    group = f"kcoord-check-join-{uuid.uuid4().hex[:8]}"
    m = Member(client, bootstrap, topic, group)
    try:
        ok = _wait(lambda: _owned(m) == set(range(n)))
        return Outcome(ok, f"owns {sorted(_owned(m))}", f"owns {list(range(n))}")
    finally:
        _stop_all(m)


def leave_one_rebalance(bootstrap: str, client: str) -> Outcome:
    """Two members; one closes (LeaveGroup): the other takes every partition in one rebalance."""
    topic, n = _topic(bootstrap, "leave")
    group = f"kcoord-check-leave-{uuid.uuid4().hex[:8]}"
    started = [Member(client, bootstrap, topic, group)]
    try:
        if failed := _two_sharing(n, started, lambda: Member(client, bootstrap, topic, group)):
            return failed
        a, b = started
        mark = len(a.events)
        b.stop()
        took_all = _wait(lambda: _owned(a) == set(range(n)))
        time.sleep(1)  # a second rebalance, if any, would show up here
        assigned = sum(e["event"] == "assigned" for e in a.events[mark:])
        ok = took_all and assigned == 1
        return Outcome(ok, f"remaining owns {sorted(_owned(a))} after {assigned} assignment(s)",
                       f"remaining owns {list(range(n))} after 1 assignment(s)")
    finally:
        _stop_all(*started)


def static_restart(bootstrap: str, client: str) -> Outcome:
    """A static follower killed and restarted within its session timeout gets its partitions
    back with no rebalance: the other member sees no revocation or assignment."""
    return _static_restart(bootstrap, client, restart_leader=False)


def static_leader_restart(bootstrap: str, client: str) -> Outcome:
    """The same for the group's leader. Clients below JoinGroup v9 must be told the old leader
    id so they do not assign (and then rejoin as leader); from v9 they get skip_assignment."""
    return _static_restart(bootstrap, client, restart_leader=True)


def _static_restart(bootstrap: str, client: str, restart_leader: bool) -> Outcome:
    # `a` starts alone and leads, then `b` joins; either one is restarted.
    topic, n = _topic(bootstrap, "static")
    group = f"kcoord-check-static-{uuid.uuid4().hex[:8]}"
    started = [Member(client, bootstrap, topic, group, instance_id="check-a", session_ms=30000)]
    try:
        if failed := _two_sharing(n, started, lambda: Member(client, bootstrap, topic, group,
                                                             instance_id="check-b", session_ms=30000)):
            return failed
        a, b = started
        victim, other = (a, b) if restart_leader else (b, a)
        before = sorted(_owned(victim))
        mark = len(other.events)
        victim.kill()
        restarted = Member(client, bootstrap, topic, group, instance_id=victim.instance_id, session_ms=30000)
        started.append(restarted)
        back = _wait(lambda: _owned(restarted) == set(before))
        time.sleep(2)  # a rebalance the restart wrongly caused would reach the other member by now
        moves = [e["event"] for e in other.events[mark:] if e["event"] in ("assigned", "revoked")]
        ok = back and not moves
        return Outcome(ok, f"restarted owns {sorted(_owned(restarted))}, other saw {moves or 'nothing'}",
                       f"restarted owns {before}, other saw nothing")
    finally:
        _stop_all(*started)


# ------------------------------------------------------------------ the consumer group protocol (KIP-848)
def _no_consumer_protocol(client: str) -> Outcome | None:
    if client in CONSUMER_PROTOCOL_CLIENTS:
        return None
    return Outcome(True, f"{client} has no group.protocol=consumer",
                   f"clients with it: {', '.join(CONSUMER_PROTOCOL_CLIENTS)}", skipped=True)


def _revoked_after(member: Member, mark: int) -> list[int]:
    return sorted(p for e in member.events[mark:] if e["event"] == "revoked" for p in e["partitions"])


def kip848_consume_in_group(bootstrap: str, client: str) -> Outcome:
    """A group.protocol=consumer member alone in its group is given every partition."""
    if skipped := _no_consumer_protocol(client):
        return skipped
    topic, n = _consumer_protocol_topic(bootstrap, "cpjoin")
    m = Member(client, bootstrap, topic, f"kcoord-check-cpjoin-{uuid.uuid4().hex[:8]}", group_protocol="consumer")
    try:
        ok = _wait(lambda: _owned(m) == set(range(n)))
        _settle(m)  # the OffsetFetch that follows the assignment, in every run's transcript
        return Outcome(ok, f"owns {sorted(_owned(m))}", f"owns {list(range(n))}")
    finally:
        _stop_all(m)


def kip848_leave_one(bootstrap: str, client: str) -> Outcome:
    """Two group.protocol=consumer members share the topic; one closes (epoch -1): the other is
    given the rest without giving up anything it had (no stop-the-world revocation)."""
    if skipped := _no_consumer_protocol(client):
        return skipped
    topic, n = _consumer_protocol_topic(bootstrap, "cpleave")
    group = f"kcoord-check-cpleave-{uuid.uuid4().hex[:8]}"
    started = [Member(client, bootstrap, topic, group, group_protocol="consumer")]
    try:
        if failed := _two_sharing(n, started, lambda: Member(client, bootstrap, topic, group, group_protocol="consumer"),
                                  disjoint=True):
            return failed
        a, b = started
        mark = len(a.events)
        b.stop()
        took_all = _wait(lambda: _owned(a) == set(range(n)))
        time.sleep(1)
        revoked = _revoked_after(a, mark)
        ok = took_all and not revoked
        return Outcome(ok, f"remaining owns {sorted(_owned(a))}, gave up {revoked or 'nothing'}",
                       f"remaining owns {list(range(n))}, gave up nothing")
    finally:
        _stop_all(*started)


def kip848_static_restart(bootstrap: str, client: str) -> Outcome:
    """A static group.protocol=consumer member closes (epoch -2: it keeps its place) and a new
    process with its instance id comes back within the session: it is given the same
    partitions, and the other member neither gives up nor gains anything."""
    if skipped := _no_consumer_protocol(client):
        return skipped
    topic, n = _consumer_protocol_topic(bootstrap, "cpstatic")
    group = f"kcoord-check-cpstatic-{uuid.uuid4().hex[:8]}"
    started = [Member(client, bootstrap, topic, group, group_protocol="consumer", instance_id="check-a")]
    try:
        if failed := _two_sharing(n, started, lambda: Member(client, bootstrap, topic, group, group_protocol="consumer",
                                                             instance_id="check-b"), disjoint=True):
            return failed
        a, b = started
        before = sorted(_owned(b))
        mark = len(a.events)
        b.stop()
        restarted = Member(client, bootstrap, topic, group, group_protocol="consumer", instance_id="check-b")
        started.append(restarted)
        back = _wait(lambda: _owned(restarted) == set(before))
        time.sleep(2)  # a change the restart wrongly caused would reach the other member by now
        moves = [e["event"] for e in a.events[mark:] if e["event"] in ("assigned", "revoked") and e["partitions"]]
        ok = back and not moves
        return Outcome(ok, f"restarted owns {sorted(_owned(restarted))}, other saw {moves or 'nothing'}",
                       f"restarted owns {before}, other saw nothing")
    finally:
        _stop_all(*started)


SCENARIOS = {
    "client:consume-in-group": consume_in_group,
    "client:leave-one-rebalance": leave_one_rebalance,
    "client:static-restart-no-rebalance": static_restart,
    "client:static-leader-restart-no-rebalance": static_leader_restart,
    "client:kip848-consume-in-group": kip848_consume_in_group,
    "client:kip848-leave-one": kip848_leave_one,
    "client:kip848-static-restart": kip848_static_restart,
}
