"""Coordinator failover with every stock client, on a three-broker kcoord and on the three-node
reference Kafka, with the same outcomes: Kafka's own system tests (tests/kafkatest/tests/client/
consumer_test.py: broker rolling bounce, broker failure) over each client's consumer group.

Every client runs at once in each scenario, each in its own groups over one topic (replication
factor 3, a producer writing throughout): a static group and a dynamic one of one member each per
client (fewer processes: the suite's two cores run every client at once), with both group
protocols where the client has them. Each member
commits synchronously after every batch and reports as Kafka's VerifiableConsumer does
(kcoord.testing.verifiable.ClientConsumer). What must hold on both brokers:

- no rebalance: a coordinator move, on a stop or a kill -9 of its broker, is ridden through
  (the new coordinator loads the group, members' heartbeats carry on with the same
  generation or epoch), and each member keeps its member id;
- commits resume on the new coordinator and never go backwards; every record produced is
  consumed, none twice (no member restarts, so no record after the last commit is read
  again), and at the end each group's committed offsets are the log end.

The bounce, the kill and the parked join run on both brokers in one test (kcoord first), every
member through a recording proxy for the whole cluster (kcoord.conformance.recorder.ClusterProxy), and the error codes each
client saw from the moment of the failure, per group API (kcoord.conformance.error_codes), are
compared: a code seen on one broker only must be one Kafka answers depending on when a request
lands while a coordinator moves (error_codes.FAILOVER_TIMING), and the codes that prove the
path must be seen on both. Each side's table is printed, and is in a failure's message.
"""
from __future__ import annotations

import json
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from kcoord.conformance import error_codes
from kcoord.conformance.recorder import ProxyThread
from kcoord.testing.failover import KafkaCluster, KcoordCluster
from kcoord.testing.brokers import wait_group
from kcoord.testing.verifiable import ClientConsumer, VerifiableProducer, wait_assigned, wait_consumed

PARTITIONS = 6
SESSION_MS = 20000
# (client, group protocol): every stock client the suite drives, both protocols where it has them,
# but aiokafka: 0.14 stops its consumer on a heartbeat answered COORDINATOR_LOAD_IN_PROGRESS,
# which Kafka and kcoord answer while the new coordinator loads (a client bug the scenarios would
# only meet by chance: tests/conformance/test_client_recovery.py shows it, docs/testing.md).
CLIENTS = [("kafka-python", "classic"), ("confluent", "classic"), ("confluent", "consumer"),
           ("java", "classic"), ("java4", "classic"), ("java4", "consumer")]


@pytest.fixture(params=["kcoord", "kafka"])
def cluster(request):
    if request.param == "kafka":
        yield KafkaCluster(request.getfixturevalue("reference_kafka_cluster"))
        return
    with KcoordCluster() as kcoord:
        yield kcoord


@pytest.fixture
def both(reference_kafka_cluster):
    """Run a scenario on a three-broker kcoord, then on the three-node reference Kafka:
    `both(scenario)` calls scenario(cluster, proxies) on each and returns {"kcoord": ..., "kafka": ...}."""
    def run(scenario):
        results = {}
        with ProxyThread() as proxies:
            for side in ("kcoord", "kafka"):
                try:
                    if side == "kcoord":
                        with KcoordCluster() as kcoord:
                            results[side] = scenario(kcoord, proxies)
                    else:
                        results[side] = scenario(KafkaCluster(reference_kafka_cluster), proxies)
                except BaseException as err:
                    err.add_note(f"(the scenario on {side})")
                    raise
        return results

    return run


def _label(client: str, protocol: str) -> str:
    return client if protocol == "classic" else f"{client}-kip848"


def _heartbeat_api(label: str) -> str:
    return "ConsumerGroupHeartbeat" if label.endswith("-kip848") else "Heartbeat"


