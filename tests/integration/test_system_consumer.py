"""The consumer scenarios of Kafka's own system tests (kafkatest's client/consumer_test.py),
driven with the same clients they use, Kafka's VerifiableProducer and VerifiableConsumer
(kcoord.testing.verifiable), on kcoord and on the reference Kafka (`broker_any`).

Scaled down to run in minutes: 3 partitions, 2-3 consumers, a few thousand records,
session timeouts of seconds. What each test asserts is what Kafka's tests assert:
full assignment after every bounce, every acked record consumed, commits never going
back, duplicates only in a killed consumer's uncommitted tail; static members that
come back within the session timeout cause no rebalance; a second member with the same
group.instance.id fences the first; a killed member's partitions move to the others
once its session expires. Beyond Kafka's file, kcoord alone is also stopped and killed
under the consumers and restarted on its --data-dir.
"""
from __future__ import annotations

import signal
import time
import uuid
from collections import Counter, defaultdict

import pytest

from kcoord.testing.brokers import committed, create_topic, describe
from kcoord.testing.verifiable import VerifiableConsumer, VerifiableProducer, wait_assigned, wait_consumed

PARTITIONS = 3
SESSION_MS = 6000
RECORDS = 2000


def _names(prefix: str) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"{prefix}-t-{suffix}", f"{prefix}-g-{suffix}"


@pytest.fixture
def tools():
    """Every tool process a test starts, killed at its end whatever happened."""
    started = []

    def track(tool):
        started.append(tool)
        return tool.start()
    yield track
    for tool in started:
        tool.close()


def _check_commits_monotonic(incarnations) -> None:
    """Across every process of the group, a partition's committed offset never goes back."""
    per_tp = defaultdict(list)
    for c in incarnations:
        with c.lock:
            for e in c.events:
                if e.get("name") == "offsets_committed" and e.get("success", True):
                    for o in e.get("offsets") or ():
                        per_tp[(o["topic"], o["partition"])].append((e["timestamp"], o["offset"]))
    for tp, commits in per_tp.items():
        commits.sort()
        offsets = [off for _, off in commits]
        backs = [(a, b) for a, b in zip(offsets, offsets[1:]) if b < a]
        assert not backs, f"commits of {tp} went back: {backs[:5]}"


def _wait_group_committed(committed_of, ends, incarnations, timeout: float = 60.0) -> None:
    """The group's commits reach the log ends. A consumer whose commit failed and whose
    partition was then revoked and given back reads from the last commit again and commits
    only once it has read that batch again, after every record was already consumed once:
    so wait on the group's commits, not on what each process last said."""
    deadline = time.monotonic() + timeout
    while True:
        got = {tp: committed_of().get(tp) for tp in ends}
        if got == ends or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert got == ends, (got, [(c.name, c.commit_errors, c.committed(), dict(c.position)) for c in incarnations])


def _uncommitted_at_handover(c) -> set:
    """The (partition, offset)s this process consumed whose commit had not succeeded when the
    partition left it (a revocation, or the process's end): the only records another member
    may read again."""
    pending: dict = defaultdict(set)
    out: set = set()
    with c.lock:
        for e in c.events:
            name = e.get("name")
            if name == "records_consumed":
                for p in e.get("partitions", ()):
                    pending[(p["topic"], p["partition"])].update(range(p["minOffset"], p["maxOffset"] + 1))
            elif name == "offsets_committed" and e.get("success", True):
                for o in e.get("offsets") or ():
                    tp = (o["topic"], o["partition"])
                    pending[tp] = {off for off in pending[tp] if off >= o["offset"]}
            elif name == "partitions_revoked":
                for p in e.get("partitions", ()):
                    tp = (p["topic"], p["partition"])
                    out |= {(tp, off) for off in pending.pop(tp, ())}
    out |= {(tp, off) for tp, offs in pending.items() for off in offs}
    return out


