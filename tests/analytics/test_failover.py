"""Failover windows (kcoord.analytics.failover) from journal lines and Kafka broker logs, without
Spark. The Kafka 4.3.1 logs in failover/kafka-4.3.1/ are a real three-node reference Kafka's (the
lines of one group's partition, of another partition with no group, and the followers' fetcher
disconnects): two kafka-python members in `failover-g`; its coordinator (node 1) killed at
09:10:36.9, node 2 loads it once node 1 is fenced; node 1 started again; node 2 stopped (a
controlled shutdown: it unloads, node 1 loads); the members leave; the cluster shut down."""
import json
from pathlib import Path

from kcoord.analytics import events as ev
from kcoord.analytics import failover as fo
from kcoord.analytics.job import parse_time

KAFKA_431 = Path(__file__).parent / "failover" / "kafka-4.3.1"


def _journal(*records):
    return [json.dumps(r) for r in records]


def _windows_of(rows):
    events = [r for r in rows if r["kind"] != ev.BROKER_DISCONNECTED]
    losses = [(r["broker"], r["time_ms"]) for r in rows if r["kind"] == ev.BROKER_DISCONNECTED]
    return fo.all_windows(events, losses)


def _view(w):
    return (w["group_id"], w["partition"], w["source"], w["from_broker"], w["to_broker"], w["start_ms"], w["end_ms"],
            w["duration_ms"], w["reason"])


def test_a_killed_coordinator_in_the_journal_is_a_window_from_its_unload_to_the_next_load():
    lines = _journal(
        {"kind": "stable", "time_ms": 1000, "group_id": "g", "generation": 1, "members": 2},
        {"kind": "coordinator_unloaded", "time_ms": 5000, "group_id": "g", "generation": 1, "reason": "its broker died",
         "details": {"partition": 7, "node": 1, "leader_epoch": 0}},
        {"kind": "coordinator_loaded", "time_ms": 6600, "group_id": "g", "generation": 1,
         "details": {"partition": 7, "node": 2, "leader_epoch": 1}},
        # a controlled move later: the old leader unloads, the new one loads after its load time
        {"kind": "coordinator_unloaded", "time_ms": 9000, "group_id": "g", "generation": 1,
         "reason": "its partition is led by another broker now", "details": {"partition": 7, "node": 2,
                                                                             "leader_epoch": 1}},
        {"kind": "coordinator_loaded", "time_ms": 9100, "group_id": "g", "generation": 1,
         "details": {"partition": 7, "node": 0, "leader_epoch": 2}},
        # another group's coordinator goes away and the input ends before anyone loads it
        {"kind": "coordinator_unloaded", "time_ms": 9500, "group_id": "h", "generation": 3, "reason": "its broker died",
         "details": {"partition": 3, "node": 0, "leader_epoch": 2}})
    rows = list(ev.parse_lines(lines, "journal", "kcoord"))
    moves = [(r["kind"], r["broker"], r["partition"]) for r in rows if r["kind"].startswith("coordinator")]
    assert moves[:2] == [("coordinator_unloaded", "broker-1", 7), ("coordinator_loaded", "broker-2", 7)]
    assert [_view(w) for w in _windows_of(rows)] == [
        ("g", 7, "journal", "broker-1", "broker-2", 5000, 6600, 1600, "its broker died"),
        ("g", 7, "journal", "broker-2", "broker-0", 9000, 9100, 100, "its partition is led by another broker now"),
        ("h", 3, "journal", "broker-0", None, 9500, None, None, "its broker died"),
    ]


def test_a_load_with_no_unload_before_it_is_a_restart_from_the_journals_last_record_before_it():
    lines = _journal(
        {"kind": "stable", "time_ms": 1000, "group_id": "g", "generation": 1, "members": 1},
        {"kind": "coordinator_loaded", "time_ms": 1000, "group_id": "g", "generation": 1,
         "details": {"partition": 7, "node": 0, "leader_epoch": 0}},
        {"kind": "offset_commits", "time_ms": 4000, "group_id": "other", "commits": 3},  # the last sign of life
        # kcoord started again: it loads every group at once, with no unload before
        {"kind": "coordinator_loaded", "time_ms": 20_000, "group_id": "g", "generation": 1,
         "details": {"partition": 7, "node": 0, "leader_epoch": 0}},
        {"kind": "coordinator_loaded", "time_ms": 20_002, "group_id": "other", "generation": 0,
         "details": {"partition": 2, "node": 1, "leader_epoch": 0}},
        {"kind": "member_joined", "time_ms": 25_000, "group_id": "g", "generation": 1, "member_id": "m"})
    windows = _windows_of(list(ev.parse_lines(lines, "journal", "kcoord")))
    # the journal's first line is a load too, with nothing before it: no start to give it
    assert [_view(w) for w in windows] == [
        ("g", 7, "journal", None, "broker-0", None, 1000, None, fo.REASON_RESTART),
        ("g", 7, "journal", "broker-0", "broker-0", 4000, 20_000, 16_000, fo.REASON_RESTART),
        ("other", 2, "journal", None, "broker-1", 4000, 20_002, 16_002, fo.REASON_RESTART),
    ]


