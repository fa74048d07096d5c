"""A real kcoord's journal of a streams group (KIP-1071): the events it records, and what the
report makes of them through its own parsers and per-group code (what Spark runs on each group;
test_report_offsets_topic.py runs the Spark job on __consumer_offsets' streams records)."""
from __future__ import annotations

import asyncio
import json
import uuid

from kcoord.analytics import events as ev
from kcoord.analytics.streams import streams_group_row
from kcoord.conformance.raw_scenarios import Broker, _create_topic
from kcoord.conformance.rawclient import parse_bootstrap
from kcoord.conformance.streams_check_scenarios import StreamsMember, describe, settle, topology
from kcoord.testing.plugin import start_server


async def _scenario(bootstrap: str, group: str):
    """a takes both tasks; b joins and a revokes one; b leaves."""
    b = Broker(*parse_bootstrap(bootstrap))
    await b.probe()
    await _create_topic(b, f"{group}-in", 2)
    a = await StreamsMember(b, group, topology(f"{group}-in"), client_id="a").open()
    second = await StreamsMember(b, group, topology(f"{group}-in"), client_id="b").open()
    try:
        await settle([a], lambda ms: ms[0].active == {"0": [0, 1]})
        await settle([a, second], lambda ms: all(len(m.active.get("0", [])) == 1 for m in ms))
        await second.leave()
        await settle([a], lambda ms: ms[0].active == {"0": [0, 1]})
        return a, second, await describe(b, group)
    finally:
        await a.close()
        await second.close()


def test_the_journal_records_a_streams_group_and_the_report_reads_it(tmp_path):
    path = tmp_path / "events.jsonl"
    server = start_server(journal=str(path))
    group = f"sj-{uuid.uuid4().hex[:8]}"
    try:
        a, b, described = asyncio.run(_scenario(server.bootstrap, group))
    finally:
        server.stop()
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines if json.loads(line).get("group_id") == group]
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "streams_group_created" and kinds.count("member_joined") == 2
    assert {"group_epoch_bumped", "target_assignment_changed", "member_epoch_bumped"} <= set(kinds)
    assert [(r["member_id"], r["client_id"]) for r in records if r["kind"] == "member_left"] == [(b.member_id, "b")]
    # a revoked the task b was to get, and only that one.
    (revoking,) = [r for r in records if r["kind"] == "tasks_revoking"]
    assert revoking["member_id"] == a.member_id
    assert revoking["details"]["revoking"]["standby"] == revoking["details"]["revoking"]["warmup"] == []
    (task,) = revoking["details"]["revoking"]["active"]
    assert task["subtopology_id"] == "0" and len(task["partitions"]) == 1

    rows = [r for r in ev.parse_lines(lines, "journal", "kcoord", {}) if r["group_id"] == group]
    (parsed,) = [r for r in rows if r["kind"] == "tasks_revoking"]
    assert parsed["tasks"] == f"revoking active 0_{task['partitions'][0]}"
    assert streams_group_row(rows) == {
        "group_id": group, "first_ms": rows[0]["time_ms"], "last_ms": max(r["time_ms"] for r in rows),
        "group_epoch": described.group_epoch, "assignment_epoch": described.assignment_epoch, "members": 1,
        "members_seen": 2, "revocations": 1, "sources": "journal"}