class Groups:
    """Each client's static group and dynamic group, of one member each."""

    def __init__(self, bootstrap: str, topic: str, group_ids: list[str]):
        self.members: dict[str, list[ClientConsumer]] = {}
        self.labels: dict[str, str] = {}   # group id -> its client's label
        ids = iter(group_ids)
        for client, protocol in CLIENTS:
            label = _label(client, protocol)
            static, dynamic = next(ids), next(ids)
            self.labels[static] = self.labels[dynamic] = label
            self.members[static] = [ClientConsumer(client, bootstrap, topic, static, instance_id=f"{label}-0",
                                                   session_timeout_ms=SESSION_MS, group_protocol=protocol,
                                                   name=f"{label}-static")]
            self.members[dynamic] = [ClientConsumer(client, bootstrap, topic, dynamic,
                                                    session_timeout_ms=SESSION_MS, group_protocol=protocol,
                                                    name=f"{label}-dynamic")]

    def all(self) -> list[ClientConsumer]:
        return [m for ms in self.members.values() for m in ms]

    def start(self) -> None:
        for m in self.all():
            m.start()
        for group, ms in self.members.items():
            wait_assigned(ms, PARTITIONS, timeout=120)
        # Members that were still joining have settled: what they hold now must stay.
        time.sleep(2)
        for group, ms in self.members.items():
            wait_assigned(ms, PARTITIONS, timeout=60)
        self.settled = {m.name: (m.rebalances, set(m.member_ids)) for m in self.all()}

    def close(self) -> None:
        for m in self.all():
            m.close()


def _scenario(cluster, prefix: str, group_ids=None, bootstrap: str | None = None):
    """A topic, its producer (straight to the cluster) and the groups, whose members use
    `bootstrap` (the cluster's own by default, or a proxy's)."""
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, PARTITIONS)
    ids = group_ids or [f"{prefix}-{uuid.uuid4().hex[:6]}-{i}" for i in range(2 * len(CLIENTS))]
    producer = VerifiableProducer(cluster.bootstrap, topic, throughput=100, repeating_keys=60,
                                  properties={"retries": "2147483647", "acks": "all"})
    groups = Groups(bootstrap or cluster.bootstrap, topic, ids)
    return topic, producer, groups


def _check(groups: Groups, ends: dict) -> dict:
    """What each group did, as one comparable outcome per group; asserts what must hold."""
    outcomes = {}
    for group, members in groups.members.items():
        _wait_consumed(members, ends, timeout=120)
        deadline = time.monotonic() + 60
        while True:   # each member's last commit reaches the log end of what it holds
            committed = {}
            for m in members:
                committed.update({tp: off for tp, off in m.committed().items() if tp in m.current_assignment()})
            if all(committed.get(tp) == end for tp, end in ends.items()) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        label = members[0].name
        rebalances = sum(m.rebalances - groups.settled[m.name][0] for m in members)
        ids_kept = all(set(m.member_ids) == groups.settled[m.name][1] for m in members)
        consumed = [(tp, off) for m in members for tp, ranges in m.consumed.items() for lo, hi in ranges
                    for off in range(lo, hi + 1)]
        duplicates = len(consumed) - len(set(consumed))
        backwards = []
        for m in members:
            last: dict = {}
            for commit in m.commits:
                for tp, off in commit.items():
                    if off < last.get(tp, -1):
                        backwards.append((m.name, tp, last[tp], off))
                    last[tp] = off
        outcomes[label] = {"rebalances": rebalances, "member_ids_kept": ids_kept, "duplicates": duplicates,
                           "commits_backwards": backwards, "committed_is_end": committed == ends}
    return outcomes


def _expected(groups: Groups) -> dict:
    return {members[0].name: {"rebalances": 0, "member_ids_kept": True, "duplicates": 0, "commits_backwards": [],
                              "committed_is_end": True} for members in groups.members.values()}


def _finish(producer: VerifiableProducer, groups: Groups) -> None:
    """The producer stops; every group must read to its end as _expected says."""
    producer.stop()
    assert _check(groups, producer.end_offsets()) == _expected(groups)


def _wait_all_consumed(groups: Groups, producer: VerifiableProducer, timeout: float = 120) -> None:
    """Every group reads everything acked so far: the groups are served again."""
    ends = producer.end_offsets()
    for members in groups.members.values():
        _wait_consumed(members, ends, timeout)


def _wait_consumed(members: list, ends: dict, timeout: float) -> None:
    """wait_consumed, and on a timeout what the group's members were doing."""
    try:
        wait_consumed(members, ends, timeout=timeout)
    except TimeoutError as err:
        seen = {m.name: (m.alive, sorted(m.current_assignment()), [e.get("name") for e in m.events[-6:]],
                         m.commit_errors[-2:], m.stderr()[-500:]) for m in members}
        raise TimeoutError(f"{err}; members: {seen}") from None


