"""The journal as a Kafka topic: `kcoord serve --journal-topic` writes every journal line to a
topic on kcoord, and `kcoord report --kafka --topic` reads it with Spark's real Kafka source,
once or following it (structured streaming).

One `kcoord serve` process with a data dir, a file journal and a journal topic; real
kafka-python member processes join and leave; the server is then stopped and started again on
its data dir, so the topic read below is the one durable state brought back.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kcoord.cli import main as kcoord_main
from kcoord.conformance.members import Member
from kcoord.testing import jvm
from kcoord.testing.brokers import create_topic, wait_group

ROOT = Path(__file__).resolve().parents[2]
JOURNAL_TOPIC = "kcoord-journal"
GROUP = "jt-group"
DATA_TOPIC = "jt-data"


class Serve:
    """`kcoord serve` as a process on a free port."""

    def __init__(self, data_dir: Path, journal: Path, log: Path):
        self.args = [sys.executable, "-m", "kcoord", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir),
                     "--journal", str(journal), "--journal-topic", JOURNAL_TOPIC, "--initial-rebalance-delay-ms", "0"]
        self.log = log
        self.proc = None
        self.bootstrap = None

    def start(self) -> "Serve":
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        line = self.proc.stdout.readline()
        assert line.startswith("kcoord listening on "), (line, self.log.read_text())
        self.bootstrap = line.split()[-1]
        return self

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server whose journal holds a join, a second join and a leave (three rebalances at least),
    restarted once on its data dir; yields (server, file journal path)."""
    root = tmp_path_factory.mktemp("journal-topic")
    journal = root / "events.jsonl"
    server = Serve(root / "data", journal, root / "serve.log").start()
    members = []
    try:
        create_topic(server.bootstrap, DATA_TOPIC, 4)
        members.append(Member("kafka-python", server.bootstrap, DATA_TOPIC, GROUP))
        wait_group(server.bootstrap, GROUP, 60, state="Stable", members=1)
        members.append(Member("kafka-python", server.bootstrap, DATA_TOPIC, GROUP))
        wait_group(server.bootstrap, GROUP, 60, state="Stable", members=2)
        members.pop().stop()  # a LeaveGroup: the survivor gets everything in one more rebalance
        wait_group(server.bootstrap, GROUP, 60, state="Stable", members=1)
        members.pop().stop()
        wait_group(server.bootstrap, GROUP, 60, state="Empty")
    finally:
        for m in members:
            m.kill()
        # SIGTERM flushes the last offset_commits summaries to the file and the topic alike.
        assert server.stop() == 0, (root / "serve.log").read_text()
    server.start()
    yield server, journal
    assert server.stop() == 0, (root / "serve.log").read_text()


def _topic_records(bootstrap: str) -> list:
    """Every record of the journal topic, in offset order per partition, read by a stock client."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(JOURNAL_TOPIC, p) for p in sorted(consumer.partitions_for_topic(JOURNAL_TOPIC))]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        out = {tp: [] for tp in partitions}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            assert time.monotonic() < deadline, {tp: (consumer.position(tp), ends[tp]) for tp in partitions}
            for tp, records in consumer.poll(500).items():
                out[tp] += records
        return [r for tp in partitions for r in out[tp]]
    finally:
        consumer.close()


def test_each_journal_line_is_a_record_keyed_by_its_group(served):
    server, journal = served
    lines = journal.read_text().splitlines()
    records = _topic_records(server.bootstrap)
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds.count("rebalance_started") >= 3 and "offset_commits" in kinds, kinds
    # One partition (the broker's default): the topic is the file, line for line.
    assert [r.value.decode() for r in records] == lines
    assert [r.key.decode() for r in records] == [json.loads(line)["group_id"] for line in lines]
    assert [r.timestamp for r in records] == [json.loads(line)["time_ms"] for line in lines]


def _rows(spark, path: Path, order: list[str]) -> list[tuple]:
    df = spark.read.parquet(str(path))
    return [tuple(r) for r in df.orderBy(*order).collect()], df.schema


def test_report_from_the_topic_equals_the_report_from_the_file(spark, served, tmp_path):
    server, journal = served
    from_topic, from_file = tmp_path / "topic", tmp_path / "file"
    # The command itself, in this process: it uses the module's running Spark session.
    assert kcoord_main(["report", "--kafka", server.bootstrap, "--topic", JOURNAL_TOPIC, "--out", str(from_topic)]) == 0
    assert kcoord_main(["report", str(journal), "--out", str(from_file)]) == 0
    for table, order in (("events", ["time_ms", "kind", "member_id"]), ("rebalances", ["group_id", "seq"]),
                         ("group_hourly", ["group_id", "hour_ms"])):
        got, got_schema = _rows(spark, from_topic / table, order)
        want, want_schema = _rows(spark, from_file / table, order)
        assert got_schema == want_schema, table
        assert got == want, table
    rebalances, _ = _rows(spark, from_topic / "rebalances", ["seq"])
    assert len(rebalances) >= 3
    assert (from_topic / "report.html").stat().st_size > 0


# What reading a table says while the stream has not written it yet or is replacing it.
_NOT_THERE = ("PATH_NOT_FOUND", "Path does not exist", "FileNotFound", "UNABLE_TO_INFER_SCHEMA")


def _table(spark, path: Path) -> list | None:
    """The table's rows, or None while it is missing or being rewritten by the stream."""
    try:
        return spark.read.parquet(str(path)).collect()
    except Exception as err:
        if any(marker in str(err) for marker in _NOT_THERE):
            return None
        raise


