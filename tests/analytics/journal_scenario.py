"""Drives a real kcoord with real kafka-python member processes through joins, a static
restart, a leave and a crash, and returns what happened when, so the journal it wrote can
be checked against it.

    python -m tests.analytics.journal_scenario JOURNAL_PATH   # writes a journal, prints the steps
"""
from __future__ import annotations

import json
import sys
import time

from kcoord.testing.plugin import start_server
from kcoord.conformance.members import Member

GROUP = "journal-scenario"
TOPIC = "journal-topic"
PARTITIONS = 6
CLIENT = "kafka-python"


def _now_ms() -> int:
    return int(time.time() * 1000)


def run(journal_path: str) -> list[dict]:
    """Each step: the rebalance it must cause (or none), with the wall-clock window it happened in."""
    server = start_server(journal=str(journal_path), default_partitions=PARTITIONS)
    steps: list[dict] = []
    members: dict[str, Member] = {}

    def wait(**kw):
        server.call(lambda: server.app.coordinator.wait_for(GROUP, timeout=90, **kw), timeout=100)

    def generation() -> int:
        return server.app.coordinator.runtime.group(GROUP).generation

    def start(name, **kw):
        members[name] = Member(CLIENT, server.bootstrap, TOPIC, GROUP, **kw)

    def step(name, cause, action, quiet=False, **until):
        gen = generation() if GROUP in server.app.coordinator.runtime.groups else 0
        # windows are contiguous, so a rebalance a client starts on its own between two steps
        # still falls into exactly one of them
        t0 = steps[-1]["done_ms"] if steps else _now_ms()
        action()
        if cause is None:
            wait(**until)
        else:
            wait(generation_at_least=gen + 1, **until)
        if quiet:
            server.settle(GROUP)
        steps.append({"step": name, "cause": cause, "generation_from": gen, "generation_to": generation(),
                      "begin_ms": t0, "done_ms": _now_ms()})

    try:
        server.call(lambda: _create(server))
        step("first member joins", "member_joined", lambda: start("a", session_ms=6000), quiet=True,
             state="Stable", members=1)
        step("static member joins", "member_joined", lambda: start("s", instance_id="static-1", session_ms=30000),
             quiet=True, state="Stable", members=2)

        def static_restart():
            old = server.app.coordinator.runtime.group(GROUP).static_members["static-1"]
            members.pop("s").kill()
            start("s", instance_id="static-1", session_ms=30000)
            deadline = time.monotonic() + 90
            while server.app.coordinator.runtime.group(GROUP).static_members.get("static-1") == old:
                if time.monotonic() > deadline:
                    raise AssertionError("static member did not rejoin")
                time.sleep(0.05)
        step("static member restarts", None, static_restart, state="Stable", members=2)
        # settled too: a rebalance a member starts by itself right after this join (seen under load)
        # must not swallow the next step's leave
        step("third member joins", "member_joined", lambda: start("b", session_ms=6000), quiet=True,
             state="Stable", members=3)
        # settled as well: kafka-python's leader rejoined by itself right after this rebalance once,
        # and the crash that followed killed it mid-rejoin (a generation that never synced)
        step("member leaves", "member_left", lambda: members.pop("b").stop(), quiet=True, state="Stable",
             members=2)
        step("member crashes", "failed_heartbeat", lambda: members.pop("a").kill(), state="Stable", members=1)
    finally:
        for m in members.values():
            m.kill()
        server.stop()
    return steps


async def _create(server):
    server.app.broker.topics.create(TOPIC, PARTITIONS)


if __name__ == "__main__":
    for s in run(sys.argv[1]):
        print(json.dumps(s))
