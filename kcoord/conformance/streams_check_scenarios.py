"""Raw-protocol checks of streams groups (KIP-1071): StreamsGroupHeartbeat and
StreamsGroupDescribe v0, byte for byte through `wire/`.

They join `kcoord check`'s raw rows under names starting "streams-": a member joins with a
topology and is given its tasks, a second member takes tasks the first revokes, a member leaves,
a group is described, a topology whose source topic is missing is reported. Every expectation is
what Apache Kafka 4.3.1 answers (tests/conformance/test_check_kcoord.py runs them against it). A
broker that does not advertise the two APIs gets the rows as skipped.

A member here is what a Kafka Streams client's heartbeat thread is, and no more: it tells the
broker the tasks it owns, drops what it is told to drop at once, and heartbeats every POLL_S
(sooner than the broker's interval: Kafka takes heartbeats early, and a broker's initial
rebalance delay, 3 s by default, then costs no more than itself).
"""
from __future__ import annotations

import asyncio
import uuid

from kcoord.conformance.raw_scenarios import Broker, Outcome, Unsupported, _create_topic, _gid, _name
from kcoord.conformance.rawclient import RawConnection

STREAMS_HEARTBEAT, STREAMS_DESCRIBE = 88, 89
# StreamsGroupHeartbeatResponse.Status codes (Kafka's names).
MISSING_SOURCE_TOPICS, ASSIGNMENT_DELAYED = 1, 5
REBALANCE_TIMEOUT_MS = 30000
POLL_S = 0.3
SETTLE_S = 60.0   # how long a step may take on a broker with its default initial rebalance delay


def topology(source: str, changelog: str | None = None) -> dict:
    """One subtopology "0" reading `source`, with a store whose changelog is `changelog` (its
    partition count left to the broker, as Kafka Streams does)."""
    changelogs = [] if changelog is None else [{"name": changelog, "partitions": 0, "replication_factor": 1,
                                                 "topic_configs": []}]
    return {"epoch": 1, "subtopologies": [{
        "subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
        "state_changelog_topics": changelogs, "repartition_sink_topics": [], "repartition_source_topics": [],
        "copartition_groups": []}]}


def tasks_of(task_ids) -> dict[str, list[int]]:
    """StreamsGroupHeartbeat's or StreamsGroupDescribe's task ids as subtopology -> partitions."""
    return {t.subtopology_id: sorted(t.partitions) for t in task_ids or [] if t.partitions}


def _task_ids(tasks: dict[str, list[int]]) -> list[dict]:
    return [{"subtopology_id": s, "partitions": ps} for s, ps in sorted(tasks.items())]


def _check_served(b: Broker) -> None:
    for api in (STREAMS_HEARTBEAT, STREAMS_DESCRIBE):
        low, high = b.versions.get(api, (0, -1))
        if not low <= 0 <= high:
            raise Unsupported(f"api {api} v0 not advertised (broker: {low}-{high})")


class StreamsMember:
    """One streams group member over its own connection to the group's coordinator."""

    def __init__(self, b: Broker, group: str, topology: dict, *, process: str | None = None,
                 endpoint: tuple[str, int] | None = None, client_id: str = "kcoord-check"):
        self.b, self.group, self.topology = b, group, topology
        self.member_id = str(uuid.uuid4())
        self.process_id = process or str(uuid.uuid4())
        self.endpoint, self.client_id = endpoint, client_id
        self.epoch = 0
        self.active: dict[str, list[int]] = {}
        self.status: list[tuple[int, str]] = []
        self.conn: RawConnection | None = None

    async def open(self) -> "StreamsMember":
        self.conn = await self.b.connect(self.group)
        self.conn.client_id = self.client_id
        return self

    async def heartbeat(self):
        """One heartbeat: a join (epoch 0) carries the topology and the member's identity; later
        ones the tasks it owns. The answer's tasks, when it has any, are now the member's."""
        joining = self.epoch == 0
        body = {"group_id": self.group, "member_id": self.member_id, "member_epoch": self.epoch,
                "endpoint_information_epoch": 0, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS if joining else -1,
                "topology": self.topology if joining else None,
                "active_tasks": _task_ids(self.active), "standby_tasks": [], "warmup_tasks": [],
                "process_id": self.process_id if joining else None,
                "user_endpoint": (None if self.endpoint is None or not joining
                                  else {"host": self.endpoint[0], "port": self.endpoint[1]}),
                "client_tags": [] if joining else None, "task_offsets": None, "task_end_offsets": None,
                "shutdown_application": False}
        r = await self.conn.call(STREAMS_HEARTBEAT, 0, body)
        if r.error_code:
            raise AssertionError(f"StreamsGroupHeartbeat({self.group}, epoch {self.epoch}) -> "
                                 f"{_name(r.error_code)}: {r.error_message}")
        self.epoch = r.member_epoch
        if r.active_tasks is not None:
            self.active = tasks_of(r.active_tasks)
        self.status = [(s.status_code, s.status_detail) for s in r.status or []]
        return r

    async def leave(self):
        r = await self.conn.call(STREAMS_HEARTBEAT, 0, {
            "group_id": self.group, "member_id": self.member_id, "member_epoch": -1, "endpoint_information_epoch": 0,
            "active_tasks": None, "standby_tasks": None, "warmup_tasks": None})
        self.epoch = -1
        return r

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()


