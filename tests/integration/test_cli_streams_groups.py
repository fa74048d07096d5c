"""`kcoord groups` and the admin endpoint on streams groups (KIP-1071): members made of raw
StreamsGroupHeartbeats (kcoord.conformance.streams_check_scenarios.StreamsMember), then the CLI
as a subprocess, on kcoord and on the reference Kafka (it speaks only the Kafka protocol)."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

from kcoord.conformance.raw_scenarios import Broker, _create_topic
from kcoord.conformance.rawclient import parse_bootstrap
from kcoord.conformance.streams_check_scenarios import StreamsMember, settle, topology
from kcoord.testing.plugin import start_server

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def _kcoord(*args):
    return subprocess.run([sys.executable, "-m", "kcoord", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


async def _broker(bootstrap: str) -> Broker:
    b = Broker(*parse_bootstrap(bootstrap))
    await b.probe()
    return b


async def _two_members(bootstrap: str, group: str) -> list[StreamsMember]:
    """Two members of `group` reading `group`-in (two partitions) into a store with a changelog,
    settled: one task each, both at the group's epoch."""
    b = await _broker(bootstrap)
    await _create_topic(b, f"{group}-in", 2)
    shape = topology(f"{group}-in", f"{group}-store-changelog")
    members = [await StreamsMember(b, group, shape, endpoint=("localhost", 7000 + i), client_id=f"app-{i}").open()
               for i in (1, 2)]
    await settle(members, lambda ms: all(len(m.active.get("0", [])) == 1 for m in ms)
                 and len({m.epoch for m in ms}) == 1 and not any(m.status for m in ms))
    return members


async def _while_members(make, bootstrap: str, group: str, look):
    """make's members stay connected while look() (blocking: a subprocess, HTTP) runs."""
    members = await make(bootstrap, group)
    try:
        return members, await asyncio.to_thread(look)
    finally:
        for m in members:
            await m.close()


async def _not_ready(bootstrap: str, group: str) -> list[StreamsMember]:
    m = await StreamsMember(await _broker(bootstrap), group, topology(f"{group}-nowhere")).open()
    await m.heartbeat()
    return [m]


def _http(server, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.app.http.port}{path}", timeout=10) as r:
        return json.loads(r.read())


def _rows(out: str, first: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.split()[:1] == [first]]


def test_groups_lists_and_describes_a_streams_group(broker_any):
    group = f"streams-cli-{uuid.uuid4().hex[:8]}"
    members, (listed, described) = asyncio.run(_while_members(
        _two_members, broker_any.bootstrap, group, lambda: (
            _kcoord("groups", "--bootstrap", broker_any.bootstrap),
            _kcoord("groups", "--bootstrap", broker_any.bootstrap, "--describe", group))))
    epoch = members[0].epoch
    assert listed.returncode == 0, listed.stderr
    (row,) = _rows(listed.stdout, group)
    assert row[:3] == [group, "streams", "Stable"] and row[4:] == [str(epoch), str(epoch)]
    assert described.returncode == 0, described.stderr
    head = described.stdout.splitlines()[0]
    assert head.startswith(f"group {group}: coordinator ") and head.endswith(
        f"state Stable, type streams, group epoch {epoch}, assignment epoch {epoch}, topology epoch 1, 2 members")
    tasks = set()
    for m in members:
        (r,) = _rows(described.stdout, m.member_id)
        # process, client id, epoch, state, endpoint; what it runs is its target, one task
        assert (r[1], r[2], r[4], r[5], r[6]) == (m.process_id, m.client_id, str(epoch), "stable",
                                                  f"localhost:{m.endpoint[1]}")
        assert r[7] == r[10] == f"0_{m.active['0'][0]}" and r[8:10] == r[11:] == ["-", "-"]
        tasks.add(r[7])
    assert tasks == {"0_0", "0_1"}
    # The topology: the source topic, no repartition topics, the changelog with the source's partitions.
    assert _rows(described.stdout, "0") == [["0", f"{group}-in", "-", "-", f"{group}-store-changelog(2)"]]


def test_groups_says_why_a_streams_group_is_not_ready(broker_any):
    group = f"streams-cli-{uuid.uuid4().hex[:8]}"
    (member,), described = asyncio.run(_while_members(
        _not_ready, broker_any.bootstrap, group,
        lambda: _kcoord("groups", "--bootstrap", broker_any.bootstrap, "--describe", group)))
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    assert ", state NotReady, type streams, " in lines[0]
    assert lines[1] == f"not ready: missing source topics {group}-nowhere"
    (r,) = _rows(described.stdout, member.member_id)
    assert r[7:] == ["-"] * 6


def test_admin_endpoint_describes_a_streams_group():
    server = start_server(http_host="127.0.0.1", http_port=0)
    group = f"streams-http-{uuid.uuid4().hex[:8]}"
    try:
        members, (listed, described) = asyncio.run(_while_members(
            _two_members, server.bootstrap, group,
            lambda: (_http(server, "/groups"), _http(server, f"/groups/{group}"))))
    finally:
        server.stop()
    assert [(g["group_id"], g["type"], g["state"], g["members"]) for g in listed] == [(group, "streams", "Stable", 2)]
    assert (described["type"], described["state"], described["error_code"]) == ("streams", "Stable", 0)
    assert described["group_epoch"] == described["assignment_epoch"] == members[0].epoch
    assert {m["process_id"]: m["assignment"]["active_tasks"] for m in described["members"]} == {
        m.process_id: [{"subtopology_id": "0", "partitions": m.active["0"]}] for m in members}
    assert described["topology"]["subtopologies"][0]["source_topics"] == [f"{group}-in"]
