"""The report's Connect view on a journal kcoord wrote while real Kafka Connect 4.3.1 workers
ran (journals/connect-sessioned.jsonl: 3 sessioned workers, scheduled.rebalance.max.delay.ms
6000, two connectors of 3 tasks; a 4th worker joined, then one holding tasks was killed
and stayed away)."""
from pathlib import Path

from kcoord.analytics import connect as cx
from kcoord.analytics.job import run_report

JOURNAL = Path(__file__).parent / "journals" / "connect-sessioned.jsonl"
TASKS = {f"{c}-{i}" for c in ("src-a", "src-b") for i in range(3)}


def _rounds():
    records = [p[1] for p in map(cx.parse_line, JOURNAL.read_text().splitlines()) if p]
    return cx.rounds_for_group(records)


def test_rounds_see_the_join_and_the_kill():
    rounds, holdings = _rounds()
    assert rounds[-1]["settled"] and rounds[-1]["tasks_held"] == len(TASKS) and rounds[-1]["workers"] == 3
    rebalances = cx.rebalance_summary(rounds)
    # The join: the new worker takes only what is revoked for it, over two rounds.
    join = next(r for r in rounds if r["workers"] == 4 and r["tasks_revoked"])
    after = next(r for r in rounds if r["rebalance_seq"] == join["rebalance_seq"] and r["round"] == join["round"] + 1)
    assert sorted(after["tasks_moved"]) == join["tasks_revoked"]
    # The kill: a round asks the survivors to wait, the lost tasks stay unassigned until the delay ends.
    wait = next(r for r in rounds if r["delay_ms"] > 0)
    assert wait["tasks_unassigned"] and 0 < wait["delay_ms"] <= 6000
    kill = next(r for r in rebalances if r["rebalance_seq"] == wait["rebalance_seq"])
    back = [r for r in rounds if r["rebalance_seq"] == wait["rebalance_seq"] and r["settled"]][0]
    assert set(wait["tasks_unassigned"]) <= set(back["tasks_moved"])
    assert kill["settled"] and kill["max_delay_ms"] == wait["delay_ms"] and kill["rounds"] >= 2
    assert kill["unassigned_ms"] >= len(wait["tasks_unassigned"]) * (wait["delay_ms"] - 1000)
    # After the last round each task is held by exactly one worker, none of them the killed one
    # (the journal ends with the workers' shutdown: they leave, so no holding stays open).
    last = rounds[-1]["time_ms"]
    assert all(h["to_ms"] is not None for h in holdings)
    open_ = [h for h in holdings if h["from_ms"] <= last < h["to_ms"]]
    assert sorted(h["task"] for h in open_) == sorted(TASKS)
    before = [h for h in holdings if h["task"] in wait["tasks_unassigned"] and h["to_ms"] <= wait["time_ms"]]
    killed = {max((h for h in before if h["task"] == t), key=lambda h: h["from_ms"])["worker"]
              for t in wait["tasks_unassigned"]}
    assert len(killed) == 1
    assert not killed & {h["worker"] for h in open_}


def test_report_writes_connect_rounds_and_a_timeline(spark, tmp_path):
    assert run_report([str(JOURNAL)], tmp_path, spark=spark) == 0
    rounds, holdings = _rounds()
    got = spark.read.parquet(str(tmp_path / "connect_rounds")).orderBy("time_ms").collect()
    assert [(r.generation, sorted(r.tasks_revoked), r.delay_ms, r.unassigned_ms) for r in got] == \
        [(r["generation"], r["tasks_revoked"], r["delay_ms"], r["unassigned_ms"]) for r in rounds]
    assert spark.read.parquet(str(tmp_path / "connect_holdings")).count() == len(holdings)
    page = (tmp_path / "report.html").read_text()
    assert "Kafka Connect groups" in page and 'alt="Connect timeline of connect-sessioned"' in page
