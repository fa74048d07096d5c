"""A group id that names no group leaves nothing behind: looking up 250,000 random ids
(Spark's Kafka source makes a new group id per query) neither grows the server's memory
nor leaves a task per id. (A million took three minutes of both cores in the full suite;
the count of what is left is exact, and 16 MiB over 250,000 ids still catches 64 bytes kept
per id.)"""
from __future__ import annotations

import asyncio
import os
import uuid

from kcoord.protocol_client import Connection

DESCRIBE_GROUPS, OFFSET_FETCH = 15, 9
IDS, PER_REQUEST = 250_000, 2000


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_unknown_group_ids_leave_nothing_behind(kcoord_server):
    host, port = kcoord_server.bootstrap.rsplit(":", 1)
    pid = os.getpid()  # the fixture's server runs in this process, on its own loop thread
    with Connection(host, int(port)) as conn:
        v = conn.version(DESCRIBE_GROUPS, 5)

        def lookups(n):
            for _ in range(n // PER_REQUEST):
                ids = [uuid.uuid4().hex for _ in range(PER_REQUEST)]
                r = conn.call(DESCRIBE_GROUPS, v, {"groups": ids, "include_authorized_operations": False})
                assert {g.error_code for g in r.groups} == {0}  # GROUP_ID_NOT_FOUND only from v6
                assert {g.group_state for g in r.groups} == {"Dead"}

        lookups(IDS // 10)  # warm-up: allocator arenas and caches reach their steady size
        before = _rss_kib(pid)
        lookups(IDS)
        grown_kib = _rss_kib(pid) - before
    service = kcoord_server.coordinator
    assert kcoord_server.call(lambda: _left_behind(service)) == {"groups": 0, "waiters": 0, "tasks": 0}
    assert grown_kib < 16 * 1024, f"RSS grew by {grown_kib} KiB over {IDS} unknown group ids"


async def _left_behind(service):
    current = asyncio.current_task()
    return {"groups": len(service.runtime.groups), "waiters": len(service._waiters),
            "tasks": len([t for t in asyncio.all_tasks() if t is not current and "group" in t.get_name()])}