def test_journals_without_coordinator_records_still_parse_with_no_partition():
    old = _journal({"kind": "rebalance_started", "time_ms": 5, "group_id": "g", "generation": 1,
                    "state_before": "Stable", "state_after": "PreparingRebalance", "reason": "Adding new member m"})
    (row,) = ev.parse_lines(old, "journal", "kcoord")
    assert (row["kind"], row["broker"], row["partition"]) == ("rebalance_started", "kcoord", None)
    assert fo.all_windows([row], []) == []


def test_kafka_431_logs_give_the_killed_and_the_stopped_coordinators_windows():
    rows = []
    for path in sorted(KAFKA_431.iterdir()):
        skips = {}
        rows += ev.parse_lines(path.read_text().splitlines(), "kafka-log", "b", skips)
        assert set(skips) <= {"unrecognised"}, skips  # 4.x's "Pending dynamic member ... joins" is not modelled
    moves = sorted((r["time_ms"], r["broker"], r["kind"], r["partition"]) for r in rows
                   if r["kind"].startswith("coordinator"))
    at = parse_time
    assert moves == [
        # node 2 elected when node 1 is fenced (~11 s after the kill), then loads the group
        (at("2026-11-26T09:10:47.976"), "broker-2", "coordinator_loading", 14),
        (at("2026-11-26T09:10:48.015"), "broker-2", "coordinator_loaded", 14),
        # node 2's controlled shutdown: it unloads, node 1 loads
        (at("2026-11-26T09:10:58.852"), "broker-2", "coordinator_unloaded", 14),
        (at("2026-11-26T09:10:58.904"), "broker-1", "coordinator_loading", 14),
        (at("2026-11-26T09:10:59.027"), "broker-1", "coordinator_loaded", 14),
        (at("2026-11-26T09:11:06.989"), "broker-1", "coordinator_unloaded", 14),  # the cluster shuts down
    ]
    # partition 16 (no group) loaded and unloaded too, and the followers logged "Scheduling unloading"
    # of partition 14 (then "Ignored ... never loaded"): neither is a group's move
    assert all(r["group_id"] == "failover-g" for r in rows if r["kind"].startswith("coordinator"))
    assert [_view(w) for w in _windows_of(rows)] == [
        # the kill: no unload logged; from the first time a follower lost node 1
        ("failover-g", 14, "kafka-log", "broker-1", "broker-2", at("2026-11-26T09:10:36.946"),
         at("2026-11-26T09:10:48.015"), 11_069, fo.REASON_NO_UNLOAD),
        ("failover-g", 14, "kafka-log", "broker-2", "broker-1", at("2026-11-26T09:10:58.852"),
         at("2026-11-26T09:10:59.027"), 175, fo.REASON_UNLOADED),
        ("failover-g", 14, "kafka-log", "broker-1", None, at("2026-11-26T09:11:06.989"), None, None,
         fo.REASON_UNLOADED),
    ]


def test_without_the_followers_logs_a_killed_coordinators_window_starts_at_the_election():
    rows = []
    for name in ("server-1.log", "server-2.log"):  # node 0's log, with its fetcher's disconnects, left out
        rows += ev.parse_lines((KAFKA_431 / name).read_text().splitlines(), "kafka-log", "b")
    rows = [r for r in rows if not (r["kind"] == ev.BROKER_DISCONNECTED)]
    first = _windows_of(rows)[0]
    assert _view(first) == ("failover-g", 14, "kafka-log", "broker-1", "broker-2",
                            parse_time("2026-11-26T09:10:47.976"), parse_time("2026-11-26T09:10:48.015"), 39,
                            fo.REASON_NO_UNLOAD_ELECTION)


