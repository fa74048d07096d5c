"""The parsers and the per-group rebalance logic, without Spark."""
import gzip
import json
from pathlib import Path

from kcoord.analytics import events as ev
from kcoord.analytics import rebalances as rb

FIXTURES = Path(__file__).parent / "fixtures"


def _lines(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return fh.read().splitlines()


def test_every_coordinator_line_of_each_kafka_version_parses():
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file():
            continue
        skips = {}
        rows = list(ev.parse_lines(_lines(path), "kafka-log", "b", skips))
        coordinator_lines = [line for line in _lines(path) if "[GroupCoordinator " in line]
        if path.parent.name == "kafka-2.8":
            # three deliberately broken lines: no log4j head, a cut-off message, an impossible date
            assert skips == {"not_log4j": 1, "unrecognised": 1, "bad_timestamp": 1}
            assert len(rows) == len(coordinator_lines) - 2  # the cut-off and bad-date lines are coordinator-looking
        else:
            assert skips == {}, (path, skips)
            assert len(rows) == len(coordinator_lines)
        assert all(r["group_id"] and r["time_ms"] > 0 for r in rows)


def test_kafka_versions_name_the_same_event_kinds():
    kinds = {}
    for version in ("kafka-2.8", "kafka-3.7", "kafka-4.0"):
        rows = []
        for path in (FIXTURES / version).iterdir():
            rows += ev.parse_lines(_lines(path), "kafka-log", "b", {})
        kinds[version] = {r["kind"] for r in rows}
    common = {"rebalance_started", "join_completed", "stable", "empty", "member_left"}
    for version, k in kinds.items():
        assert common <= k, (version, k)
    assert "member_expired" in kinds["kafka-2.8"] and "member_expired" in kinds["kafka-4.0"]
    assert "static_rejoin_no_rebalance" in kinds["kafka-2.8"]
    assert "member_replaced" in kinds["kafka-3.7"]
    assert "pending_member_expired" in kinds["kafka-4.0"]


def test_member_metadata_of_a_3x_leave_gives_client_id_and_host():
    line = ("[2024-03-01 08:30:00,000] INFO [GroupCoordinator 2]: Member MemberMetadata(memberId=c-1-x, "
            "groupInstanceId=Some(inst-9), clientId=c-1, clientHost=/10.1.2.3, sessionTimeoutMs=45000, "
            "rebalanceTimeoutMs=300000, supportedProtocols=List(range)) has left group g through explicit "
            "`LeaveGroup`; client reason: bye (kafka.coordinator.group.GroupCoordinator)")
    (row,) = ev.parse_lines([line], "kafka-log", "b")
    assert (row["kind"], row["group_id"], row["member_id"], row["instance_id"], row["client_id"],
            row["client_host"], row["reason"]) == ("member_left", "g", "c-1-x", "inst-9", "c-1", "10.1.2.3", "bye")
    assert row["broker"] == "broker-2"


def test_malformed_journal_lines_are_counted_not_fatal():
    good = json.dumps({"kind": "stable", "time_ms": 5, "group_id": "g", "generation": 2, "members": 3})
    lines = [good, "{not json", "[1, 2]", json.dumps({"kind": "stable"}), "", json.dumps({"kind": 1, "time_ms": 1,
                                                                                          "group_id": "g"})]
    skips = {}
    rows = list(ev.parse_lines(lines, "journal", "kcoord", skips))
    assert [(r["kind"], r["generation"], r["members"]) for r in rows] == [("stable", 2, 3)]
    assert skips == {"malformed": 4}


def test_reasonless_rebalance_takes_its_cause_from_the_member_change_before_it():
    base = dict(source="kafka-log", broker="b", group_id="g")
    events = [ev.event(1000, kind="member_expired", member_id="c-1", **base),
              ev.event(1001, kind="rebalance_started", generation=4, **base),
              ev.event(1500, kind="join_completed", generation=5, members=2, **base),
              ev.event(1600, kind="stable", generation=5, **base),
              ev.event(9000, kind="rebalance_started", generation=5, **base)]
    first, second = rb.rebalances_for_group(events)
    assert (first["cause"], first["trigger_member"], first["duration_ms"], first["generation_to"],
            first["members_after"]) == ("failed_heartbeat", "c-1", 599, 5, 2)
    assert (second["cause"], second["outcome"], second["end_ms"]) == ("other", "incomplete", None)


def test_a_rebalance_is_split_across_the_hours_it_spans():
    r = {"group_id": "g", "start_ms": rb.HOUR_MS - 1000, "end_ms": 2 * rb.HOUR_MS + 500}
    assert list(rb.hourly_slices(r)) == [("g", 0, 1000), ("g", rb.HOUR_MS, rb.HOUR_MS), ("g", 2 * rb.HOUR_MS, 500)]
