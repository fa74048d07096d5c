"""`kcoord report --kafka HOST:PORT --offsets-topic`: the group coordinator's own records in
`__consumer_offsets`, read with Spark's Kafka source and decoded with Kafka's schemas, on
kcoord and on the reference Apache Kafka.

The same scenario runs on both brokers with real kafka-python clients: a group's first member
joins and commits, a second joins and both commit, the second leaves and the first commits,
the first leaves; a second (simple) group commits twice and is deleted. Each broker's report
is checked against the scenario, and the two reports against each other once member ids,
times and names are replaced.
"""
from __future__ import annotations

import asyncio
import queue
import threading
import time
import uuid

import pytest

from kcoord.cli import main as kcoord_main
from kcoord.conformance.member import subscribe_kafka_python
from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, wait_group

pytestmark = pytest.mark.kcoord(node_id=1)


class Polling:
    """A kafka-python consumer polling in a thread of its own (it is not thread-safe: calls
    run in that thread between polls); no auto-commit, so every commit is the scenario's."""

    def __init__(self, bootstrap: str, topic: str, group: str, client_id: str):
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(group_id=group, bootstrap_servers=bootstrap, client_id=client_id,
                                      enable_auto_commit=False, auto_offset_reset="earliest",
                                      session_timeout_ms=10000, heartbeat_interval_ms=1000)
        subscribe_kafka_python(self.consumer, [topic])
        self.jobs: queue.Queue = queue.Queue()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.is_set():
            self.consumer.poll(200)
            while not self.jobs.empty():
                fn, answer = self.jobs.get()
                try:
                    answer.put((fn(self.consumer), None))
                except Exception as err:  # handed to the caller
                    answer.put((None, err))
        self.consumer.close()  # LeaveGroup

    def call(self, fn, timeout: float = 30):
        answer: queue.Queue = queue.Queue()
        self.jobs.put((fn, answer))
        result, err = answer.get(timeout=timeout)
        if err is not None:
            raise err
        return result

    def commit_assigned(self, offset: int) -> int:
        """Commits `offset` for each partition it owns; returns how many."""
        from kafka.structs import OffsetAndMetadata

        def commit(c):
            owned = c.assignment()
            c.commit({tp: OffsetAndMetadata(offset, "", -1) for tp in owned})
            return len(owned)
        return self.call(commit)

    def close(self):
        self.done.set()
        self.thread.join(30)


def _stable(bootstrap: str, group: str, members: int) -> None:
    """Stable with `members` members, each owning its partitions (its poll thread knows)."""
    wait_group(bootstrap, group, 60, state="Stable", members=members)
    time.sleep(1.5)  # the members' SyncGroup answers reach their poll loops
    wait_group(bootstrap, group, 60, state="Stable", members=members)


