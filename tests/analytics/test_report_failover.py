"""The journal of a real three-broker kcoord through coordinator failovers, with real kafka-python
members, run through `kcoord report` on pyspark local: the group's coordinator is killed, another
broker loads the group once the controller has fenced the dead one, the killed broker comes back;
then the whole kcoord restarts on its data dir. Each is a failover window in the report's table,
its count and its timeline."""
import base64
import io
import json
import re
import time

import pytest

from kcoord.analytics.html import plots
from kcoord.conformance.members import Member
from kcoord.config import ServerConfig
from kcoord.testing.server_thread import ServerThread
from tests.analytics.conftest import report_of

GROUP = "failover-report"
TOPIC = "failover-report-topic"
SESSION_TIMEOUT_MS = 1500   # broker.session.timeout.ms: a killed broker is fenced after it
LOAD_MS = 300               # how long a new leader takes to load a partition


def _now_ms() -> int:
    return int(time.time() * 1000)


def _server(data_dir) -> ServerThread:
    return ServerThread(ServerConfig(brokers=3, listen_port=0, data_dir=str(data_dir), initial_rebalance_delay_ms=0,
                                     broker_session_timeout_ms=SESSION_TIMEOUT_MS,
                                     coordinator_load_ms=LOAD_MS)).start()


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def failover(tmp_path_factory):
    data = tmp_path_factory.mktemp("failover-data")
    seen: dict = {"journal": data / "journal" / "events.jsonl"}
    server = _server(data)
    members: list[Member] = []
    try:
        async def create():
            server.app.topics.create(TOPIC, 3)
        server.call(create)
        members = [Member("kafka-python", server.bootstrap, TOPIC, GROUP, session_ms=10_000) for _ in range(2)]
        coordinator = server.app.coordinator
        server.call(lambda: coordinator.wait_for(GROUP, state="Stable", members=2, timeout=90), timeout=100)
        seen["partition"] = coordinator.runtime.partition_for(GROUP)
        seen["old"] = coordinator.runtime.coordinator_node(GROUP)
        seen["killed_ms"] = _now_ms()
        server.call(lambda: server.app.controls.kill(seen["old"]))
        # Stable again: loaded by a broker that leads its partition now, members still in it
        server.call(lambda: coordinator.wait_for(GROUP, state="Stable", members=2, timeout=90), timeout=100)
        seen["loaded_by_ms"] = _now_ms()
        seen["new"] = coordinator.runtime.coordinator_node(GROUP)
        server.call(lambda: server.app.controls.start(seen["old"]))
    finally:
        for m in members:
            m.stop()
        server.stop()
    seen["before_restart"] = _records(seen["journal"])
    seen["restarted_ms"] = _now_ms()
    again = _server(data)  # loads every group at once, with no unload before: the old process said nothing
    again.stop()
    return seen


@pytest.fixture(scope="module")
def report(spark, failover, tmp_path_factory):
    return report_of(spark, [failover["journal"]], tmp_path_factory)


def test_the_journal_records_which_broker_unloaded_and_loaded_the_group(failover):
    seen = failover
    assert seen["new"] not in (seen["old"], -1)
    moves = [r for r in _records(seen["journal"]) if r["group_id"] == GROUP and r["kind"].startswith("coordinator_")]
    unloaded, loaded = moves[0], moves[1]
    assert (unloaded["kind"], unloaded["reason"], unloaded["details"]["node"], unloaded["details"]["partition"]) == \
        ("coordinator_unloaded", "its broker died", seen["old"], seen["partition"])
    assert (loaded["kind"], loaded["details"]["node"], loaded["details"]["partition"]) == \
        ("coordinator_loaded", seen["new"], seen["partition"])
    assert loaded["details"]["leader_epoch"] > unloaded["details"]["leader_epoch"]
    # the restart's load comes last, with no unload before it
    assert moves[-1]["kind"] == "coordinator_loaded" and moves[-1]["time_ms"] >= seen["restarted_ms"]


def test_the_kill_and_the_restart_are_the_groups_failover_windows(spark, failover, report):
    seen = failover
    rows = spark.read.parquet(str(report / "failover_windows")).orderBy("end_ms").collect()
    assert [r.group_id for r in rows] == [GROUP, GROUP]
    kill, restart = rows
    assert (kill.partition, kill.source, kill.from_broker, kill.to_broker, kill.reason) == \
        (seen["partition"], "journal", f"broker-{seen['old']}", f"broker-{seen['new']}", "its broker died")
    assert seen["killed_ms"] <= kill.start_ms and kill.end_ms <= seen["loaded_by_ms"]
    # nobody loads it before the controller fences the dead broker, and then loading takes its time
    assert kill.duration_ms == kill.end_ms - kill.start_ms >= SESSION_TIMEOUT_MS + LOAD_MS
    # the restart's window starts at the last thing the journal shows of the process before
    assert restart.reason.startswith("loaded with no unload before it")
    assert restart.start_ms == max(r["time_ms"] for r in seen["before_restart"])
    assert restart.end_ms >= seen["restarted_ms"] and restart.duration_ms == restart.end_ms - restart.start_ms
    events = spark.read.parquet(str(report / "events")).where(f"kind LIKE 'coordinator_%' AND group_id = '{GROUP}'")
    assert {(r.kind, r.broker, r.partition) for r in events.collect()} >= {
        ("coordinator_unloaded", f"broker-{seen['old']}", seen["partition"]),
        ("coordinator_loaded", f"broker-{seen['new']}", seen["partition"])}


def test_the_report_counts_the_windows_and_shades_them_on_the_timeline(spark, report):
    page = (report / "report.html").read_text()
    rows = spark.read.parquet(str(report / "failover_windows")).collect()
    longest = max(r.duration_ms for r in rows)
    assert f"2 failover windows (longest {longest} ms)" in page
    section = page.split("<h2>Failover windows</h2>")[1].split("<h2>")[0]
    assert section.count(f"<td>{GROUP}</td>") == 2 and "its broker died" in section
    timeline = re.search(r'<h2>Timeline</h2><img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
    assert _shaded(base64.b64decode(timeline)) > 50
    # the same report's timeline without its windows has no shade
    rebalances = [r.asDict() for r in spark.read.parquet(str(report / "rebalances")).drop("start", "end").collect()]
    bare = plots({"rebalances": rebalances, "top_groups": [{"group_id": GROUP}], "causes": {}})["timeline"]
    assert _shaded(base64.b64decode(bare.split(",", 1)[1])) == 0


def _shaded(png: bytes) -> int:
    """Pixels of the failover windows' fill: tab:red at alpha 0.35 over white."""
    import matplotlib.image

    img = matplotlib.image.imread(io.BytesIO(png), format="png")[:, :, :3] * 255
    r, g, b = img[:, :, 0], img[:, :, 1], img[:, :, 2]
    return int(((abs(r - 241) < 8) & (abs(g - 179) < 8) & (abs(b - 180) < 8)).sum())
