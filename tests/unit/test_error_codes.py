"""kcoord.conformance.error_codes on hand-made transcript lines: which group and which codes an
answer stands for, the window and brokers counted, and how two brokers' tables compare."""
from __future__ import annotations

from collections import Counter

from kcoord.conformance import error_codes
from kcoord.conformance.error_codes import FAILOVER_TIMING, codes_seen, differences, missing

LABELS = {"g-a": "kafka-python", "g-b": "kafka-python", "g-c": "java4-kip848"}


def ex(api, request, response, answered_ms=100, broker=0, **extra):
    return {"api": api, "request": request, "response": response, "answered_ms": answered_ms, "broker": broker,
            **extra}


def test_every_code_of_an_answer_counts_for_the_group_its_request_names():
    exchanges = [
        ex("FindCoordinator", {"key": "g-a", "key_type": 0}, {"error_code": 15, "node_id": -1}),
        ex("FindCoordinator", {"key_type": 0, "coordinator_keys": ["g-a", "g-c"]},
           {"coordinators": [{"key": "g-a", "error_code": 0}, {"key": "g-c", "error_code": 16}]}),
        ex("FindCoordinator", {"key": "g-a", "key_type": 1}, {"error_code": 0}),   # a transaction coordinator
        ex("OffsetCommit", {"group_id": "g-b"},
           {"topics": [{"partitions": [{"partition_index": 0, "error_code": 0},
                                       {"partition_index": 1, "error_code": 14}]}]}),
        ex("OffsetFetch", {"groups": [{"group_id": "g-a"}, {"group_id": "g-c"}]},
           {"groups": [{"group_id": "g-a", "error_code": 0, "topics": []},
                       {"group_id": "g-c", "error_code": 16, "topics": []}]}),
        ex("LeaveGroup", {"group_id": "g-b"}, {"error_code": 0, "members": [{"error_code": 25}]}),
        ex("ConsumerGroupHeartbeat", {"group_id": "g-c"}, {"error_code": 0, "assignment": None}),
        ex("Heartbeat", {"group_id": "other"}, {"error_code": 27}),        # not a group of the scenario's
        ex("Metadata", {"topics": None}, {"brokers": []}),                 # not a group API
    ]
    assert codes_seen(exchanges, LABELS) == {
        ("kafka-python", "FindCoordinator"): Counter({"COORDINATOR_NOT_AVAILABLE": 1, "NONE": 1}),
        ("java4-kip848", "FindCoordinator"): Counter({"NOT_COORDINATOR": 1}),
        ("kafka-python", "OffsetCommit"): Counter({"NONE": 1, "COORDINATOR_LOAD_IN_PROGRESS": 1}),
        ("kafka-python", "OffsetFetch"): Counter({"NONE": 1}),
        ("java4-kip848", "OffsetFetch"): Counter({"NOT_COORDINATOR": 1}),
        ("kafka-python", "LeaveGroup"): Counter({"NONE": 1, "UNKNOWN_MEMBER_ID": 1}),
        ("java4-kip848", "ConsumerGroupHeartbeat"): Counter({"NONE": 1}),
    }


def test_only_answers_from_the_failure_on_and_from_the_brokers_asked_for_count():
    exchanges = [
        ex("Heartbeat", {"group_id": "g-a"}, {"error_code": 0}, answered_ms=99, broker=1),
        ex("Heartbeat", {"group_id": "g-a"}, {"error_code": 16}, answered_ms=100, broker=1),
        ex("Heartbeat", {"group_id": "g-a"}, {"error_code": 14}, answered_ms=150, broker=2),
        ex("JoinGroup", {"group_id": "g-a"}, None, unanswered=True),   # its connection ended first
    ]
    assert codes_seen(exchanges, LABELS, since_ms=100) == \
        {("kafka-python", "Heartbeat"): Counter({"NOT_COORDINATOR": 1, "COORDINATOR_LOAD_IN_PROGRESS": 1})}
    assert codes_seen(exchanges, LABELS, since_ms=100, brokers={2}) == \
        {("kafka-python", "Heartbeat"): Counter({"COORDINATOR_LOAD_IN_PROGRESS": 1})}


def test_a_code_on_one_broker_only_is_timing_only_if_a_moving_coordinator_answers_it():
    kafka = {("java", "Heartbeat"): Counter({"NONE": 9, "NOT_COORDINATOR": 1}),
             ("java", "FindCoordinator"): Counter({"NONE": 3})}
    kcoord = {("java", "Heartbeat"): Counter({"NONE": 7, "COORDINATOR_LOAD_IN_PROGRESS": 2}),
              ("java", "FindCoordinator"): Counter({"NONE": 2, "COORDINATOR_NOT_AVAILABLE": 1}),
              ("java", "OffsetCommit"): Counter({"NONE": 4})}
    assert differences(kafka, kcoord, FAILOVER_TIMING) == []
    kcoord[("java", "Heartbeat")]["UNKNOWN_MEMBER_ID"] = 1
    kafka[("java", "FindCoordinator")]["NOT_COORDINATOR"] = 2   # FindCoordinator never answers it
    assert differences(kafka, kcoord, FAILOVER_TIMING) == [
        "java FindCoordinator: NOT_COORDINATOR seen only on kafka (2x)",
        "java Heartbeat: UNKNOWN_MEMBER_ID seen only on kcoord (1x)"]
    # A code both saw is never a difference, however often.
    kafka[("java", "Heartbeat")]["UNKNOWN_MEMBER_ID"] = 5
    assert differences(kafka, kcoord, FAILOVER_TIMING) == ["java FindCoordinator: NOT_COORDINATOR seen only on kafka (2x)"]


def test_required_codes_are_looked_for_per_client():
    seen = {("java", "JoinGroup"): Counter({"NOT_COORDINATOR": 1, "NONE": 2})}
    required = {"java": {("JoinGroup", "NOT_COORDINATOR")}, "confluent": {("JoinGroup", "NOT_COORDINATOR")}}
    assert missing(seen, required) == ["confluent JoinGroup: NOT_COORDINATOR never seen"]
    assert "java  JoinGroup" in error_codes.table(seen) and "NOT_COORDINATOR x1" in error_codes.table(seen)