@dataclass
class Run:
    """One broker's run of a scenario: the error codes its clients saw from the failure on."""
    seen: dict            # error_codes.codes_seen: (label, api) -> codes
    from_survivors: dict  # the same, answered by the brokers that stayed up
    seconds: float
    exchanges: list       # the transcript
    failed_at: int        # when the broker went, on the transcript's clock


def _run(proxy, labels: dict[str, str], failed_at: int, survivors: set[int], began: float) -> Run:
    exchanges = proxy.transcript.sorted()
    return Run(error_codes.codes_seen(exchanges, labels, failed_at),
               error_codes.codes_seen(exchanges, labels, failed_at, brokers=survivors),
               time.monotonic() - began, exchanges, failed_at)


def _compare_codes(runs: dict[str, Run], out: Path, may_differ: dict, required: dict,
                   required_from_survivors: dict, checks=()) -> None:
    """Kafka's and kcoord's tables agree up to `may_differ`, and each side saw the codes that
    prove the scenario's path; on a failure both transcripts are kept in `out`."""
    report = "\n".join(f"{side} (scenario {run.seconds:.0f} s), error codes from the failure on:\n"
                       f"{error_codes.table(run.seen)}" for side, run in runs.items())
    print(f"\n{report}")
    problems = error_codes.differences(runs["kafka"].seen, runs["kcoord"].seen, may_differ)
    for side, run in runs.items():
        problems += [f"{side}: {p}" for p in error_codes.missing(run.seen, required)]
        problems += [f"{side}: {p}" for check in checks for p in check(run.seen)]
        problems += [f"{side}: {p} from a broker that stayed up"
                     for p in error_codes.missing(run.from_survivors, required_from_survivors)]
    if problems:
        for side, run in runs.items():
            (out / f"{side}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in run.exchanges))
    assert not problems, "\n".join(problems) + f"\n\n{report}\n\ntranscripts (failure at t_ms " + \
        ", ".join(f"{side} {run.failed_at}" for side, run in runs.items()) + f"): {out}/{{kcoord,kafka}}.jsonl"


def _wait_codes(proxy, labels: dict[str, str], failed_at: int, brokers: set[int], required: dict,
                timeout: float = 60) -> None:
    """Until the transcript shows each label's `required` codes from `brokers` (a client that
    carries on shows them within its heartbeat interval); the test's check says what is missing."""
    deadline = time.monotonic() + timeout
    while error_codes.missing(error_codes.codes_seen(proxy.transcript.sorted(), labels, failed_at, brokers), required) \
            and time.monotonic() < deadline:
        time.sleep(0.5)


# What shows that each client carried on through a failover: FindCoordinator, its heartbeat and
# OffsetCommit answered NONE.
CARRIED_ON = {label: {("FindCoordinator", "NONE"), (_heartbeat_api(label), "NONE"), ("OffsetCommit", "NONE")}
              for label in {_label(c, p) for c, p in CLIENTS}}


# A rolling bounce restarts each broker at once: a client whose coordinator is back on the broker
# it reconnects to carries on without asking for it again (the Java consumer did so on kcoord in a
# loaded run of 2026-11-27: its commits went on, answered NONE, to the restarted broker). What
# proves it carried on is its heartbeats and commits; a client told its coordinator moved must
# also have found the new one.
BOUNCED = {label: pairs - {("FindCoordinator", "NONE")} for label, pairs in CARRIED_ON.items()}
MOVED = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE")


def _found_again_when_told(seen: dict) -> list[str]:
    told = sorted({label for (label, _), codes in seen.items() if any(codes[c] for c in MOVED)})
    return [f"{label} FindCoordinator: NONE never seen after {'/'.join(MOVED)}" for label in told
            if not seen.get((label, "FindCoordinator"), {}).get("NONE")]


def _bounce_scenario(cluster, proxies) -> Run:
    began = time.monotonic()
    proxy = proxies.cluster(cluster.bootstrap)
    topic, producer, groups = _scenario(cluster, "bounce", bootstrap=proxy.bootstrap)
    brokers = set(range(cluster.size))
    try:
        producer.start()
        groups.start()
        failed_at = proxy.now_ms()
        for node in range(cluster.size):
            cluster.stop(node)
            _wait_all_consumed(groups, producer)
            cluster.start(node)
            _wait_all_consumed(groups, producer)
        _wait_codes(proxy, groups.labels, failed_at, brokers, BOUNCED)
        _finish(producer, groups)
    finally:
        producer.close()
        groups.close()
        proxies.close_proxy(proxy)
    return _run(proxy, groups.labels, failed_at, brokers, began)


def test_rolling_bounce_of_every_broker_rebalances_no_group(both, tmp_path):
    """Each broker in turn stops (Kafka's controlled shutdown) and starts again; on both brokers no
    group rebalances, every client keeps heartbeating and committing, and what they were answered
    from the first stop on differs only in the codes of a moving coordinator."""
    runs = both(_bounce_scenario)
    _compare_codes(runs, tmp_path, error_codes.FAILOVER_TIMING, BOUNCED, {}, checks=(_found_again_when_told,))


def _kill_scenario(cluster, proxies) -> Run:
    began = time.monotonic()
    victim = 1
    ids = cluster.groups_on(victim, 2 * len(CLIENTS), f"kill-{uuid.uuid4().hex[:6]}")
    proxy = proxies.cluster(cluster.bootstrap)
    topic, producer, groups = _scenario(cluster, "kill", ids, proxy.bootstrap)
    try:
        producer.start()
        groups.start()
        assert all(cluster.coordinator_of(g) == victim for g in ids)
        failed_at = proxy.now_ms()
        cluster.kill(victim)
        for g in ids:
            assert cluster.wait_coordinator_moved(g, victim) != victim
        _wait_all_consumed(groups, producer)
        _wait_codes(proxy, groups.labels, failed_at, set(range(cluster.size)) - {victim}, CARRIED_ON)
        cluster.start(victim)
        _finish(producer, groups)
    finally:
        producer.close()
        groups.close()
        proxies.close_proxy(proxy)
    return _run(proxy, groups.labels, failed_at, set(range(cluster.size)) - {victim}, began)


def test_kill_of_the_coordinators_broker_rebalances_no_group(both, tmp_path):
    """Every member's coordinator is killed; on both brokers no group rebalances, and every client
    finds the new coordinator and heartbeats and commits there (NONE from a broker that stayed up)."""
    runs = both(_kill_scenario)
    _compare_codes(runs, tmp_path, error_codes.FAILOVER_TIMING, {}, CARRIED_ON)


def _parked_scenario(cluster, proxies) -> Run:
    """A JoinGroup waits in a rebalance (the group's other member is frozen, so it does not
    rejoin) when its coordinator's broker shuts down: the parked join is answered
    NOT_COORDINATOR, the member finds the new coordinator and joins again, and once the frozen
    member wakes the group forms with both, the first keeping its member id."""
    began = time.monotonic()
    classic = [c for c, p in CLIENTS if p == "classic"]
    victim = 2
    # The frozen members' sessions must outlast the second members' start (JVMs, under load).
    session_ms = 60000
    ids = cluster.groups_on(victim, len(classic), f"parked-{uuid.uuid4().hex[:6]}")
    topic = f"parked-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, PARTITIONS)
    proxy = proxies.cluster(cluster.bootstrap)
    firsts, seconds = [], []
    try:
        for client, group in zip(classic, ids):
            firsts.append(ClientConsumer(client, proxy.bootstrap, topic, group, session_timeout_ms=session_ms,
                                         name=f"{client}-first").start())
        for first in firsts:
            wait_assigned([first], PARTITIONS, timeout=120)
            first.wait(lambda c: c.member_ids, 30, "its member id")
        kept = {first.name: {m for m, _ in first.member_ids} for first in firsts}
        for first in firsts:
            os.kill(first.proc.pid, signal.SIGSTOP)
        for client, group in zip(classic, ids):
            seconds.append(ClientConsumer(client, proxy.bootstrap, topic, group, session_timeout_ms=session_ms,
                                          name=f"{client}-second").start())
        for second in seconds:
            second.wait(lambda c: "startup_complete" in c.names(), 60, "start-up")
        for group in ids:
            wait_group(cluster.bootstrap, group, timeout=30, state="PreparingRebalance")
        failed_at = proxy.now_ms()
        cluster.stop(victim)
        for group in ids:
            cluster.wait_coordinator_moved(group, victim)
        for first in firsts:
            os.kill(first.proc.pid, signal.SIGCONT)
        for first, second in zip(firsts, seconds):
            owned = wait_assigned([first, second], PARTITIONS, timeout=90)
            assert all(owned.values()), owned
            # The same member, in a later generation: it rejoined the rebalance, it did not start over.
            assert {m for m, _ in first.member_ids} == kept[first.name], (first.name, first.member_ids)
    finally:
        for m in firsts:
            if m.proc is not None and m.proc.poll() is None:
                os.kill(m.proc.pid, signal.SIGCONT)
        for m in firsts + seconds:
            m.close()
        proxies.close_proxy(proxy)
        if not cluster.running(victim):
            cluster.start(victim)
    return _run(proxy, dict(zip(ids, classic)), failed_at, set(range(cluster.size)) - {victim}, began)


# The parked scenario's groups rebalance by design once the frozen member wakes. Whether a
# member then joins once or twice (kafka-python's woken leader was seen to rejoin right after its
# SyncGroup, on kcoord, with nothing in the answers to ask for it), and so whether the other's
# SyncGroup lands in the next rebalance, is the client's timing, not the coordinator's.
PARKED_TIMING = {**error_codes.FAILOVER_TIMING,
                 **{api: error_codes.FAILOVER_TIMING[api] | {"REBALANCE_IN_PROGRESS"}
                    for api in ("JoinGroup", "SyncGroup", "Heartbeat")}}


def test_a_join_parked_when_its_coordinator_moves_ends_in_one_group(both, tmp_path):
    """The parked scenario on both brokers. Every classic client's parked JoinGroup is answered
    NOT_COORDINATOR, and its next, with the member id the rebalance gave it, UNKNOWN_MEMBER_ID:
    the new coordinator loads the group as its records left it, before that join."""
    runs = both(_parked_scenario)
    classic = {c for c, p in CLIENTS if p == "classic"}
    _compare_codes(runs, tmp_path, PARKED_TIMING,
                   {c: {("JoinGroup", "NOT_COORDINATOR"), ("JoinGroup", "UNKNOWN_MEMBER_ID")} for c in classic}, {})


def test_connect_workers_ride_through_a_kill_of_their_coordinators_broker(cluster, tmp_path):
    """Kafka Connect distributed workers (sessioned, two workers, four tasks): the broker
    coordinating their group is killed. Unlike a consumer, a worker that loses its coordinator
    asks to rejoin once it finds the new one (its log: "Rebalance started"), on Kafka as on
    kcoord: one more generation at most, the same workers, every task running exactly once."""
    from kcoord.testing.connect import ConnectCluster, verifiable_source_config

    victim = 0
    [group] = cluster.groups_on(victim, 1, f"connect-{uuid.uuid4().hex[:6]}")
    topic = f"{group}-out"
    cluster.create_topic(topic, 4)
    replicated = {f"{kind}.storage.replication.factor": "3" for kind in ("config", "offset", "status")}
    with ConnectCluster(cluster.bootstrap, protocol="sessioned", group_id=group, session_timeout_ms=SESSION_MS,
                        extra=replicated, workdir=tmp_path / "connect") as connect:
        connect.add_workers(2)
        connect.create_connector("src", verifiable_source_config(topic, tasks=4))
        connect.wait_running({"src": 4}, workers=2, timeout=120, stable_for=3.0)
        generations = connect.generations()
        try:
            assert cluster.coordinator_of(group) == victim
            cluster.kill(victim)
            cluster.wait_coordinator_moved(group, victim)
            after = connect.wait_running({"src": 4}, workers=2, timeout=120, stable_for=5.0)
        finally:
            if not cluster.running(victim):
                cluster.start(victim)
        assert sorted(after.tasks) == [f"src-{i}" for i in range(4)]
        added = connect.generations()[len(generations):]
        assert connect.generations()[:len(generations)] == generations and len(added) <= 1, connect.generations()
