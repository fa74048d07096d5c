"""`kcoord report` on Kafka 2.8 / 3.7 (gzip) / 4.0 server.log fixtures, with pyspark local."""
import re
from pathlib import Path

import pytest

from kcoord.analytics.job import compute, list_inputs, parse_time, run_report

FIXTURES = Path(__file__).parent / "fixtures"

# What the fixture's lines describe: (group, generation from, to, cause, duration ms, outcome, trigger client).
# Durations run from "Preparing to rebalance" to the leader's assignment (Stable), or to "is now empty".
EXPECTED = [
    ("audit", 0, 1, "member_joined", 3500, "stable", "audit"),
    ("billing", 0, 1, "member_joined", 3020, "stable", "billing-a"),
    ("ledger", 0, 1, "member_joined", 3010, "stable", "ledger-x"),
    ("ledger", 1, 2, "static_replacement", 809, "stable", "ledger-x"),
    ("orders", 0, 1, "member_joined", 3045, "stable", "consumer-orders-1"),
    ("orders", 1, 2, "member_joined", 2518, "stable", "consumer-orders-2"),
    ("orders", 2, 3, "failed_heartbeat", 4009, "stable", "consumer-orders-2"),
    ("orders", 3, 4, "member_left", 1, "empty", "consumer-orders-1"),
    ("payments", 0, 1, "member_joined", 3027, "stable", "pay-1"),
    ("payments", 1, 2, "leader_rejoin", 520, "stable", "pay-1"),
    ("payments", 2, 3, "metadata_change", 1100, "stable", "pay-1"),
    ("payments", 3, 4, "member_left", 0, "empty", "pay-1"),
    ("shipping", 0, 1, "member_joined", 3016, "stable", "rdkafka"),
    ("shipping", 1, 2, "member_joined", 3098, "stable", "rdkafka"),
    ("shipping", 2, 3, "failed_heartbeat", 299, "stable", "rdkafka"),
    ("shipping", 3, 4, "member_left", 0, "empty", "rdkafka"),
]


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert run_report([str(FIXTURES)], out, spark=spark) == 0
    return out


def test_rebalances_match_the_logged_scenario(spark, report):
    rows = spark.read.parquet(str(report / "rebalances")).orderBy("group_id", "start_ms").collect()
    got = [(r.group_id, r.generation_from, r.generation_to, r.cause, r.duration_ms, r.outcome, r.trigger_client)
           for r in rows]
    assert got == EXPECTED
    brokers = {r.group_id: r.broker for r in rows}
    assert (brokers["orders"], brokers["payments"], brokers["shipping"]) == ("broker-1", "broker-2", "broker-3")
    assert all(r.members_affected == 1 and r.restarts == 0 for r in rows)


def test_stop_the_world_per_group_per_hour(spark, report):
    hourly = {(r.group_id, r.hour_ms): r for r in spark.read.parquet(str(report / "group_hourly")).collect()}
    h12 = parse_time("2025-05-01T12:00:00")
    h13 = parse_time("2025-05-01T13:00:00")
    # audit's one rebalance starts at 12:59:59.000 and ends at 13:00:02.500
    assert (hourly[("audit", h12)].stop_the_world_ms, hourly[("audit", h12)].rebalances) == (1000, 1)
    assert (hourly[("audit", h13)].stop_the_world_ms, hourly[("audit", h13)].rebalances) == (2500, 0)
    assert hourly[("orders", parse_time("2021-06-01T10:00:00"))].stop_the_world_ms == 3045 + 2518 + 4009 + 1
    assert hourly[("billing", parse_time("2021-06-01T11:00:00"))].static_rejoins_without_rebalance == 1


def test_report_html_embeds_plots_and_counts_skipped_lines(report):
    page = (report / "report.html").read_text()
    assert len(re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]{200,}"', page)) == 3
    assert "16 rebalances" in page
    assert "Skipped lines: 3" in page
    # top group by stop-the-world time is orders (9573 ms)
    top = page.split("Top groups by rebalance time")[1]
    assert top.index("orders") < top.index("shipping")
    assert "<td>9573</td>" in top


def test_since_until_select_a_time_window(spark):
    files = list_inputs([str(FIXTURES)])
    events, rebalances, _hourly, skips = compute(spark, files, since_ms=parse_time("2024-01-01"),
                                                 until_ms=parse_time("2025-01-01"))
    assert {r.group_id for r in events.select("group_id").distinct().collect()} == {"payments", "ledger"}
    assert rebalances.count() == 6
    assert sum(skips.values()) == 3  # skips are counted over the whole input