KAFKA_3X = """\
[2024-03-01 10:00:00,000] INFO [GroupCoordinator 1]: Preparing to rebalance group pay in state PreparingRebalance with old generation 4 (__consumer_offsets-7) (reason: Adding new member p-1 with group instance id None; client reason: not provided) (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:00:03,000] INFO [GroupCoordinator 1]: Stabilized group pay generation 5 (__consumer_offsets-7) with 1 members (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:00:03,010] INFO [GroupCoordinator 1]: Assignment received from leader p-1 for group pay for generation 5. The group has 1 members, 0 of which are static. (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:05:00,000] INFO [GroupCoordinator 1]: Resigned as the group coordinator for partition 7 in epoch OptionalInt[3] (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:05:00,001] INFO [GroupMetadataManager brokerId=1] Scheduling unloading of offsets and group metadata from __consumer_offsets-7 (kafka.coordinator.group.GroupMetadataManager)
[2024-03-01 10:05:00,010] INFO [GroupCoordinator 1]: Unloading group metadata for pay with generation 5 (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:05:00,010] INFO [GroupCoordinator 1]: Unloading group metadata for ledger with generation 2 (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:05:00,011] INFO [GroupMetadataManager brokerId=1] Finished unloading __consumer_offsets-7 for coordinator epoch OptionalInt[3]. Removed 4 cached offsets and 2 cached groups. (kafka.coordinator.group.GroupMetadataManager)
[2024-03-01 10:05:00,020] INFO [GroupMetadataManager brokerId=1] Scheduling unloading of offsets and group metadata from __consumer_offsets-9 (kafka.coordinator.group.GroupMetadataManager)
[2024-03-01 10:05:00,021] INFO [GroupMetadataManager brokerId=1] Finished unloading __consumer_offsets-9 for coordinator epoch OptionalInt[3]. Removed 0 cached offsets and 0 cached groups. (kafka.coordinator.group.GroupMetadataManager)
"""
KAFKA_3X_NEW_LEADER = """\
[2024-03-01 10:05:00,040] INFO [GroupCoordinator 2]: Elected as the group coordinator for partition 7 in epoch 4 (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:05:00,041] INFO [GroupMetadataManager brokerId=2] Scheduling loading of offsets and group metadata from __consumer_offsets-7 for epoch 4 (kafka.coordinator.group.GroupMetadataManager)
[2024-03-01 10:05:00,300] INFO [GroupCoordinator 2]: Loading group metadata for pay with generation 5 (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:05:00,300] INFO [GroupCoordinator 2]: Loading group metadata for ledger with generation 2 (kafka.coordinator.group.GroupCoordinator)
[2024-03-01 10:05:00,301] INFO [GroupMetadataManager brokerId=2] Finished loading offsets and group metadata from __consumer_offsets-7 in 260 milliseconds for epoch 4, of which 1 milliseconds was spent in the scheduler. (kafka.coordinator.group.GroupMetadataManager)
"""


def test_kafka_3x_group_lines_take_the_partition_their_loader_finishes_next():
    rows = list(ev.parse_lines(KAFKA_3X.splitlines(), "kafka-log", "b"))
    rows += ev.parse_lines(KAFKA_3X_NEW_LEADER.splitlines(), "kafka-log", "b")
    moves = [(r["group_id"], r["broker"], r["kind"], r["partition"], r["generation"]) for r in rows
             if r["kind"].startswith("coordinator")]
    assert moves == [("pay", "broker-1", "coordinator_unloaded", 7, 5),
                     ("ledger", "broker-1", "coordinator_unloaded", 7, 2),
                     ("pay", "broker-2", "coordinator_loading", 7, None),
                     ("pay", "broker-2", "coordinator_loaded", 7, 5),
                     ("ledger", "broker-2", "coordinator_loading", 7, None),
                     ("ledger", "broker-2", "coordinator_loaded", 7, 2)]
    at = parse_time
    assert [_view(w) for w in _windows_of(rows)] == [
        ("ledger", 7, "kafka-log", "broker-1", "broker-2", at("2024-03-01T10:05:00.010"), at("2024-03-01T10:05:00.300"),
         290, fo.REASON_UNLOADED),
        ("pay", 7, "kafka-log", "broker-1", "broker-2", at("2024-03-01T10:05:00.010"), at("2024-03-01T10:05:00.300"),
         290, fo.REASON_UNLOADED),
    ]


def test_a_3x_group_line_whose_partition_never_finishes_in_the_input_keeps_no_partition():
    cut = KAFKA_3X_NEW_LEADER.splitlines()[:3]  # the log ends while the partition loads
    (loaded,) = ev.parse_lines(cut, "kafka-log", "b")
    assert (loaded["group_id"], loaded["kind"], loaded["partition"]) == ("pay", "coordinator_loaded", None)
    # nor does its window show a start: the input holds no unload, nor the election (its partition's)
    assert [_view(w) for w in _windows_of([loaded])] == [
        ("pay", None, "kafka-log", None, "broker-2", None, parse_time("2024-03-01T10:05:00.300"), None,
         fo.REASON_LOAD_ONLY)]


def test_restart_starts_merge_over_parts_of_the_input():
    ends = [100, 200, 300]
    parts = [fo.last_records_before(ends, [10, 150]), fo.last_records_before(ends, [50, 90])]
    assert fo.carry_forward(ends, fo.merge(parts, max)) == {100: 90, 200: 150, 300: 150}
    queries = [("broker-1", 10, 100), ("broker-2", None, 100)]
    parts = [fo.first_losses(queries, [("broker-1", 40), ("broker-1", 5)]),
             fo.first_losses(queries, [("broker-1", 30)])]
    assert fo.merge(parts, min) == {0: 30}