def _wait_table(spark, path: Path, predicate, what: str, timeout: float = 150, alive=None):
    """The table's rows once `predicate` holds; with `alive` (a process writing it, and its
    stderr file), the process must not end first."""
    deadline = time.monotonic() + timeout
    rows = None
    while time.monotonic() < deadline:
        if alive is not None and alive[0].poll() is not None:
            raise AssertionError(f"{what}: the writer ended ({alive[0].returncode}): "
                                 f"{alive[1].read_text()[-3000:]}")
        rows = _table(spark, path)
        if rows is not None and predicate(rows):
            return rows
        time.sleep(1)
    raise AssertionError(f"{what}: {path} is {rows}")


def test_follow_keeps_the_tables_current_and_ends_cleanly_on_sigterm(spark, served, tmp_path):
    """The command as a user runs it, in a process (and JVM) of its own: its tables show the
    topic's records so far, then a new member's rebalance; SIGTERM ends it with exit 0 after the
    batch it is in (one Spark driver for both: a second cost the suite over a minute of CPU)."""
    server, journal = served
    out = tmp_path / "follow"
    before = [json.loads(line) for line in journal.read_text().splitlines()]
    started_before = sum(r["kind"] == "rebalance_started" for r in before)
    err_path = tmp_path / "follow.err"   # a file, not a pipe nobody drains while the test waits
    with open(err_path, "w") as err_file:
        proc = subprocess.Popen([sys.executable, "-m", "kcoord", "report", "--kafka", server.bootstrap, "--topic",
                                 JOURNAL_TOPIC, "--out", str(out), "--follow", "--interval", "1"],
                                stdout=subprocess.DEVNULL, stderr=err_file, text=True, cwd=ROOT,
                                # the test bed's lean JVM options for its Spark driver, as the module's session has
                                env={**os.environ, "SPARK_SUBMIT_OPTS": " ".join(jvm.LEAN)})
    member = None
    try:
        # Liveness bounds, not speed checks: a loaded full run once took more than 180 s to the
        # first batch.
        _wait_table(spark, out / "events", lambda rows: len(rows) == len(before), "the topic's records so far",
                    timeout=300, alive=(proc, err_path))
        first = _wait_table(spark, out / "rebalances", lambda rows: len(rows) == started_before, "rebalances so far",
                            alive=(proc, err_path))
        assert {r.outcome for r in first} <= {"stable", "empty"}

        t0 = int(time.time() * 1000)
        member = Member("kafka-python", server.bootstrap, DATA_TOPIC, GROUP)
        wait_group(server.bootstrap, GROUP, 60, state="Stable", members=1)
        grown = _wait_table(spark, out / "rebalances",
                            lambda rows: any(r.start_ms >= t0 and r.outcome == "stable" for r in rows),
                            "the new member's rebalance", alive=(proc, err_path))
        new = [r for r in grown if r.start_ms >= t0]
        assert new and new[0].cause == "member_joined", new
        assert {tuple(r) for r in first} <= {tuple(r) for r in grown}
        assert (out / "report.html").stat().st_size > 0
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if member is not None:
            # A LeaveGroup, not a kill: its events come now, not a session timeout later while
            # the next test compares the topic with the file.
            member.stop()
            wait_group(server.bootstrap, GROUP, 60, state="Empty")
    err = err_path.read_text()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert re.match(r"\[report\] stopped after \d+ batches", err.strip().splitlines()[-1]), err
    assert (out / "_follow" / "checkpoint").is_dir()


def test_follow_stops_by_itself_after_max_batches(spark, served, tmp_path):
    from kcoord.analytics.job import run_follow

    server, journal = served
    out = tmp_path / "once"
    # Nothing sets `stop`: only --max-batches can end it, after the one batch the topic makes.
    assert run_follow(server.bootstrap, JOURNAL_TOPIC, out, interval_s=1.0, max_batches=1, spark=spark) == 0
    assert len(spark.read.parquet(str(out / "events")).collect()) == len(journal.read_text().splitlines())
