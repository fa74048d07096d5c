"""kcoord.connect_protocol on bytes real Connect workers sent (tests/unit/connect_captures.json)."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from kcoord.connect_protocol import (ConnectAssignment, WorkerMetadata, decode_assignment, decode_metadata,
                                     encode_assignment, encode_metadata, held, journal_summary)

CAPTURES = json.loads((Path(__file__).parent / "connect_captures.json").read_text())


@pytest.mark.parametrize("protocol,version", [("eager", 0), ("sessioned", 2)])
def test_captured_bytes_decode_to_what_each_worker_logged(protocol, version):
    cap = CAPTURES[protocol]
    leaders = set()
    for m in cap["members"]:
        meta_bytes, asg_bytes = bytes.fromhex(m["metadata"]), bytes.fromhex(m["assignment"])
        meta, a = decode_metadata(meta_bytes), decode_assignment(asg_bytes)
        assert meta.version == version and a.version == version and a.error == 0
        worker = meta.url.removeprefix("http://").rstrip("/")
        assert m["member_id"].startswith(f"connect-{worker}-")
        logged = cap["logs"][worker]
        connectors, tasks = held(meta, a)
        assert (connectors, tasks) == (sorted(logged["connectors"]), sorted(logged["tasks"]))
        assert a.leader == logged["leader"] and a.leader_url.startswith("http://127.0.0.1:")
        assert a.delay == logged["delay"] and a.revoked_tasks == logged["revoked_tasks"]
        assert (meta.allocation is not None) == (version > 0)
        # The inverses give back the very bytes.
        assert encode_assignment(a) == asg_bytes and encode_metadata(meta) == meta_bytes
        leaders.add(a.leader)
    assert len(leaders) == 1


def test_incremental_assignment_fields_and_defaults():
    a = ConnectAssignment(2, 0, "connect-1", "http://h:1/", 7, ["c"], ["c-0", "d-3"], ["e"], ["e-1", "e-2"], 5000)
    data = encode_assignment(a)
    assert decode_assignment(data) == a
    # The revoked lists and the delay may be missing: they default (TOLERATE_MISSING_FIELDS_WITH_DEFAULTS).
    v1_no_tail = struct.pack(">h", 1) + encode_assignment(ConnectAssignment(0, 1, "l", "u", 3, [], ["c-0"]))[2:]
    got = decode_assignment(v1_no_tail)
    assert got.version == 1 and got.error == 1 and got.tasks == ["c-0"] and got.delay == 0 and not got.revoked_tasks


def test_not_connect_bytes_decode_to_none():
    assert decode_assignment(b"") is None and decode_metadata(None) is None
    assert decode_assignment(b"\x00\x00\x00") is None
    assert decode_metadata(b"\xff\xff") is None


def test_held_applies_revocations_to_the_previous_allocation():
    before = ConnectAssignment(2, 0, "l", "u", 1, ["a"], ["a-0", "a-1"])
    meta = WorkerMetadata(2, "http://w/", 1, before)
    a = ConnectAssignment(2, 0, "l", "u", 1, [], ["b-0"], ["a"], ["a-1"], 0)
    assert held(meta, a) == ([], ["a-0", "b-0"])
    summary = journal_summary(a, meta)
    assert summary["url"] == "http://w/" and summary["held_tasks"] == ["a-0", "b-0"] and summary["revoked_tasks"] == ["a-1"]
