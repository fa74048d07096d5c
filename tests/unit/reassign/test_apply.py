"""What `kcoord reassign apply` decides before it touches a cluster: the plan's record of what it
was made against, each partition's status (done, under way, to move) or the one line that
makes the plan stale, the batches left after an interruption, Kafka's throttle configs for the
moves, the state file, and the lines it prints."""
from __future__ import annotations

import io
import json

import pytest

from kcoord.reassign.apply import Progress, Start, StateFile, Summary, default_state_path, fingerprint
from kcoord.reassign.model import Plan, PlanError, parse_plan, parse_reassignment_json, reassignment_json
from kcoord.reassign.progress import Bar, Lines, human_bytes, summary_line
from kcoord.reassign.remaining import DONE, TO_MOVE, UNDER_WAY, Observed, Ongoing, batches, status
from kcoord.reassign.throttles import FOLLOWER_REPLICAS, LEADER_REPLICAS, moves, reassigning_brokers, \
    topic_throttles

A0, A1, A2, B0 = ("a", 0), ("a", 1), ("a", 2), ("b", 0)


def _plan(targets, made_against="same", cluster_id="c1") -> Plan:
    base = {A0: (0, 1), A1: (1, 2), A2: (2, 0), B0: (0, 1)} if made_against == "same" else made_against
    return Plan(dict(targets), None if base is None else {k: base[k] for k in targets}, cluster_id)


def _seen(replicas=None, ongoing=None, brokers=(0, 1, 2, 3), cluster_id="c1") -> Observed:
    now = {A0: (0, 1), A1: (1, 2), A2: (2, 0), B0: (0, 1)}
    now.update(replicas or {})
    return Observed(frozenset(brokers), now, ongoing or {}, cluster_id)


def test_the_plan_records_what_it_was_made_against_under_a_key_of_its_own():
    doc = reassignment_json({A1: (3, 2), A0: (3, 1)}, {A0: (0, 1), A1: (1, 2)}, "c1")
    assert [e["partition"] for e in doc["partitions"]] == [0, 1]
    assert doc["kcoord"] == {"cluster_id": "c1", "made_against": [
        {"topic": "a", "partition": 0, "replicas": [0, 1]}, {"topic": "a", "partition": 1, "replicas": [1, 2]}]}
    text = json.dumps(doc)
    assert parse_plan(text) == Plan({A0: (3, 1), A1: (3, 2)}, {A0: (0, 1), A1: (1, 2)}, "c1")
    assert parse_reassignment_json(text) == {A0: (3, 1), A1: (3, 2)}
    # Kafka's own JSON (--generate): no record; the file's order is kept.
    kafka = '{"version":1,"partitions":[{"topic":"a","partition":2,"replicas":[1,0]},' \
            '{"topic":"a","partition":0,"replicas":[3,1]}]}'
    plan = parse_plan(kafka)
    assert (list(plan.targets), plan.made_against, plan.cluster_id) == ([A2, A0], None, None)
    with pytest.raises(PlanError, match="not Kafka's reassignment JSON"):
        parse_plan('{"version":1,"partitions":[],"kcoord":{"cluster_id":"x"}}')
    with pytest.raises(PlanError, match="not Kafka's reassignment JSON"):
        parse_plan("[1, 2]")


def test_each_partition_is_done_under_way_or_to_move():
    plan = _plan({A0: (3, 1), A1: (3, 2), A2: (3, 0), B0: (1, 0)})
    seen = _seen(replicas={A0: (3, 1), A1: (3, 2, 1)}, ongoing={A1: Ongoing((3, 2, 1), (3,), (1,))})
    assert status(plan, seen) == {A0: DONE, A1: UNDER_WAY, A2: TO_MOVE, B0: TO_MOVE}