def _scenario(bootstrap: str, topic: str, group: str, simple: str) -> dict[str, int]:
    """Returns the number of offset commit records each group's commits wrote."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    create_topic(bootstrap, topic, 2)
    commits = {group: 0, simple: 0}
    first = Polling(bootstrap, topic, group, "op-first")
    second = None
    try:
        _stable(bootstrap, group, 1)
        commits[group] += first.commit_assigned(1)
        second = Polling(bootstrap, topic, group, "op-second")
        _stable(bootstrap, group, 2)
        commits[group] += first.commit_assigned(2) + second.commit_assigned(2)
        second.close()
        second = None
        _stable(bootstrap, group, 1)
        commits[group] += first.commit_assigned(3)
    finally:
        if second is not None:
            second.close()
        first.close()
    wait_group(bootstrap, group, 60, state="Empty")
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=simple, enable_auto_commit=False)
    c.commit({TopicPartition(topic, 0): OffsetAndMetadata(5, "", -1)})
    c.commit({TopicPartition(topic, 0): OffsetAndMetadata(6, "", -1), TopicPartition(topic, 1): OffsetAndMetadata(6, "", -1)})
    c.close()
    commits[simple] += 3
    with Connection.to(bootstrap) as conn:
        answer = conn.call(42, 2, {"groups_names": [simple]})
        assert answer.results[0].error_code == 0
    return commits


def _table(spark, path, groups) -> list[dict]:
    from pyspark.sql import functions as F

    return [r.asDict() for r in spark.read.parquet(str(path)).where(F.col("group_id").isin(list(groups))).collect()]


def _report(spark, bootstrap: str, out, groups):
    # The command itself, in this process: it uses the module's running Spark session.
    assert kcoord_main(["report", "--kafka", bootstrap, "--offsets-topic", "--out", str(out)]) == 0
    assert (out / "report.html").stat().st_size > 0
    return {t: _table(spark, out / t, groups) for t in ("events", "rebalances", "group_hourly")}


def _settled(rebalances: list[dict]) -> list[dict]:
    """A group's rebalances without those that changed no member (kafka-python's leader may
    rejoin by itself right after an assignment, on Kafka too), in generation order."""
    return [r for r in sorted(rebalances, key=lambda r: r["generation_to"])
            if r["joined"] or r["left"] or r["outcome"] == "empty"]


async def _streams_scenario(bootstrap: str, group: str) -> tuple[str, object]:
    """A member of `group` takes all four tasks, a second joins (the first revokes two), the second
    leaves (the first takes them back). Returns the first's member id and the group described."""
    from kcoord.conformance.raw_scenarios import Broker, _create_topic
    from kcoord.conformance.rawclient import parse_bootstrap
    from kcoord.conformance.streams_check_scenarios import StreamsMember, describe, settle, topology

    b = Broker(*parse_bootstrap(bootstrap))
    await b.probe()
    await _create_topic(b, f"{group}-in", 4)
    first = await StreamsMember(b, group, topology(f"{group}-in")).open()
    second = await StreamsMember(b, group, topology(f"{group}-in")).open()
    try:
        await settle([first], lambda ms: len(ms[0].active.get("0", [])) == 4)
        await settle([first, second], lambda ms: [len(m.active.get("0", [])) for m in ms] == [2, 2]
                     and ms[0].epoch == ms[1].epoch)
        await second.leave()
        await settle([first], lambda ms: len(ms[0].active.get("0", [])) == 4)
        return first.member_id, await describe(b, group)
    finally:
        await first.close()
        await second.close()


def _check_streams_group(spark, out, group: str, member: str, described, name: str) -> None:
    """The streams group's records read back: its row (epochs as described, one member of two
    seen, a revocation) and the first member's tasks over time: all four, two of them revoking,
    two, all four again."""
    (row,) = _table(spark, out / "streams_groups", {group})
    assert (row["group_epoch"], row["assignment_epoch"], row["members"], row["members_seen"], row["sources"]) == (
        described.group_epoch, described.assignment_epoch, 1, 2, "offsets_topic"), (name, row)
    assert row["revocations"] >= 1, (name, row)
    events = sorted(_table(spark, out / "events", {group}), key=lambda e: e["time_ms"])
    held = [e["tasks"] for e in events if e["kind"] == "streams_member_assignment" and e["member_id"] == member]
    assert held[-1] == "active 0_0,0_1,0_2,0_3", (name, held)
    assert any(t.startswith("active ") and "; revoking active " in t for t in held), (name, held)
    assert any(t.count(",") == 1 and "revoking" not in t for t in held), (name, held)
    assert not [e for e in events if e["kind"] == "generation"], name   # no classic group's generations


def _normalised(tables: dict, names: dict[str, str]) -> dict:
    """Names to placeholders, generations to their rank among settled ones, member ids, hosts,
    times and partitions dropped: what both brokers must agree on."""
    ranks = {}
    for g in names:
        kept = _settled([r for r in tables["rebalances"] if r["group_id"] == g])
        ranks[g] = {r["generation_to"]: i + 1 for i, r in enumerate(kept)}
    rebalances = sorted(
        (names[r["group_id"]], ranks[r["group_id"]][r["generation_to"]], r["outcome"], r["members_before"],
         r["members_after"], r["joined"], r["left"], r["members_affected"], r["start_ms"], r["duration_ms"],
         r["cause"]) for r in tables["rebalances"] if r["generation_to"] in ranks[r["group_id"]])
    events = []
    for e in tables["events"]:
        gen = e["generation"]
        if gen is not None:
            if gen not in ranks[e["group_id"]]:
                continue  # a generation no member changed
            gen = ranks[e["group_id"]][gen]
        reason = e["reason"]
        for real, placeholder in names.items():
            reason = reason.replace(real, placeholder) if reason else reason
        events.append((names[e["group_id"]], e["kind"], e["source"], gen, e["state_after"], e["protocol"],
                       e["members"], e["client_id"], e["member_id"] is not None, e["instance_id"], e["commits"],
                       reason))
    hourly = {}
    for h in tables["group_hourly"]:
        key = names[h["group_id"]]
        hourly[key] = hourly.get(key, 0) + h["offset_commits"]
    return {"rebalances": rebalances, "events": sorted(events, key=repr), "commits": hourly}