def _duplicates(incarnations) -> Counter:
    seen = Counter()
    for c in incarnations:
        for tp_off in c.consumed_offsets():
            seen[tp_off] += 1
    return Counter({k: n for k, n in seen.items() if n > 1})


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
@pytest.mark.parametrize("clean", [True, False], ids=["clean", "hard"])
def test_consumer_bounce(broker_any, tools, strategy, clean):
    """Bounce every consumer of the group (a rolling SIGTERM restart, or SIGKILL of all
    and a restart), while a producer writes: the group recovers full assignment after
    each bounce and the records are consumed with no loss and duplicates only where a
    killed consumer had not committed yet."""
    b = broker_any.bootstrap
    topic, group = _names(f"bounce-{strategy}")
    create_topic(b, topic, PARTITIONS)
    producer = tools(VerifiableProducer(b, topic, max_messages=RECORDS, throughput=600,
                                        repeating_keys=60))

    def consumer(i):
        return tools(VerifiableConsumer(b, topic, group, assignment_strategy=strategy,
                                        session_timeout_ms=SESSION_MS, name=f"c{i}"))
    live = [consumer(i) for i in range(2)]
    every = list(live)
    wait_assigned(live, PARTITIONS)
    producer.wait_acked(RECORDS // 4)

    if clean:
        for i in range(len(live)):  # rolling: one at a time, the others keep consuming
            live[i].stop()
            assert "shutdown_complete" in live[i].names()
            live[i] = consumer(i)
            every.append(live[i])
            wait_assigned(live, PARTITIONS)
    else:
        for c in live:
            c.kill()
        live = [consumer(i) for i in range(len(live))]
        every += live
        # The killed members hold the group until their sessions expire.
        wait_assigned(live, PARTITIONS, timeout=SESSION_MS / 1000 + 40)

    producer.wait_done()
    assert producer.failed == 0 and len(producer.acked) == RECORDS
    ends = producer.end_offsets()
    wait_consumed(every, ends)
    _wait_group_committed(lambda: broker_any.committed(group), ends, every)
    for c in live:
        c.stop()
    _check_commits_monotonic(every)
    final = broker_any.committed(group)
    assert {tp: final.get(tp) for tp in ends} == ends, [(c.name, c.commit_errors, c.committed(), dict(c.position)) for c in every]

    # Each batch is committed before the next poll, so a record is read twice only when the
    # commit after it had not succeeded as its partition moved: a killed consumer's last batch,
    # or, in a clean bounce, a commit refused mid-rebalance or cut short by the stop (the
    # reference Kafka showed both under load, cooperative-sticky most).
    dups = set(_duplicates(every))
    handed_over = set().union(*(_uncommitted_at_handover(c) for c in every))
    assert dups <= handed_over, (f"records read again though their commit had succeeded: "
                                 f"{sorted(dups - handed_over)[:5]}", [(c.name, c.commit_errors) for c in every])
    if not clean:
        killed = every[:2]
        tail = {(tp, off) for c in killed for tp, off in c.consumed_offsets()
                if off >= c.last_commit.get(tp, 0)}
        assert dups <= tail, f"duplicates below a killed consumer's last commit: {sorted(dups - tail)[:5]}"


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "hard"])
def test_static_consumer_bounce(broker_any, tools, clean):
    """A static member (group.instance.id) that comes back within the session timeout
    gets its partitions back without a rebalance: the other members see no revocation
    and no new assignment, and keep their member ids."""
    b = broker_any.bootstrap
    topic, group = _names("static")
    create_topic(b, topic, PARTITIONS)
    session_ms = 30000  # far longer than a JVM restart on a busy machine

    def consumer(i):
        return tools(VerifiableConsumer(b, topic, group, instance_id=f"static-{i}",
                                        session_timeout_ms=session_ms))
    live = [consumer(i) for i in range(PARTITIONS)]
    before = wait_assigned(live, PARTITIONS)
    view = describe(b, group)
    ids = {m["group_instance_id"]: m["member_id"] for m in view.members}
    generation = _generation(broker_any, group)
    marks = [len(c.events) for c in live]  # forming the group took rebalances; none after this

    bounced = live[1]
    old_assignment = bounced.current_assignment()
    bounced.stop() if clean else bounced.kill()
    live[1] = consumer(1)
    live[1].wait(lambda c: c.current_assignment(), 60, "an assignment")
    assert live[1].current_assignment() == old_assignment
    assert wait_assigned(live, PARTITIONS) == before

    for i in (0, 2):
        c = live[i]
        later = c.names()[marks[i]:]
        assert "partitions_assigned" not in later and "partitions_revoked" not in later, f"{c.name}: {later}"
    after = describe(b, group)
    assert after.state == "Stable"
    new_ids = {m["group_instance_id"]: m["member_id"] for m in after.members}
    assert new_ids["static-0"] == ids["static-0"] and new_ids["static-2"] == ids["static-2"]
    assert new_ids["static-1"] != ids["static-1"]  # the returning instance joins with a new member id
    assert _generation(broker_any, group) == generation


def _generation(broker, group):
    """The group's generation where it can be seen: classic DescribeGroups does not carry
    it, so on Kafka the member ids and the members' events above stand for it."""
    if broker.kind != "kcoord":
        return None
    core = broker.coordinator.runtime

    async def read():
        return core.group(group).generation
    return broker.call(read)


