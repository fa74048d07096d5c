"""Fault rules over real sockets: what fires when, what the response holds, how to script them."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.request

import pytest

from kcoord.conformance.rawclient import RawConnection, parse_bootstrap
from kcoord.faults import FaultRule, FaultRuleError
from kcoord.testing.plugin import KcoordHandle, start_server
from wire.errors import ErrorCode as E

JOIN, HEARTBEAT, FIND, FETCH = 11, 12, 10, 1


def _join_body(group, member_id="", session_ms=10000):
    return {"group_id": group, "session_timeout_ms": session_ms, "rebalance_timeout_ms": 10000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}


def _raw(server, coro_fn):
    host, port = parse_bootstrap(server.bootstrap)

    async def go():
        async with RawConnection(host, port) as conn:
            return await coro_fn(conn)
    return asyncio.run(go())


def test_error_rule_once_answers_with_kafka_error_body(kcoord_server):
    kcoord_server.fault(api="JoinGroup", group="g1", error="NOT_COORDINATOR", once=True)

    async def joins(conn):
        first = await conn.call(JOIN, 5, _join_body("g1", member_id="m-given"))
        second = await conn.call(JOIN, 5, _join_body("g1"))
        return first, second
    first, second = _raw(kcoord_server, joins)
    assert first.error_code == E.NOT_COORDINATOR and first.member_id == "m-given" and first.generation_id == -1
    assert second.error_code == E.MEMBER_ID_REQUIRED  # the rule fired once only
    assert [f["api"] for f in kcoord_server.faults_fired()] == [JOIN]
    # The made-up answer counts in the request metrics like any other.
    exposition = kcoord_server.app.metrics.exposition().decode()
    for error in (E.NOT_COORDINATOR, E.MEMBER_ID_REQUIRED):
        assert f'kcoord_requests_total{{api="JoinGroup",broker="0",error="{int(error)}",version="5"}} 1.0' in exposition


def test_every_nth_and_times_n(kcoord_server):
    kcoord_server.fault(api="FindCoordinator", error="COORDINATOR_LOAD_IN_PROGRESS", every=2, times=2)

    async def finds(conn):
        return [(await conn.call(FIND, 2, {"key": "g", "key_type": 0})).error_code for _ in range(6)]
    load = E.COORDINATOR_LOAD_IN_PROGRESS
    assert _raw(kcoord_server, finds) == [0, load, 0, load, 0, 0]


def test_rule_filters_on_group_and_client(kcoord_server):
    kcoord_server.fault(api="FindCoordinator", group="other", error="NOT_COORDINATOR", seconds=60)
    kcoord_server.fault(api="FindCoordinator", client="someone-else", error="NOT_COORDINATOR", seconds=60)

    async def finds(conn):
        return [(await conn.call(FIND, 2, {"key": k, "key_type": 0})).error_code for k in ("mine", "other")]
    assert _raw(kcoord_server, finds) == [0, E.NOT_COORDINATOR]


def test_delay_and_drop(kcoord_server):
    kcoord_server.fault(api="FindCoordinator", action="drop_before", once=True)
    kcoord_server.fault(api="FindCoordinator", action="delay", delay_ms=300, once=True)

    async def go(conn):
        with pytest.raises(ConnectionError):
            await conn.call(FIND, 2, {"key": "g", "key_type": 0})
        host, port = parse_bootstrap(kcoord_server.bootstrap)
        async with RawConnection(host, port) as again:
            start = time.monotonic()
            r = await again.call(FIND, 2, {"key": "g", "key_type": 0})
            return r.error_code, time.monotonic() - start
    code, took = _raw(kcoord_server, go)
    assert code == 0 and took >= 0.3
    assert [f["action"] for f in kcoord_server.faults_fired()] == ["drop_before", "delay"]


def test_unavailable_switch_until_removed(kcoord_server):
    rule = kcoord_server.fault(action="unavailable", group="g2", error="COORDINATOR_NOT_AVAILABLE")

    async def find_and_join(conn):
        f = await conn.call(FIND, 2, {"key": "g2", "key_type": 0})
        j = await conn.call(JOIN, 5, _join_body("g2"))
        return f.error_code, j.error_code
    assert _raw(kcoord_server, find_and_join) == (E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE)
    assert kcoord_server.remove_fault(rule)
    assert _raw(kcoord_server, find_and_join) == (0, E.MEMBER_ID_REQUIRED)


def test_rule_parsing():
    rule = FaultRule.parse("api=Heartbeat,error=REBALANCE_IN_PROGRESS,group=g,times=3")
    assert (rule.api, rule.error, rule.group, rule.times, rule.action) == (12, E.REBALANCE_IN_PROGRESS, "g", 3, "error")
    assert FaultRule.parse('{"api": 11, "action": "drop_after", "every": 5}').every == 5
    with pytest.raises(FaultRuleError):
        FaultRule.parse("api=Heartbeat,action=error")
    with pytest.raises(FaultRuleError):
        FaultRule.parse("api=NoSuchApi,error=NONE")


def test_manual_clock_expires_member_with_no_real_wait(kcoord_manual_clock_server):
    server = kcoord_manual_clock_server
    wall = time.monotonic()

    async def join(conn):
        first = await conn.call(JOIN, 5, _join_body("clocked", session_ms=45000))
        r = await conn.call(JOIN, 5, _join_body("clocked", member_id=first.member_id, session_ms=45000))
        await conn.call(14, 3, {"group_id": "clocked", "generation_id": r.generation_id,
                                "member_id": r.member_id, "assignments": []})
        return r.member_id
    member = _raw(server, join)
    server.wait_for("clocked", state="Stable", members=1)
    server.advance(44_000)
    assert server.app.coordinator.runtime.group("clocked").members, "expired before its session timeout"
    server.advance(1_001)
    server.wait_for("clocked", state="Empty", members=0)
    assert member not in server.app.coordinator.runtime.group("clocked").members
    assert time.monotonic() - wall < 45, "the session timeout was waited for in real time"


def test_expire_member_and_force_rebalance_from_handle(kcoord_server):
    async def join(conn):
        first = await conn.call(JOIN, 5, _join_body("h"))
        r = await conn.call(JOIN, 5, _join_body("h", member_id=first.member_id))
        await conn.call(14, 3, {"group_id": "h", "generation_id": r.generation_id, "member_id": r.member_id,
                                "assignments": []})
        assert kcoord_server.force_rebalance("h")
        hb = await conn.call(HEARTBEAT, 3, {"group_id": "h", "generation_id": r.generation_id,
                                            "member_id": r.member_id})
        assert kcoord_server.expire_member("h", r.member_id)
        return hb.error_code
    assert _raw(kcoord_server, join) == E.REBALANCE_IN_PROGRESS
    kcoord_server.wait_for("h", state="Empty", members=0)


def _http(url, method="GET", body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def test_http_fault_routes():
    thread = start_server(http_host="127.0.0.1", http_port=0)
    try:
        server = KcoordHandle(thread)
        base = f"http://127.0.0.1:{thread.app.http.port}"
        status, out = _http(base + "/faults", "POST", {"api": "FindCoordinator", "error": "NOT_COORDINATOR",
                                                       "times": 1})
        assert status == 201
        rule_id = out["rules"][0]["id"]
        assert _http(base + "/faults")[1]["rules"][0]["id"] == rule_id

        async def find(conn):
            return (await conn.call(FIND, 2, {"key": "g", "key_type": 0})).error_code
        assert _raw(server, find) == E.NOT_COORDINATOR
        assert _http(base + "/faults")[1]["fired"][0]["rule"] == rule_id
        assert _http(base + "/faults", "POST", {"api": "Heartbeat", "action": "bogus"})[0] == 400
        _http(base + "/faults", "POST", {"api": "Heartbeat", "error": "UNKNOWN_MEMBER_ID", "seconds": 60})
        assert _http(base + "/faults", "DELETE")[0] == 200 and _http(base + "/faults")[1]["rules"] == []
        assert _http(base + "/groups/none/rebalance", "POST")[0] == 404
        assert _http(base + "/groups/none/members/x/expire", "POST")[0] == 404
    finally:
        thread.stop()


def test_serve_takes_fault_flags_and_file(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"api": "FindCoordinator", "error": "NOT_COORDINATOR", "times": 1}]))
    from kcoord.cli import build_parser, config_from_args

    args = build_parser().parse_args(["serve", "--faults", str(rules), "--fault",
                                      "api=Heartbeat,error=REBALANCE_IN_PROGRESS,every=3"])
    cfg = config_from_args(args)
    cfg.listen_port, cfg.initial_rebalance_delay_ms = 0, 0
    from kcoord.testing.server_thread import ServerThread

    thread = ServerThread(cfg).start()
    try:
        assert [r["error"] for r in thread.app.faults.list()] == ["NOT_COORDINATOR", "REBALANCE_IN_PROGRESS"]
    finally:
        thread.stop()


# Rules no request could make fire, each with the one line kcoord refuses it with.
NEVER_FIRE = [
    ({"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"},
     "Produce has no answer that fails a whole request (its errors are per topic or partition), so error "
     "NOT_LEADER_OR_FOLLOWER cannot be answered: use drop_before, drop_after or delay"),
    ({"api": "Fetch", "version": 5, "error": "NOT_COORDINATOR"},
     "Fetch v5 has no answer that fails a whole request"),
    ({"api": "CreateTopics", "action": "unavailable"}, "CreateTopics has no answer that fails a whole request"),
    ({"api": "JoinGroup", "version": 12, "action": "drop_before"}, "JoinGroup v12 is not served (v0-v9)"),
    ({"api": 99, "action": "drop_before"}, "api 99 is not served"),
    ({"api": "Metadata", "group": "g", "action": "delay", "delay_ms": 5},
     "Metadata names no group, so group=g never matches"),
    ({"api": "LeaveGroup", "version": 3, "member": "m", "action": "drop_after"},
     "LeaveGroup v3 carries no member_id, so member=m never matches"),
    ({"api": "DescribeGroups", "action": "expire_member"},
     "DescribeGroups names no group with a member_id, so expire_member has no member to expire"),
    ({"api": "Produce", "action": "rebalance"}, "Produce names no group, so rebalance has none to rebalance"),
    ({"api": "Heartbeat", "action": "drop_before", "every": 0}, "every=0 would never fire"),
    ({"api": "Heartbeat", "action": "drop_before", "times": 0}, "times=0 would never fire"),
    ({"action": "unavailable", "group": "g", "once": True},
     "unavailable with no api is the coordinator switch for group= (or every group) while the rule lives; "
     "it cannot take times (or once)"),
]


@pytest.mark.parametrize("spec,why", NEVER_FIRE, ids=[json.dumps(s) for s, _ in NEVER_FIRE])
def test_a_rule_that_could_never_fire_is_refused_with_why(kcoord_server, spec, why):
    with pytest.raises(FaultRuleError) as refused:
        kcoord_server.fault(**spec)
    assert why in str(refused.value) and "\n" not in str(refused.value)
    assert kcoord_server.app.faults.list() == []


def test_an_error_rule_fires_only_on_versions_that_can_carry_it(kcoord_server):
    # Fetch has an error for the whole request from v7 on: a v4 fetch is served as usual and
    # does not count, and the rule waits for a request it can answer.
    kcoord_server.fault(api="Fetch", error="UNKNOWN_SERVER_ERROR", once=True)

    async def fetches(conn):
        old = await conn.call(FETCH, 4, {"replica_id": -1, "max_wait_ms": 0, "topics": []})
        new = await conn.call(FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "topics": []})
        again = await conn.call(FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "topics": []})
        return old, new, again
    old, new, again = _raw(kcoord_server, fetches)
    assert old.responses == [] and new.error_code == E.UNKNOWN_SERVER_ERROR and again.error_code == 0
    assert [(f["api"], f["version"]) for f in kcoord_server.faults_fired()] == [(FETCH, 12)]


def test_http_refuses_a_rule_that_could_never_fire_with_why():
    thread = start_server(http_host="127.0.0.1", http_port=0)
    try:
        base = f"http://127.0.0.1:{thread.app.http.port}"
        status, out = _http(base + "/faults", "POST", {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"})
        assert status == 400 and out["error"].startswith("Produce has no answer that fails a whole request")
        # One bad rule in a list adds none of them.
        status, out = _http(base + "/faults", "POST", [{"api": "Heartbeat", "action": "drop_before"},
                                                        {"api": "Metadata", "group": "g", "action": "drop_before"}])
        assert status == 400 and out["error"] == "Metadata names no group, so group=g never matches"
        assert _http(base + "/faults")[1]["rules"] == []
    finally:
        thread.stop()


def test_serve_refuses_a_fault_rule_that_could_never_fire_in_one_line():
    done = subprocess.run([sys.executable, "-m", "kcoord", "serve", "--listen", "127.0.0.1:0",
                           "--fault", "api=Produce,error=NOT_LEADER_OR_FOLLOWER"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "kcoord: cannot start: fault rule 'api=Produce,error=NOT_LEADER_OR_FOLLOWER': Produce has no answer that "
        "fails a whole request (its errors are per topic or partition), so error NOT_LEADER_OR_FOLLOWER cannot "
        "be answered: use drop_before, drop_after or delay"]
