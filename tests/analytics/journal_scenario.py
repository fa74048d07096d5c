"""Drives a real kcoord with real kafka-python member processes through joins, a static
restart, a leave and a crash, then a share group member (raw requests) through fetches and
acknowledgements, and returns what happened when, so the journal it wrote can be checked
against it.

    python -m tests.analytics.journal_scenario JOURNAL_PATH   # writes a journal, prints the steps
"""
from __future__ import annotations

import json
import sys
import time

from kcoord.testing.plugin import _on_loop, start_server
from kcoord.conformance.members import Member

GROUP = "journal-scenario"
TOPIC = "journal-topic"
PARTITIONS = 6
CLIENT = "kafka-python"
SHARE_GROUP = "journal-share-scenario"
SHARE_TOPIC = "journal-share-topic"


def _now_ms() -> int:
    return int(time.time() * 1000)


def run(journal_path: str) -> tuple[list[dict], dict]:
    """(each group step: the rebalance it must cause (or none), with the wall-clock window it
    happened in; the share step: what happened to its records, `share_step`)."""
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
        share = share_step(server)
    finally:
        for m in members.values():
            m.kill()
        server.stop()
    return steps, share


def share_step(server) -> dict:
    """A share group member joins (ShareGroupHeartbeat), is delivered six records, releases two and
    accepts the rest, is delivered the two again and accepts them: what it did to them."""
    from tests.integration.test_share_fetch import ACCEPT, RELEASE, Member as ShareMember, acquired, open_session, \
        partitions_of, produce

    begin_ms = _now_ms()
    server.call(lambda: _on_loop(lambda: server.app.features.update({"share.version": 1})))
    pid = (server.call(lambda: _on_loop(lambda: server.app.broker.topics.create(SHARE_TOPIC, 1).topic_id)), 0)
    member = ShareMember(server.bootstrap, group=SHARE_GROUP)
    try:
        joined = member.conn.call(76, 1, {"group_id": SHARE_GROUP, "member_id": member.member_id, "member_epoch": 0,
                                          "rack_id": None, "subscribed_topic_names": [SHARE_TOPIC]})
        assert joined.error_code == 0, joined
        open_session(member, [pid])    # from the log end: the records produced next
        produce(server, SHARE_TOPIC, *(b"v%d" % i for i in range(6)))

        def deliver(expected):
            answer = member.fetch(max_wait_ms=5000)
            assert answer.error_code == 0 and acquired(answer, pid) == expected, answer

        def acknowledge(acks):
            answer = member.acknowledge({pid: acks})
            assert answer.error_code == 0 and partitions_of(answer)[pid].error_code == 0, answer

        deliver([(0, 5, 1)])
        acknowledge([(0, 1, [RELEASE]), (2, 5, [ACCEPT])])
        deliver([(0, 1, 2)])
        acknowledge([(0, 1, [ACCEPT])])
    finally:
        member.close()
    return {"step": "share member fetches", "group_id": SHARE_GROUP, "member_id": member.member_id,
            "begin_ms": begin_ms, "done_ms": _now_ms(), "deliveries": 8, "redeliveries": 2, "accepted": 6,
            "released": 2, "max_delivery_count": 2}


async def _create(server):
    server.app.broker.topics.create(TOPIC, PARTITIONS)


if __name__ == "__main__":
    group_steps, share = run(sys.argv[1])
    for s in [*group_steps, share]:
        print(json.dumps(s))