def test_fencing_static_consumer(broker_any, tools):
    """Two processes with the same group.instance.id: the one that joins later takes the
    instance over and the older one is fenced (it reports the error and exits)."""
    b = broker_any.bootstrap
    topic, group = _names("fence")
    create_topic(b, topic, PARTITIONS)
    older = tools(VerifiableConsumer(b, topic, group, instance_id="dup", session_timeout_ms=SESSION_MS,
                                     name="older"))
    wait_assigned([older], PARTITIONS)
    newer = tools(VerifiableConsumer(b, topic, group, instance_id="dup", session_timeout_ms=SESSION_MS,
                                     name="newer"))
    older.proc.wait(60)
    assert "FencedInstanceIdException" in older.stderr() or any(
        "fenced" in str(e).lower() for e in older.events), older.stderr()[-2000:]
    wait_assigned([newer], PARTITIONS)
    assert newer.alive
    view = describe(b, group)
    assert [m["group_instance_id"] for m in view.members] == ["dup"]


def test_consumer_failure(broker_any, tools):
    """A SIGKILLed consumer's partitions stay with it until its session times out, then
    move to the survivors."""
    b = broker_any.bootstrap
    topic, group = _names("failure")
    create_topic(b, topic, PARTITIONS)
    live = [tools(VerifiableConsumer(b, topic, group, session_timeout_ms=SESSION_MS, name=f"c{i}"))
            for i in range(3)]
    wait_assigned(live, PARTITIONS)
    victim = next(c for c in live if c.current_assignment())
    lost = victim.current_assignment()
    survivors = [c for c in live if c is not victim]
    victim.kill()
    killed_at = time.monotonic()
    owned = wait_assigned(survivors, PARTITIONS, timeout=SESSION_MS / 1000 + 30)
    moved_after = time.monotonic() - killed_at
    assert lost <= set().union(*owned.values())
    # Not before the session could have expired (the last heartbeat was at most one
    # heartbeat interval, a third of the session, before the kill).
    assert moved_after >= SESSION_MS / 1000 * 2 / 3 - 0.5, moved_after


# A SIGTERM'd kcoord once hung in shutdown under load: a connection whose peer stopped
# reading waited for its unsent bytes forever (kcoord/server.py: CLOSE_GRACE_S).
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_coordinator_restart_under_consumers(tmp_path, tools, how):
    """kcoord only (the reference Kafka is one test-session broker): kcoord itself is
    stopped (SIGTERM) or killed (SIGKILL) mid-run and restarted on the same port and
    --data-dir. The producer retries through it, the group recovers full assignment,
    every acked record is consumed and commits never go back: what Kafka's system tests
    check across a broker bounce."""
    from kcoord.testing.reference_kafka import free_port
    from kcoord.testing.serve_process import serve, stop_server

    port = free_port()
    b = f"127.0.0.1:{port}"
    log = open(tmp_path / "kcoord.log", "w")  # read by no one while it runs: a pipe could fill up
    server = serve(tmp_path / "data", port, log=log)
    try:
        topic, group = _names(f"restart-{how}")
        create_topic(b, topic, PARTITIONS)
        # The tool turns the producer's retries off; a send in flight when kcoord goes
        # away would fail with "Disconnected", which says nothing about kcoord.
        producer = tools(VerifiableProducer(b, topic, max_messages=RECORDS, throughput=400, repeating_keys=60,
                                            properties={"retries": "2147483647"}))
        live = [tools(VerifiableConsumer(b, topic, group, session_timeout_ms=SESSION_MS, name=f"c{i}"))
                for i in range(2)]
        wait_assigned(live, PARTITIONS)
        producer.wait_acked(RECORDS // 4)
        stop_server(server, signal.SIGTERM if how == "sigterm" else signal.SIGKILL, tmp_path / "kcoord.log")
        server = serve(tmp_path / "data", port, log=log)
        producer.wait_done(90)
        errors = [e for e in producer.events if e.get("name") == "producer_send_error"]
        assert not errors and len(producer.acked) == RECORDS, [(e.get("exception"), e.get("message")) for e in errors[:3]]
        ends = producer.end_offsets()
        wait_consumed(live, ends, timeout=60)
        wait_assigned(live, PARTITIONS)
        _wait_group_committed(lambda: committed(b, group), ends, live)
        for c in live:
            c.stop()
        _check_commits_monotonic(live)
        assert {tp: off for tp, off in committed(b, group).items() if tp in ends} == ends
    finally:
        server.kill()
        server.wait(10)
        log.close()