@pytest.mark.parametrize("seen,line", [
    (_seen(replicas={A1: (1, 0)}),
     "a-1 is on [1, 0], not on [1, 2] as when the plan was made, nor on its target [3, 2]: "
     "the cluster changed since; plan again"),
    (_seen(replicas={A1: (1, 2)}, ongoing={A1: Ongoing((0, 1, 2), (0,), (2,))}),
     "a-1 is being reassigned to [0, 1], not to the plan's [3, 2]: the cluster changed since the plan was made"),
    (_seen(replicas={A0: (1, 0)}),
     "a-0 is on [1, 0], not on [0, 1] as when the plan was made, nor on its target [3, 1]: "
     "the cluster changed since; plan again"),
    (_seen(brokers=(0, 1, 2)), "the plan puts a-0 on broker 3, which the cluster does not have"),
    (Observed(frozenset({0, 1, 2, 3}), {A0: (0, 1)}, {}, "c1"),
     "the plan names partition a-1, which the cluster does not have"),
    (_seen(cluster_id="c2"), "the plan was made against cluster c1, not this one (c2)"),
])
def test_a_plan_the_cluster_moved_away_from_is_stale(seen, line):
    with pytest.raises(PlanError) as err:
        status(_plan({A0: (3, 1), A1: (3, 2)}), seen)
    assert str(err.value) == line


def test_a_plan_without_its_record_needs_the_base_check_off():
    plan = _plan({A0: (3, 1), A1: (3, 2)}, made_against=None, cluster_id=None)
    with pytest.raises(PlanError, match="no record of the replicas it was made against .* --no-base-check"):
        status(plan, _seen())
    # Off, whatever the replicas are now counts as the start; a reassignment elsewhere still stops it.
    assert status(plan, _seen(replicas={A1: (2, 1)}), check_base=False) == {A0: TO_MOVE, A1: TO_MOVE}
    with pytest.raises(PlanError, match="a-0 is being reassigned to \\[2, 1\\]"):
        status(plan, _seen(ongoing={A0: Ongoing((2, 1, 0), (2,), (0,))}), check_base=False)
    partial = Plan({A0: (3, 1), A1: (3, 2)}, {A0: (0, 1)})
    with pytest.raises(PlanError, match="record .* lacks a-1"):
        status(partial, _seen())
    # A broker the cluster lacks, or a log directory, is refused whatever the check.
    with pytest.raises(PlanError, match="broker 9"):
        status(Plan({A0: (9, 1)}), _seen(), check_base=False)
    kafka = parse_plan('{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[3,1],'
                       '"log_dirs":["any","/data/2"]},{"topic":"a","partition":1,"replicas":[3,2]}]}')
    assert kafka.log_dirs == {A0: ("any", "/data/2")}
    with pytest.raises(PlanError) as err:
        status(kafka, _seen(), check_base=False)
    assert str(err.value) == ("the plan puts a-0 in log directories ['any', '/data/2']: apply moves replicas "
                              "between brokers only (kafka-reassign-partitions moves them between directories)")


def test_batches_go_in_the_plans_order_after_what_an_interruption_left():
    order = [A2, B0, A0, A1]
    statuses = dict.fromkeys(order, TO_MOVE)
    assert batches(statuses, 3) == [[A2, B0, A0], [A1]]
    assert batches(statuses, 1) == [[A2], [B0], [A0], [A1]]
    # Resumed: batch [A2, B0] was submitted; A2 finished, B0 still moves; A1 is under way too
    # (someone else's reassignment to the plan's target): they come first, in one batch.
    statuses = {A2: DONE, B0: UNDER_WAY, A0: TO_MOVE, A1: UNDER_WAY}
    assert batches(statuses, 2, interrupted=[A2, B0]) == [[B0, A1], [A0]]
    # An interrupted batch's partition still to move (never submitted) stays in it.
    statuses = {A2: DONE, B0: TO_MOVE, A0: TO_MOVE, A1: TO_MOVE}
    assert batches(statuses, 2, interrupted=[A2, B0]) == [[B0], [A0, A1]]
    assert batches(dict.fromkeys(order, DONE), 2, interrupted=[A2]) == []


def test_throttles_are_kafkas_for_the_moves_and_those_under_way():
    # a-1 from [1, 2] to [3, 2]; a-10 from [0, 1] to [2, 3]; b-0 reassigning from [0, 1] to [1, 2].
    found = moves({A1: (3, 2), ("a", 10): (2, 3)}, {A1: (1, 2), ("a", 10): (0, 1)},
                  {B0: Ongoing((1, 2, 0), (2,), (0,))})
    assert {k: (sorted(m.sources), sorted(m.destinations)) for k, m in found.items()} == {
        A1: ([1, 2], [3]), ("a", 10): ([0, 1], [2, 3]), B0: ([0, 1], [2])}
    assert topic_throttles(found) == {
        "a": {LEADER_REPLICAS: "10:0,10:1,1:1,1:2", FOLLOWER_REPLICAS: "10:2,10:3,1:3"},
        "b": {LEADER_REPLICAS: "0:0,0:1", FOLLOWER_REPLICAS: "0:2"}}
    assert reassigning_brokers(found) == {0, 1, 2, 3}
    # A planned partition already reassigning keeps the sources it started from.
    again = moves({B0: (1, 2)}, {B0: (1, 2, 0)}, {B0: Ongoing((1, 2, 0), (2,), (0,))})
    assert (sorted(again[B0].sources), sorted(again[B0].destinations)) == ([0, 1], [2])