def test_report_reads_the_same_story_from_kcoord_and_from_kafka(spark, kcoord_server, reference_kafka, tmp_path):
    suffix = uuid.uuid4().hex[:8]
    topic, group, simple = f"or-{suffix}", f"or-group-{suffix}", f"or-simple-{suffix}"
    names = {group: "<group>", simple: "<simple>", topic: "<topic>"}
    got = {}
    for name, bootstrap in (("kcoord", kcoord_server.bootstrap), ("kafka", reference_kafka.bootstrap)):
        commits = _scenario(bootstrap, topic, group, simple)
        streams_group = f"or-streams-{suffix}"
        streams_member, described = asyncio.run(_streams_scenario(bootstrap, streams_group))
        tables = _report(spark, bootstrap, tmp_path / name, {group, simple})
        _check_streams_group(spark, tmp_path / name, streams_group, streams_member, described, name)
        events, rebalances, hourly = tables["events"], tables["rebalances"], tables["group_hourly"]
        assert {e["source"] for e in events} == {"offsets_topic"}, name

        # The group: 1 member, 2, 1, then empty, each a generation stored by the coordinator.
        steps = _settled([r for r in rebalances if r["group_id"] == group])
        assert [(r["members_before"], r["members_after"], r["joined"], r["left"], r["outcome"]) for r in steps] == [
            (0, 1, 1, 0, "stable"), (1, 2, 1, 0, "stable"), (2, 1, 0, 1, "stable"), (1, 0, 0, 1, "empty")], (
            name, [(r["generation_from"], r["generation_to"], r["members_before"], r["members_after"], r["end_ms"]) for r in rebalances])
        assert steps[0]["generation_from"] == 0 and steps[0]["generation_to"] == 1, name
        assert all(r["start_ms"] is None and r["duration_ms"] is None and r["cause"] is None
                   for r in rebalances), name  # not in the topic
        gens = [e for e in events if e["group_id"] == group and e["kind"] == "generation"]
        assert {e["protocol"] for e in gens if e["members"]} == {"range"}, name
        assert {e["protocol"] for e in gens if not e["members"]} == {None}, name  # created, emptied
        members = {}
        for e in events:
            if e["group_id"] == group and e["kind"] == "generation_member":
                members.setdefault(e["generation"], set()).add(e["client_id"])
        assert [sorted(members.get(r["generation_to"], ())) for r in steps] == [
            ["op-first"], ["op-first", "op-second"], ["op-first"], []], name

        # Every offset commit record, counted per group and per hour.
        for g in (group, simple):
            assert sum(e["commits"] for e in events if e["group_id"] == g and e["kind"] == "offset_commits") \
                == commits[g], (name, g)
            assert sum(h["offset_commits"] for h in hourly if h["group_id"] == g) == commits[g], (name, g)
        assert sum(h["rebalances"] for h in hourly if h["group_id"] == group) == len(
            [r for r in rebalances if r["group_id"] == group]), name

        # The simple group's deletion: its offsets' tombstones and the group's.
        deleted = sorted(e["reason"] for e in events if e["group_id"] == simple and e["kind"] == "offset_deleted")
        assert deleted == [f"{topic}:0", f"{topic}:1"], name
        assert [e["kind"] for e in events if e["group_id"] == simple and e["kind"] == "group_deleted"] == [
            "group_deleted"], name
        assert not [r for r in rebalances if r["group_id"] == simple], name
        got[name] = _normalised(tables, names)
    assert got["kcoord"] == got["kafka"]

