"""The journal a real kcoord writes while real kafka-python members join, restart, leave and crash,
and a share group member is delivered, releases and accepts records, run through `kcoord report`
on pyspark local and checked against what the scenario did."""
import json

import pytest

from kcoord.app import Kcoord
from kcoord.config import ServerConfig
from kcoord.coordinator.events import EventKind, GroupEvent
from kcoord.journal import Journal, journal_path
from tests.analytics import journal_scenario
from tests.analytics.conftest import report_of


@pytest.fixture(scope="module")
def _run(tmp_path_factory):
    path = tmp_path_factory.mktemp("journal") / "events.jsonl"
    steps, share = journal_scenario.run(str(path))
    return path, steps, share


@pytest.fixture(scope="module")
def scenario(_run):
    """(the journal, the group steps)."""
    return _run[:2]


@pytest.fixture(scope="module")
def share(_run):
    """The share step: its group, member, window and what it did to the records."""
    return _run[2]


@pytest.fixture(scope="module")
def report(spark, scenario, tmp_path_factory):
    return report_of(spark, [scenario[0]], tmp_path_factory)


def test_journal_records_carry_who_and_why(scenario):
    path, _ = scenario
    records = [json.loads(line) for line in path.read_text().splitlines()]
    joins = [r for r in records if r["kind"] == "member_joined" and r["group_id"] == journal_scenario.GROUP]
    assert joins and all(r["client_id"].startswith("kafka-python") and r["client_host"] for r in joins)
    assert any(r["instance_id"] == "static-1" for r in joins)
    assert all(r["reason"] for r in records if r["kind"] == "rebalance_started")
    commits = [r for r in records if r["kind"] == "offset_commits"]
    assert commits and sum(r["commits"] for r in commits) > 0  # kafka-python auto-commits


def test_rebalances_match_the_scenario(spark, scenario, report):
    _, steps = scenario
    rows = spark.read.parquet(str(report / "rebalances")).orderBy("start_ms").collect()
    # one generation per rebalance, all of them completed; kafka-python's leader may rejoin on
    # its own once more after the last step (280 ms after the crash's rebalance in a full run
    # of 2026-11-26), which is the only rebalance allowed past it
    after = [r for r in rows if r.start_ms >= steps[-1]["done_ms"]]
    assert all(r.cause == "leader_rejoin" for r in after), after
    assert len(rows) - len(after) == steps[-1]["generation_to"]
    assert [(r.generation_from, r.generation_to) for r in rows] == [(g, g + 1) for g in range(len(rows))]
    assert all(r.outcome == "stable" for r in rows)
    for step in steps:
        inside = [r for r in rows if step["begin_ms"] <= r.start_ms < step["done_ms"]]
        # kafka-python's leader may rejoin on its own after an assignment (Kafka logs it too);
        # besides that, each step causes exactly the rebalance it stands for
        caused = [r for r in inside if r.cause != "leader_rejoin"]
        assert [r.cause for r in caused] == ([step["cause"]] if step["cause"] else []), (
            step, inside, _journal_around(scenario[0], step))
        for r in caused:
            assert step["generation_from"] <= r.generation_from < r.generation_to <= step["generation_to"]
            assert r.end_ms <= step["done_ms"]
            assert 0 <= r.duration_ms <= step["done_ms"] - step["begin_ms"]
    assert all(r.duration_ms >= 0 for r in rows)
    crash = next(r for r in rows if r.cause == "failed_heartbeat")
    joined = [r for r in rows if r.cause == "member_joined"]
    assert crash.trigger_member == joined[0].trigger_member  # the first member is the one killed
    assert crash.members_after == 1


def test_the_journal_sums_what_the_share_member_did_to_its_records(scenario, share):
    records = [json.loads(line) for line in scenario[0].read_text().splitlines()]
    windows = [r for r in records if r["kind"] == "share_records"]
    assert windows and all(r["group_id"] == share["group_id"] and r["member_id"] == share["member_id"]
                           and share["begin_ms"] <= r["time_ms"] <= share["done_ms"] for r in windows)
    assert {k: sum(r[k] for r in windows) for k in ("acquired", "redeliveries", "accepted", "released", "rejected",
                                                    "gaps", "renewed", "session_released", "lock_expired",
                                                    "archived")} == {
        "acquired": share["deliveries"], "redeliveries": share["redeliveries"], "accepted": share["accepted"],
        "released": share["released"], "rejected": 0, "gaps": 0, "renewed": 0, "session_released": 0,
        "lock_expired": 0, "archived": 0}
    assert max(r["max_delivery_count"] for r in windows) == share["max_delivery_count"]