def test_the_state_file_keeps_the_batches_of_one_plan(tmp_path):
    plan = _plan({A0: (3, 1), A1: (3, 2)})
    path = default_state_path(str(tmp_path / "move.json"))
    assert path == tmp_path / "move.state.json"
    assert default_state_path("plan") .name == "plan.state.json"
    state = StateFile.load(path, fingerprint(plan))
    assert (state.batches, state.existed, state.interrupted) == ([], False, [])
    state.begin([A0])
    state.finish()
    state.begin([A1])
    again = StateFile.load(path, fingerprint(plan))
    assert (again.done, again.interrupted, again.existed) == (1, [A1], True)
    again.begin([A1, A0])   # the interrupted batch is replaced, not added to
    assert StateFile.load(path, fingerprint(plan)).batches == [
        {"partitions": [A0], "done": True}, {"partitions": [A1, A0], "done": False}]
    # The same targets however the file is spaced; another plan is refused.
    assert fingerprint(parse_plan(json.dumps(reassignment_json(plan.targets)))) == fingerprint(plan)
    with pytest.raises(PlanError, match="records the apply of another plan"):
        StateFile.load(path, fingerprint(_plan({A0: (3, 1)})))
    path.write_text("{not json")
    with pytest.raises(PlanError, match="is not the state of a kcoord reassign apply"):
        StateFile.load(path, fingerprint(plan))


def _progress(**kw) -> Progress:
    values = dict(batch=2, batches=3, batch_partitions=[A0, A1, A2, B0, ("b", 1)], partitions_done=4,
                  partitions=9, bytes_done=3 * 1024 * 1024, bytes_total=12 * 1024 * 1024)
    return Progress(**(values | kw))


def test_progress_is_a_line_per_batch_and_on_a_terminal_a_bar():
    out = io.StringIO()
    lines = Lines(out)
    lines.started(Start(9, 2, 1, 1, 4, 5000, (0, 1, 3), 1000, True))
    lines.progress(_progress())
    lines.batch_done(_progress())
    assert out.getvalue().splitlines() == [
        "resuming: 2 of 9 partitions on their targets, 1 batch done before, 1 under way; 3 batches left, "
        "4.9 KiB to copy, throttle 1000 B/s on brokers 0,1,3",
        "batch 2/3 done: a-0 a-1 a-2 b-0 and 1 more; 4/9 partitions, 3.0 MiB of 12.0 MiB copied"]
    out = io.StringIO()
    bar = Bar(out)
    bar.progress(_progress())
    bar.batch_done(_progress(partitions_done=7))
    text = out.getvalue()
    assert text.startswith("\r\x1b[K[#######.......................] 4/9 partitions  3.0 MiB of 12.0 MiB  batch 2/3")
    assert text.endswith("\r\x1b[Kbatch 2/3 done: a-0 a-1 a-2 b-0 and 1 more; 7/9 partitions, 3.0 MiB of "
                         "12.0 MiB copied\n")
    fresh = io.StringIO()
    Lines(fresh).started(Start(3, 3, 0, 0, 0, 0, (), None, False))
    assert fresh.getvalue() == "nothing to move: every partition of the plan (3) is on its target\n"
    assert summary_line(Summary(9, 7, 3, 2048, (0, 1, 2), ("a", "b"))) == (
        "reassignment complete: 9 partitions on their targets (7 moved by this apply in 3 batches, 2.0 KiB "
        "copied); throttles cleared on brokers 0,1,2 and topics a,b")
    assert [human_bytes(n) for n in (0, 1023, 1024, 5 * 1024 ** 3)] == ["0 B", "1023 B", "1.0 KiB", "5.0 GiB"]