async def describe(b: Broker, group: str):
    """StreamsGroupDescribe's DescribedGroup for `group`."""
    conn = await b.connect(group)
    try:
        return (await conn.call(STREAMS_DESCRIBE, 0, {"group_ids": [group],
                                                      "include_authorized_operations": False})).groups[0]
    finally:
        await conn.close()


async def settle(members: list[StreamsMember], done) -> None:
    """Heartbeats every member in turn until done(members) holds."""
    deadline = asyncio.get_running_loop().time() + SETTLE_S
    while True:
        for m in members:
            await m.heartbeat()
        if done(members):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("no settled assignment within "
                                 f"{SETTLE_S:.0f}s: {[(m.epoch, m.active, m.status) for m in members]}")
        await asyncio.sleep(POLL_S)


def _all_tasks_once(members: list[StreamsMember], partitions: int) -> bool:
    held = sorted(p for m in members for p in m.active.get("0", []))
    return held == list(range(partitions)) and len({m.epoch for m in members}) == 1


async def _setup(b: Broker, name: str, partitions: int = 2) -> tuple[str, str]:
    _check_served(b)
    group = _gid(name)
    source = f"{group}-in"
    await _create_topic(b, source, partitions)
    return group, source


def _held(members: list[StreamsMember]) -> str:
    return ", ".join(f"{m.client_id} {m.active.get('0', [])}" for m in members)


async def _close(*members: StreamsMember) -> None:
    for m in members:
        await m.close()


async def join_assigns_tasks(b: Broker) -> Outcome:
    group, source = await _setup(b, "streams-join")
    m = await StreamsMember(b, group, topology(source)).open()
    try:
        first = await m.heartbeat()
        await settle([m], lambda ms: _all_tasks_once(ms, 2) and not ms[0].status)
        observed = (f"join -> member epoch {first.member_epoch}; settled at epoch {m.epoch} with active "
                    f"{m.active}, no status")
        # The first answer's epoch is 0 while the broker's initial rebalance delay holds the
        # assignment back (ASSIGNMENT_DELAYED), 1 without one.
        return Outcome(first.error_code == 0 and m.epoch >= 1 and m.active == {"0": [0, 1]}, observed,
                       "join -> an epoch; settled at an epoch >= 1 with active {'0': [0, 1]}, no status")
    finally:
        await _close(m)


async def second_member_revocation(b: Broker) -> Outcome:
    group, source = await _setup(b, "streams-revoke", partitions=4)
    a = await StreamsMember(b, group, topology(source), client_id="a").open()
    second = await StreamsMember(b, group, topology(source), client_id="b").open()
    try:
        await settle([a], lambda ms: _all_tasks_once(ms, 4))
        before = a.epoch
        await second.heartbeat()
        # a is told to keep half its tasks, at its old epoch, until it says it dropped the rest.
        deadline = asyncio.get_running_loop().time() + SETTLE_S
        while True:
            r = await a.heartbeat()
            if r.active_tasks is not None or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(POLL_S)
        told, told_epoch = dict(a.active), r.member_epoch
        await settle([a, second], lambda ms: _all_tasks_once(ms, 4))
        observed = (f"a at epoch {before} with 4 tasks; b joins; a told {told} at epoch {told_epoch}; "
                    f"then {_held([a, second])} at epoch {a.epoch}")
        ok = (told_epoch == before and len(told.get("0", [])) == 2 and a.epoch > before
              and len(a.active["0"]) == len(second.active["0"]) == 2)
        return Outcome(ok, observed, "a told to keep 2 tasks at its old epoch; then 2 tasks each at a newer epoch")
    finally:
        await _close(a, second)