def test_share_tables_match_the_share_step(spark, share, report):
    (row,) = spark.read.parquet(str(report / "share_groups")).collect()
    assert row.asDict() == {
        "group_id": share["group_id"], "first_ms": row.first_ms, "last_ms": row.last_ms, "members_seen": 1,
        "deliveries": share["deliveries"], "redeliveries": share["redeliveries"], "accepted": share["accepted"],
        "released": share["released"], "rejected": 0, "renewed": 0, "session_releases": 0, "lock_expiries": 0,
        "archived": 0, "max_delivery_count": share["max_delivery_count"]}
    assert share["begin_ms"] <= row.first_ms <= row.last_ms <= share["done_ms"]
    minutes = spark.read.parquet(str(report / "share_minutely")).collect()
    assert {r.group_id for r in minutes} == {share["group_id"]}
    assert sum(r.deliveries for r in minutes) == share["deliveries"]
    assert sum(r.redeliveries for r in minutes) == share["redeliveries"]
    first_minute = share["begin_ms"] - share["begin_ms"] % 60_000
    assert all(first_minute <= r.minute_ms <= share["done_ms"] and r.minute_ms % 60_000 == 0 for r in minutes)
    assert "<h2>Share groups</h2>" in (report / "report.html").read_text()


def _journal_around(path, step, margin_ms=2000):
    """The journal's group events near a step's window, to tell what a failed check saw."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["time_ms"] - step["begin_ms"], r["kind"], r.get("generation"), r.get("member_id"), r.get("reason"))
            for r in records if step["begin_ms"] - margin_ms <= r["time_ms"] <= step["done_ms"] + margin_ms
            and r["kind"] != "offset_commits"]


def test_static_restart_is_reported_as_a_rejoin_without_rebalance(spark, scenario, report):
    _, steps = scenario
    restart = next(s for s in steps if s["cause"] is None)
    hourly = spark.read.parquet(str(report / "group_hourly")).collect()
    assert sum(r.static_rejoins_without_rebalance for r in hourly) == 1
    assert sum(r.offset_commits for r in hourly) > 0
    events = spark.read.parquet(str(report / "events"))
    (rejoin,) = events.where("kind = 'static_rejoin_no_rebalance'").collect()
    assert restart["begin_ms"] <= rejoin.time_ms <= restart["done_ms"]
    assert rejoin.instance_id == "static-1"


def test_journal_rotates_by_size(tmp_path):
    j = Journal(tmp_path / "j" / "events.jsonl", max_bytes=2000, backups=2)
    for i in range(100):
        j(GroupEvent(kind=EventKind.MEMBER_JOINED, time_ms=i, group_id="g", generation=i, state_before="Stable",
                       state_after="Stable", member_id=f"m-{i}", reason="x" * 20))
    j.close()
    files = sorted(p.name for p in (tmp_path / "j").iterdir())
    assert files == ["events.jsonl", "events.jsonl.1", "events.jsonl.2"]
    for name in files:
        size = (tmp_path / "j" / name).stat().st_size
        assert 0 < size <= 2000
    last = [json.loads(line) for line in (tmp_path / "j" / "events.jsonl").read_text().splitlines()]
    assert last[-1]["generation"] == 99


def test_offset_commits_are_summed_per_interval(tmp_path):
    j = Journal(tmp_path / "events.jsonl", commit_interval_ms=1000)
    for t in (0, 10, 999, 1000, 1500):
        j(GroupEvent(kind=EventKind.OFFSETS_COMMITTED, time_ms=t, group_id="g", generation=1, state_before="Stable",
                       state_after="Stable", details={"count": 3}))
    j.close()
    recs = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(r["time_ms"], r["commits"], r["offsets"]) for r in recs] == [(0, 3, 9), (1000, 2, 6)]


async def test_journal_location_options(tmp_path):
    assert journal_path(None, None) is None
    assert journal_path("none", str(tmp_path)) is None
    assert journal_path(None, str(tmp_path)) == tmp_path / "journal" / "events.jsonl"
    assert journal_path(str(tmp_path / "x.jsonl"), str(tmp_path)) == tmp_path / "x.jsonl"
    app = Kcoord(ServerConfig(listen_port=0, data_dir=str(tmp_path)))
    assert app.journal is not None and app.journal.path == tmp_path / "journal" / "events.jsonl"
    app.journal.close()
    assert Kcoord(ServerConfig(listen_port=0, data_dir=str(tmp_path), journal="none")).journal is None
