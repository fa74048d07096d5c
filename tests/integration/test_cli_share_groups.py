"""`kcoord groups` on share groups (KIP-932): two members made of raw ShareGroupHeartbeats sharing
a topic's one partition (the simple assignor gives a partition to several members only when there
are more members than partitions), one of them having fetched and accepted records, then the CLI as a
subprocess, on kcoord and on the reference Kafka (it speaks only the Kafka protocol)."""
from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kcoord.protocol_client import Connection
from tests.integration.test_share_groups import produce, share_group

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration
HEARTBEAT, SHARE_FETCH = 76, 78


def _kcoord(*args):
    return subprocess.run([sys.executable, "-m", "kcoord", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


def _heartbeat(conn, group: str, member: str, epoch: int, topics=None):
    return conn.call(HEARTBEAT, 1, {"group_id": group, "member_id": member, "member_epoch": epoch,
                                    "rack_id": None, "subscribed_topic_names": topics})


def _join_until_assigned(conn, group: str, member: str, topic: str, timeout: float = 60) -> uuid.UUID:
    """Join and heartbeat until the member holds the partition (on Kafka the share-partition's
    state is initialised first, asynchronously); the topic's id."""
    answer = _heartbeat(conn, group, member, 0, [topic])
    assert answer.error_code == 0, answer
    epoch, deadline = answer.member_epoch, time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = _heartbeat(conn, group, member, epoch)
        assert answer.error_code == 0, answer
        epoch = answer.member_epoch
        if answer.assignment is not None and sum(len(t.partitions) for t in answer.assignment.topic_partitions) == 1:
            return answer.assignment.topic_partitions[0].topic_id
        time.sleep(0.3)
    raise AssertionError(f"{member} got no assignment within {timeout}s")


def _fetch_and_accept(conn, group: str, member: str, topic_id: uuid.UUID, records: int) -> None:
    """One share session: fetch until `records` are acquired, accept them all, close the session."""
    def fetch(epoch, acks=None):
        topics = [{"topic_id": topic_id, "partitions": [
            {"partition_index": 0, "acknowledgement_batches": (acks or {}).get(0, [])}]}]
        closing = epoch == -1
        return conn.call(SHARE_FETCH, 1, {
            "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": 0 if closing else 2000,
            "min_bytes": 0 if closing else 1, "max_bytes": 0 if closing else 1 << 20,
            "max_records": 0 if closing else 100, "batch_size": 0 if closing else 100,
            "topics": [] if closing and not acks else topics, "forgotten_topics_data": []})

    acquired: dict[int, list[tuple[int, int]]] = {0: []}
    epoch, deadline = 0, time.monotonic() + 30
    while sum(b - a + 1 for r in acquired.values() for a, b in r) < records and time.monotonic() < deadline:
        got = fetch(epoch)
        assert got.error_code == 0, got
        epoch += 1
        for t in got.responses:
            for p in t.partitions:
                acquired[p.partition_index] += [(a.first_offset, a.last_offset) for a in p.acquired_records]
    acks = {p: [{"first_offset": a, "last_offset": b, "acknowledge_types": [1]} for a, b in ranges]
            for p, ranges in acquired.items()}
    done = fetch(-1, acks)
    assert all(p.acknowledge_error_code == 0 for t in done.responses for p in t.partitions), done


def test_kcoord_groups_lists_and_describes_a_share_group(broker_any):
    bootstrap = broker_any.bootstrap
    topic, group = share_group(bootstrap, "cli")
    produce(bootstrap, topic, [f"v{i}" for i in range(4)])
    members = [str(uuid.uuid4()) for _ in range(2)]
    with Connection.to(bootstrap, 10.0) as one, Connection.to(bootstrap, 10.0) as two:
        topic_id = [_join_until_assigned(c, group, m, topic) for c, m in zip((one, two), members)][0]
        _fetch_and_accept(one, group, members[0], topic_id, 4)
        listed = _kcoord("groups", "--bootstrap", bootstrap)
        assert listed.returncode == 0, listed.stderr
        [row] = [line.split() for line in listed.stdout.splitlines() if line.startswith(group + " ")]
        assert row[1:3] == ["share", "Stable"]

        described = _kcoord("groups", "--bootstrap", bootstrap, "--describe", group)
        assert described.returncode == 0, described.stderr
        out = described.stdout
        assert f"group {group}: coordinator" in out and "state Stable, type share" in out, out
        assert "assignor simple, 2 members" in out, out
        for m in members:
            [line] = [line for line in out.splitlines() if line.startswith(m)]
            assert line.split()[-1] == f"{topic}:0", out   # both members share the partition
        # Every record accepted: no lag.
        offsets = [line.split() for line in out.splitlines() if line.startswith(topic + " ")]
        assert [(p, lag) for _, p, _, lag in offsets] == [("0", "0")], out