async def member_leaves(b: Broker) -> Outcome:
    group, source = await _setup(b, "streams-leave")
    a = await StreamsMember(b, group, topology(source), client_id="a").open()
    second = await StreamsMember(b, group, topology(source), client_id="b").open()
    try:
        await settle([a, second], lambda ms: _all_tasks_once(ms, 2) and all(m.active for m in ms))
        left = await second.leave()
        await settle([a], lambda ms: _all_tasks_once(ms, 2))
        d = await describe(b, group)
        observed = (f"leave -> {_name(left.error_code)}, member epoch {left.member_epoch}; then a holds "
                    f"{a.active}; described: {d.group_state}, members {[m.client_id for m in d.members]}")
        ok = (left.error_code == 0 and left.member_epoch == -1 and a.active == {"0": [0, 1]}
              and d.group_state == "Stable" and [m.member_id for m in d.members] == [a.member_id])
        return Outcome(ok, observed, "leave -> NONE, member epoch -1; a holds {'0': [0, 1]}; Stable with a alone")
    finally:
        await _close(a, second)


async def describe_group(b: Broker) -> Outcome:
    group, source = await _setup(b, "streams-describe")
    changelog = f"{group}-store-changelog"
    m = await StreamsMember(b, group, topology(source, changelog), endpoint=("localhost", 8080),
                            client_id="describer").open()
    try:
        await settle([m], lambda ms: _all_tasks_once(ms, 2) and not ms[0].status)
        d = await describe(b, group)
        unknown = await describe(b, f"{group}-unknown")
        member = d.members[0] if len(d.members) == 1 else None
        sub = d.topology.subtopologies[0] if d.topology and len(d.topology.subtopologies) == 1 else None
        seen = {
            "state": d.group_state, "epochs": (d.group_epoch, d.assignment_epoch) == (m.epoch, m.epoch),
            "member": None if member is None else (
                member.member_id == m.member_id, member.process_id == m.process_id, member.client_id,
                member.member_epoch, (member.user_endpoint.host, member.user_endpoint.port),
                tasks_of(member.assignment.active_tasks), tasks_of(member.target_assignment.active_tasks)),
            "topology": None if sub is None else (
                d.topology.epoch, sub.subtopology_id, list(sub.source_topics),
                [(t.name, t.partitions) for t in sub.state_changelog_topics]),
            "unknown group": _name(unknown.error_code)}
        want = {"state": "Stable", "epochs": True,
                "member": (True, True, "describer", m.epoch, ("localhost", 8080), {"0": [0, 1]}, {"0": [0, 1]}),
                "topology": (1, "0", [source], [(changelog, 2)]), "unknown group": "GROUP_ID_NOT_FOUND"}
        return Outcome(seen == want, str(seen), str(want))
    finally:
        await _close(m)


async def missing_source_topic(b: Broker) -> Outcome:
    _check_served(b)
    group = _gid("streams-missing")
    m = await StreamsMember(b, group, topology(f"{group}-nowhere")).open()
    try:
        r = await m.heartbeat()
        d = await describe(b, group)
        codes = [code for code, _ in m.status]
        observed = (f"heartbeat -> {_name(r.error_code)}, status {codes}, active {m.active}; "
                    f"described: {d.group_state}")
        ok = r.error_code == 0 and MISSING_SOURCE_TOPICS in codes and not m.active and d.group_state == "NotReady"
        return Outcome(ok, observed, f"heartbeat -> NONE, status [{MISSING_SOURCE_TOPICS}] "
                                     "(MISSING_SOURCE_TOPICS), no tasks; described: NotReady")
    finally:
        await _close(m)


SCENARIOS = {
    "streams-join-assigns-tasks": join_assigns_tasks,
    "streams-second-member-revocation": second_member_revocation,
    "streams-member-leaves": member_leaves,
    "streams-describe": describe_group,
    "streams-missing-source-topic": missing_source_topic,
}
