"""Raw-protocol scenarios of streams groups (KIP-1071): StreamsGroupHeartbeat and
StreamsGroupDescribe, with the group APIs around them (OffsetCommit/OffsetFetch by members,
ListGroups, DescribeGroups, ConsumerGroupDescribe, DeleteGroups), byte for byte through `wire/`.

They join `raw_scenarios.SCENARIOS` under names starting "streams-"; a broker that does not
advertise StreamsGroupHeartbeat gets them as skipped. Every expectation is what Apache Kafka
4.3.1 answers (tests/conformance/test_differential.py runs them on both brokers). What an
Outcome shows is normalised as the transcripts are: names with kcoord check's random suffix
become `<NAME>`, member ids are the scenario's own (m1, m2, ...), no timestamps or hosts.

Member ids are made by the member, as Kafka Streams makes them; they have kcoord check's name
form so that the transcripts of the APIs around (OffsetCommit's member id) normalise alike.
The scenarios hold whatever group.streams.initial.rebalance.delay.ms the broker has: each
heartbeats until its assignment is there and reports the states it ends in, except
streams-initial-delay, which reads the broker's delay (DescribeConfigs) and checks it.
"""
from __future__ import annotations

import asyncio
import re
import time
import uuid

from kcoord.conformance.consumer_protocol_scenarios import ready_topic
from kcoord.conformance.raw_scenarios import FIND, Broker, Outcome, _gid, _name
from kcoord.conformance.rawclient import SETUP_CLIENT_ID, RawConnection
from wire.errors import ErrorCode as E

SG_HEARTBEAT, SG_DESCRIBE = 88, 89
METADATA, COMMIT, FETCH, LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS, CG_DESCRIBE, DESCRIBE_CONFIGS = \
    3, 8, 9, 16, 15, 42, 69, 32
READY_TIMEOUT = 30.0
# Kafka's default group.streams.assignment.interval.ms: a target assignment is computed at most
# this often, so a second member's join past it sees its new target at once.
ASSIGNMENT_INTERVAL_S = 1.0
STATUS = {0: "STALE_TOPOLOGY", 1: "MISSING_SOURCE_TOPICS", 2: "INCORRECTLY_PARTITIONED_TOPICS",
          3: "MISSING_INTERNAL_TOPICS", 4: "SHUTDOWN_APPLICATION", 5: "ASSIGNMENT_DELAYED"}
_CHECK_NAME = re.compile(r"kcoord-check-([A-Za-z0-9]+)-[0-9a-f]{8}")


def norm(text) -> str:
    """`text` with kcoord check's random names as <NAME>."""
    return _CHECK_NAME.sub(lambda m: f"<{m.group(1)}>", str(text))


def subtopology(sub_id: str, sources: list[str], changelogs: list[tuple[str, int]] = (),
                regex: list[str] = ()) -> dict:
    return {"subtopology_id": sub_id, "source_topics": sources, "source_topic_regex": list(regex),
            "state_changelog_topics": [{"name": n, "partitions": p, "replication_factor": 0, "topic_configs": []}
                                       for n, p in changelogs],
            "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}


def topology(*subs: dict, epoch: int = 1) -> dict:
    return {"epoch": epoch, "subtopologies": list(subs)}


def tasks(ids) -> dict[str, list[int]]:
    """Task ids of an answer or a request as {subtopology: partitions}."""
    return {t["subtopology_id"] if isinstance(t, dict) else t.subtopology_id:
            sorted(t["partitions"] if isinstance(t, dict) else t.partitions) for t in ids or []}


class SgMember:
    """One streams group member (a Kafka Streams consumer): its connection to the coordinator,
    its own member id, epoch and the tasks it owns."""

    def __init__(self, broker: Broker, group: str, topo: dict | None, *, endpoint: tuple[str, int] | None = None):
        self.broker, self.group, self.topology, self.endpoint = broker, group, topo, endpoint
        self.member_id = _gid("member")
        self.process_id = str(uuid.uuid4())
        self.epoch, self.endpoint_epoch = 0, 0
        self.active: dict[str, list[int]] = {}
        self.conn: RawConnection | None = None

    async def open(self) -> "SgMember":
        self.conn = await self.broker.connect(self.group)
        return self

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    def body(self, epoch: int, **fields) -> dict:
        joining = epoch == 0
        owned = [] if joining else [{"subtopology_id": s, "partitions": p} for s, p in sorted(self.active.items())]
        body = {"group_id": self.group, "member_id": self.member_id, "member_epoch": epoch,
                "endpoint_information_epoch": self.endpoint_epoch, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 30000 if joining else -1, "topology": self.topology if joining else None,
                "active_tasks": owned, "standby_tasks": [], "warmup_tasks": [],
                "process_id": self.process_id if joining else None,
                "user_endpoint": ({"host": self.endpoint[0], "port": self.endpoint[1]}
                                  if self.endpoint and joining else None),
                "client_tags": [] if joining else None, "task_offsets": None, "task_end_offsets": None,
                "shutdown_application": False}
        body.update(fields)
        return body

    async def call(self, body: dict):
        for _ in range(100):
            r = await self.conn.call(SG_HEARTBEAT, 0, body)
            if r.error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE):
                return r
            await asyncio.sleep(0.2)
        return r

    async def hb(self, epoch: int | None = None, **fields):
        """One heartbeat at the member's epoch (or `epoch`), reporting what it owns; a successful
        answer's epoch, tasks and endpoint epoch become the member's."""
        mine = epoch is None or epoch == 0
        r = await self.call(self.body(self.epoch if epoch is None else epoch, **fields))
        if r.error_code == 0 and mine and "member_id" not in fields:
            self.epoch = r.member_epoch
            if r.active_tasks is not None:
                self.active = tasks(r.active_tasks)
            self.endpoint_epoch = r.endpoint_information_epoch
        return r

    async def join(self, **fields):
        return await self.hb(0, **fields)

    def count(self) -> int:
        return sum(map(len, self.active.values()))

    async def until(self, done, what: str, timeout: float = READY_TIMEOUT):
        """Heartbeat every 0.2 s until done(answer); the last answer."""
        deadline = time.monotonic() + timeout
        while True:
            r = await self.hb()
            if done(r):
                return r
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not within {timeout:.0f}s: last answer {answer(r)}")
            await asyncio.sleep(0.2)

    async def until_tasks(self, count: int):
        return await self.until(lambda r: r.error_code == 0 and self.count() == count and not _statuses(r),
                                f"{count} tasks and no status")


INITIAL_DELAY = "Assignment delayed due to the configured initial rebalance delay."


def _shown(r, initial_delay: bool) -> list:
    # A new group's first answers say ASSIGNMENT_DELAYED as long as its initial rebalance delay
    # runs, which the broker's config decides: only streams-initial-delay shows it.
    return [s for s in r.status or [] if initial_delay or s.status_detail != INITIAL_DELAY]


def _statuses(r) -> list[str]:
    return [STATUS.get(s.status_code, str(s.status_code)) for s in r.status or []]


def statuses(r, initial_delay: bool = False) -> str:
    return "[" + "; ".join(f"{STATUS.get(s.status_code, s.status_code)}: {norm(s.status_detail)}"
                           for s in _shown(r, initial_delay)) + "]"


def answer(r, *, initial_delay: bool = False, epoch: bool = True) -> str:
    """A heartbeat answer in one line: error (and message), epoch, statuses, active tasks.
    Without `epoch`, the epoch is left out: a new group's first member is at epoch 1 while the
    initial rebalance delay holds its assignment back, else at 2."""
    if r.error_code:
        return f"{_name(r.error_code)} ({norm(r.error_message)})"
    active = "-" if r.active_tasks is None else tasks(r.active_tasks)
    return (f"epoch {r.member_epoch} " if epoch else "") + f"status {statuses(r, initial_delay)} active {active}"


def _supported(b: Broker) -> Outcome | None:
    low, high = b.versions.get(SG_HEARTBEAT, (0, -1))
    if high < 0 or high < low:
        return Outcome(True, "StreamsGroupHeartbeat not advertised", "StreamsGroupHeartbeat v0", skipped=True)
    return None


def _outcome(seen: dict, want: dict) -> Outcome:
    return Outcome(seen == want, "; ".join(f"{k} -> {v}" for k, v in seen.items()),
                   "; ".join(f"{k} -> {v}" for k, v in want.items()))


async def _close(*members: SgMember) -> None:
    for m in members:
        await m.close()


async def _describe(m: SgMember, group: str | None = None):
    r = await m.conn.call(SG_DESCRIBE, 0, {"group_ids": [group or m.group], "include_authorized_operations": False})
    return r.groups[0]


async def _topic_partitions(b: Broker, topic: str) -> str:
    """How many partitions Metadata gives `topic`, or its error."""
    async with RawConnection(b.host, b.port, SETUP_CLIENT_ID) as c:
        for _ in range(50):
            r = await c.call(METADATA, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                           "include_cluster_authorized_operations": False,
                                           "include_topic_authorized_operations": False})
            t = r.topics[0]
            if t.error_code == 0 and t.partitions:
                return f"{len(t.partitions)} partitions"
            await asyncio.sleep(0.2)
        return _name(t.error_code)


async def _two_members(b: Broker, prefix: str, partitions: int, endpoints=(None, None)):
    """A new group reading a new topic of `partitions`, and two members of it, opened, not joined."""
    source = await ready_topic(b, partitions)
    group = _gid(prefix)
    topo = topology(subtopology("0", [source]))
    a = await SgMember(b, group, topo, endpoint=endpoints[0]).open()
    c = await SgMember(b, group, topo, endpoint=endpoints[1]).open()
    return group, a, c


# ----------------------------------------------------------------- scenarios
async def missing_source_topic(b: Broker) -> Outcome:
    """A topology reading a topic that does not exist: the member joins with no tasks and a
    MISSING_SOURCE_TOPICS status naming it; once the topic is there, the group is ready."""
    if skipped := _supported(b):
        return skipped
    source = _gid("source")
    m = await SgMember(b, _gid("sgmissing"), topology(subtopology("0", [source]))).open()
    try:
        first = await m.join()
        again = await m.hb()
        await ready_topic(b, 2, source)
        ready = await m.until_tasks(2)
        seen = {"join": answer(first, epoch=False), "next": answer(again, epoch=False),
                "once created": f"epoch {m.epoch} status {statuses(ready)} active {m.active}"}
        want = {"join": "status [MISSING_SOURCE_TOPICS: Source topics <source> are missing.] active {}",
                "next": "status [MISSING_SOURCE_TOPICS: Source topics <source> are missing.] active -",
                "once created": "epoch 3 status [] active {'0': [0, 1]}"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def internal_topic_created(b: Broker) -> Outcome:
    """A changelog topic (partition count left to the broker): the first heartbeat says
    MISSING_INTERNAL_TOPICS and the broker creates it with the source's partition count; then
    the member gets its tasks."""
    if skipped := _supported(b):
        return skipped
    source = await ready_topic(b, 3)
    app = _gid("app")
    changelog = f"{app}-store-changelog"
    m = await SgMember(b, app, topology(subtopology("0", [source], [(changelog, 0)]))).open()
    try:
        first = await m.join()
        created = await _topic_partitions(b, changelog)
        await m.until_tasks(3)
        seen = {"join": answer(first, epoch=False), "changelog": created, "then": f"epoch {m.epoch} active {m.active}"}
        want = {"join": "status [MISSING_INTERNAL_TOPICS: Internal topics are missing: "
                        "<app>-store-changelog] active {}",
                "changelog": "3 partitions", "then": "epoch 3 active {'0': [0, 1, 2]}"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def revoke_before_assign(b: Broker) -> Outcome:
    """A owns 4 tasks; B joins. A is told to give up two while it stays at its epoch; as long as
    A still reports them, B does not get them; once A stops reporting them, B does."""
    if skipped := _supported(b):
        return skipped
    _, a, c = await _two_members(b, "sgrevoke", 4)
    try:
        await a.join()
        await a.until_tasks(4)
        a_epoch = a.epoch
        await asyncio.sleep(ASSIGNMENT_INTERVAL_S + 0.5)
        joined = await c.join()
        # A heartbeats with its four tasks until told to revoke: its epoch stays.
        owned = dict(a.active)
        told = await a.until(lambda r: r.active_tasks is not None, "a told to revoke")
        revoking = f"a epoch {told.member_epoch} told {tasks(told.active_tasks)}"
        a.active = owned  # A keeps reporting all four, as a member that has not yet revoked does
        still = await a.hb()
        b_meanwhile = await c.hb()
        view = await _describe(c)
        owned_view = sorted(sum(len(t.partitions) for t in mem.assignment.active_tasks) for mem in view.members)
        a.active = tasks(told.active_tasks)  # now A has revoked them
        released = await a.hb()
        got = await c.until(lambda r: c.count() == 2, "b given its tasks")
        final = await a.until(lambda r: a.epoch == c.epoch, "a at b's epoch")
        view = await _describe(c)
        seen = {"a alone": f"epoch {a_epoch}", "b joins": answer(joined), "a": revoking,
                "a still reporting four": answer(still), "b meanwhile": answer(b_meanwhile),
                "described meanwhile": owned_view, "a revoked": answer(released),
                "b then": f"epoch {got.member_epoch} active {c.count()}",
                "a then": f"epoch {final.member_epoch} active {a.count()}",
                "group": f"{view.group_state} epoch {view.group_epoch} assignment epoch {view.assignment_epoch}"}
        want = {"a alone": "epoch 2", "b joins": "epoch 3 status [] active {}",
                "a": "a epoch 2 told {'0': [0, 1]}",
                "a still reporting four": "epoch 2 status [] active -",
                "b meanwhile": "epoch 3 status [] active -", "described meanwhile": [0, 2],
                "a revoked": "epoch 3 status [] active -", "b then": "epoch 3 active 2",
                "a then": "epoch 3 active 2", "group": "Stable epoch 3 assignment epoch 3"}
        return _outcome(seen, want)
    finally:
        await _close(a, c)


# A task the member was never given: with it, an epoch behind is fenced even if it is the member's
# previous one (Kafka takes the previous epoch with a subset of the tasks as a lost answer; which
# epoch was the previous depends on the initial rebalance delay).
NOT_ITS_OWN = [{"subtopology_id": "9", "partitions": [0]}]


async def fenced_and_unknown(b: Broker) -> Outcome:
    """Epochs ahead of or behind the member's are fenced; a stranger is unknown; a group that
    does not exist is unknown; a heartbeat with a topology when not joining is invalid."""
    if skipped := _supported(b):
        return skipped
    source = await ready_topic(b, 1)
    topo = topology(subtopology("0", [source]))
    m = await SgMember(b, _gid("sgfenced"), topo).open()
    try:
        await m.join()
        await m.until_tasks(1)
        e = m.epoch
        seen = {"ahead": answer(await m.hb(e + 3)), "behind": answer(await m.hb(e - 1, active_tasks=NOT_ITS_OWN)),
                "stranger": answer(await m.hb(member_id=_gid("stranger"))),
                "unknown group": answer(await m.call(m.body(e, group_id=_gid("nogroup")))),
                "topology when not joining": answer(await m.hb(topology=topo)),
                "epoch -3": answer(await m.hb(-3)),
                "own epoch after": answer(await m.hb())}
        want = {"ahead": "FENCED_MEMBER_EPOCH (The streams group member has a greater member epoch (5) than the "
                         "one known by the group coordinator (2). The member must abandon all its partitions and "
                         "rejoin.)",
                "behind": "FENCED_MEMBER_EPOCH (The streams group member has a smaller member epoch (1) than the "
                          "one known by the group coordinator (2). The member must abandon all its partitions and "
                          "rejoin.)",
                "stranger": "UNKNOWN_MEMBER_ID (Member <stranger> is not a member of group <sgfenced>.)",
                "unknown group": "GROUP_ID_NOT_FOUND (Streams group <nogroup> not found.)",
                "topology when not joining": "INVALID_REQUEST (Topology can only be provided when (re-)joining.)",
                "epoch -3": "INVALID_REQUEST (MemberEpoch is -3, but must be greater than or equal to -2.)",
                "own epoch after": "epoch 2 status [] active -"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def invalid_joins(b: Broker) -> Outcome:
    """What a join is refused for, each on a group of its own: no topology, static membership,
    warm-up tasks, task offsets, a source topic regex, a changelog with a partition count,
    Kafka's internal topics, invalid topic names, tasks reported on joining, no rebalance timeout."""
    if skipped := _supported(b):
        return skipped
    source = await ready_topic(b, 1)
    plain = topology(subtopology("0", [source]))
    cases = {
        "no topology": ({"topology": None}, plain),
        "instance id": ({"instance_id": "inst-1"}, plain),
        "warm-up tasks": ({"warmup_tasks": [{"subtopology_id": "0", "partitions": [0]}]}, plain),
        "task offsets": ({"task_offsets": [{"subtopology_id": "0", "partition": 0, "offset": 5}]}, plain),
        "active tasks": ({"active_tasks": [{"subtopology_id": "0", "partitions": [0]}]}, plain),
        "no rebalance timeout": ({"rebalance_timeout_ms": -1}, plain),
        "empty member id": ({"member_id": ""}, plain),
        "source regex": ({}, topology(subtopology("0", [], regex=["kcoord-check-.*"]))),
        "changelog with partitions": ({}, topology(subtopology("0", [source], [(_gid("cl") + "-changelog", 4)]))),
        "__consumer_offsets source": ({}, topology(subtopology("0", ["__consumer_offsets"]))),
        "__transaction_state changelog": ({}, topology(subtopology("0", [source], [("__transaction_state", 0)]))),
        "invalid topic name": ({}, topology(subtopology("0", ["bad topic!"]))),
        "no subtopologies": ({}, topology()),
    }
    seen = {}
    for name, (fields, topo) in cases.items():
        m = await SgMember(b, _gid("sginvalid"), topo).open()
        try:
            seen[name] = answer(await m.join(**fields), epoch=False)
        finally:
            await m.close()
    want = {
        "no topology": "INVALID_REQUEST (Topology must be non-null when (re-)joining.)",
        "instance id": "INVALID_REQUEST (Static membership is not yet supported.)",
        "warm-up tasks": "INVALID_REQUEST (WarmupTasks are not supported yet.)",
        "task offsets": "INVALID_REQUEST (TaskOffsets are not supported yet.)",
        "active tasks": "INVALID_REQUEST (ActiveTasks must be empty when (re-)joining.)",
        "no rebalance timeout": "INVALID_REQUEST (RebalanceTimeoutMs must be provided in first request.)",
        "empty member id": "INVALID_REQUEST (MemberId can't be empty.)",
        "source regex": "INVALID_REQUEST (Regular expressions for source topics are not supported yet.)",
        "changelog with partitions": "STREAMS_INVALID_TOPOLOGY (Changelog topic <cl>-changelog must have an "
                                     "undefined partition count, but it is set to 4.)",
        "__consumer_offsets source": "STREAMS_INVALID_TOPOLOGY (Use of Kafka internal topics __consumer_offsets "
                                     "in a Kafka Streams topology is prohibited.)",
        "__transaction_state changelog": "STREAMS_INVALID_TOPOLOGY (Use of Kafka internal topics "
                                         "__transaction_state in a Kafka Streams topology is prohibited.)",
        "invalid topic name": "STREAMS_INVALID_TOPOLOGY (Topic names bad topic! are not valid topic names.)",
        # A topology without subtopologies is accepted: the member joins with nothing to do.
        "no subtopologies": "status [] active {}",
    }
    return _outcome(seen, want)


async def stale_topology(b: Broker) -> Outcome:
    """A joins with topology epoch 2; B with epoch 1 joins but is told STALE_TOPOLOGY; C with a
    different topology at epoch 2, and D at epoch 3, are refused: topology updates are not supported."""
    if skipped := _supported(b):
        return skipped
    source, other = await ready_topic(b, 2), await ready_topic(b, 1)
    group = _gid("sgstale")
    a = await SgMember(b, group, topology(subtopology("0", [source]), epoch=2)).open()
    old = await SgMember(b, group, topology(subtopology("0", [source]), epoch=1)).open()
    changed = await SgMember(b, group, topology(subtopology("0", [source, other]), epoch=2)).open()
    newer = await SgMember(b, group, topology(subtopology("0", [source]), epoch=3)).open()
    try:
        await a.join()
        await a.until_tasks(2)
        # Past group.streams.assignment.interval.ms since A's assignment, or B would also hear
        # ASSIGNMENT_DELAYED.
        await asyncio.sleep(ASSIGNMENT_INTERVAL_S + 0.5)
        stale = await old.join()
        stale_next = await old.hb()
        seen = {"older epoch": answer(stale), "its next heartbeat": statuses(stale_next),
                "other topology, same epoch": answer(await changed.join()),
                "same topology, newer epoch": answer(await newer.join())}
        want = {"older epoch": "epoch 3 status [STALE_TOPOLOGY: The member's topology epoch 1 is behind the "
                               "group's topology epoch 2.] active {}",
                "its next heartbeat": "[STALE_TOPOLOGY: The member's topology epoch 1 is behind the group's "
                                      "topology epoch 2.]",
                "other topology, same epoch": "INVALID_REQUEST (Topology updates are not supported yet.)",
                "same topology, newer epoch": "INVALID_REQUEST (Topology updates are not supported yet.)"}
        return _outcome(seen, want)
    finally:
        await _close(a, old, changed, newer)


async def _on(b: Broker, group: str, api: int, version: int, body: dict, client_id: str = "kcoord-check"):
    conn = await b.connect(group)
    conn.client_id = client_id
    try:
        return await conn.call(api, version, body)
    finally:
        await conn.close()


async def _list_own(b: Broker, groups: list[str], states: list[str], types: list[str]) -> list[str]:
    """ListGroups filtered by states and types, on a setup connection (other scenarios' groups are
    listed too, and left out here): this scenario's groups as "group state type"."""
    r = await _on(b, groups[0], LIST_GROUPS, 5, {"states_filter": states, "types_filter": types}, SETUP_CLIENT_ID)
    return sorted(f"{norm(g.group_id)} {g.group_state} {g.group_type}" for g in r.groups if g.group_id in groups) \
        + ([_name(r.error_code)] if r.error_code else [])


async def described_as_other_types(b: Broker, group: str) -> dict[str, str]:
    """What DescribeGroups (v5, and v6 with error messages) and ConsumerGroupDescribe answer
    for a group of another type."""
    seen = {}
    for version in (5, 6):
        d = await _on(b, group, DESCRIBE_GROUPS, version, {"groups": [group], "include_authorized_operations": False})
        g = d.groups[0]
        seen[f"DescribeGroups v{version}"] = (f"{_name(g.error_code)} ({norm(g.get('error_message'))}) state "
                                              f"{g.group_state!r} type {g.protocol_type!r}")
    cg = await _on(b, group, CG_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    seen["ConsumerGroupDescribe"] = f"{_name(cg.groups[0].error_code)} ({norm(cg.groups[0].error_message)})"
    return seen


async def leave_list_describe_delete(b: Broker) -> Outcome:
    """A member leaves (-1); the group as StreamsGroupDescribe, ListGroups (types and states
    filters), DescribeGroups and ConsumerGroupDescribe give it; DeleteGroups while a member is in
    it, then when it is empty."""
    if skipped := _supported(b):
        return skipped
    group, a, c = await _two_members(b, "sgleave", 1)
    try:
        await a.join()
        await a.until_tasks(1)
        # Past group.streams.assignment.interval.ms, B's join computes the new target at once;
        # one heartbeat each and both are at it: the group is Stable, not Assigning.
        await asyncio.sleep(ASSIGNMENT_INTERVAL_S + 0.5)
        await c.join()
        await a.hb()
        await c.hb()
        seen = {"listed [streams]": await _list_own(b, [group], [], ["streams"]),
                "listed [consumer]": await _list_own(b, [group], [], ["consumer"]),
                "listed [Stable]": await _list_own(b, [group], ["Stable"], []),
                "listed [Empty]": await _list_own(b, [group], ["Empty"], [])}
        seen.update(await described_as_other_types(b, group))
        dg = await _on(b, group, DELETE_GROUPS, 2, {"groups_names": [group]})
        seen["delete while members"] = _name(dg.results[0].error_code)
        left_c = await c.hb(-1)
        left_a = await a.hb(-1)
        seen["leave"] = f"{answer(left_c)} / {answer(left_a)}"
        seen["leave again"] = answer(await a.hb(-1))
        view = await _describe(a)
        seen["described"] = f"{view.group_state} epoch {view.group_epoch} members {len(view.members)}"
        seen["listed after"] = await _list_own(b, [group], ["Empty"], ["streams"])
        dg = await _on(b, group, DELETE_GROUPS, 2, {"groups_names": [group]})
        seen["delete empty"] = _name(dg.results[0].error_code)
        gone = await _describe(a)
        seen["described after delete"] = f"{_name(gone.error_code)} ({norm(gone.error_message)})"
        want = {"listed [streams]": ["<sgleave> Stable streams"], "listed [consumer]": [],
                "listed [Stable]": ["<sgleave> Stable streams"], "listed [Empty]": [],
                # DescribeGroups knows classic groups only: a streams group is described as Dead,
                # and from v6 (which has error messages) with GROUP_ID_NOT_FOUND.
                "DescribeGroups v5": "NONE (None) state 'Dead' type ''",
                "DescribeGroups v6": "GROUP_ID_NOT_FOUND (Group <sgleave> is not a classic group.) state 'Dead' type ''",
                "ConsumerGroupDescribe": "GROUP_ID_NOT_FOUND (Group <sgleave> is not a consumer group.)",
                "delete while members": "NON_EMPTY_GROUP",
                "leave": "epoch -1 status [] active - / epoch -1 status [] active -",
                "leave again": "UNKNOWN_MEMBER_ID (Member <member> is not a member of group <sgleave>.)",
                "described": "Empty epoch 5 members 0", "listed after": ["<sgleave> Empty streams"],
                "delete empty": "NONE", "described after delete": "GROUP_ID_NOT_FOUND (Group <sgleave> not found.)"}
        return _outcome(seen, want)
    finally:
        await _close(a, c)


async def describe_ready_group(b: Broker) -> Outcome:
    """StreamsGroupDescribe of a ready group with a changelog: its topology, its members with
    their assignment and target assignment; and of a group that does not exist."""
    if skipped := _supported(b):
        return skipped
    source = await ready_topic(b, 2)
    app = _gid("sgdescribe")
    topo = topology(subtopology("0", [source], [(f"{app}-store-changelog", 0)]))
    m = await SgMember(b, app, topo, endpoint=("localhost", 8080)).open()
    try:
        await m.join()
        await m.until_tasks(2)
        g = await _describe(m)
        t = g.topology
        member = g.members[0]
        seen = {"group": f"{_name(g.error_code)} {g.group_state} epoch {g.group_epoch} assignment epoch "
                         f"{g.assignment_epoch}",
                "topology": norm(f"epoch {t.epoch} " + "; ".join(
                    f"{s.subtopology_id}: sources {s.source_topics} changelogs "
                    f"{[(c.name, c.partitions, c.replication_factor, len(c.topic_configs)) for c in s.state_changelog_topics]}"
                    f" sinks {s.repartition_sink_topics} repartition {list(s.repartition_source_topics)}"
                    for s in t.subtopologies)),
                "member": f"{'own id' if member.member_id == m.member_id else 'other id'} epoch {member.member_epoch} "
                          f"instance {member.instance_id} rack {member.rack_id} client {member.client_id} "
                          f"topology epoch {member.topology_epoch} process {member.process_id == m.process_id} "
                          f"endpoint {member.user_endpoint.host}:{member.user_endpoint.port} "
                          f"tags {list(member.client_tags)} offsets {list(member.task_offsets)} "
                          f"{list(member.task_end_offsets)} classic {member.is_classic}",
                "assignment": f"{tasks(member.assignment.active_tasks)} {tasks(member.assignment.standby_tasks)} "
                              f"{tasks(member.assignment.warmup_tasks)}",
                "target": f"{tasks(member.target_assignment.active_tasks)} "
                          f"{tasks(member.target_assignment.standby_tasks)} "
                          f"{tasks(member.target_assignment.warmup_tasks)}"}
        unknown = await _describe(m, _gid("nogroup"))
        seen["unknown group"] = f"{_name(unknown.error_code)} ({norm(unknown.error_message)}) state " \
                                f"{unknown.group_state!r} topology {unknown.topology}"
        want = {"group": "NONE Stable epoch 3 assignment epoch 3",
                # The changelog's partition count as the broker configured it (the source's).
                "topology": "epoch 1 0: sources ['<topic>'] changelogs [('<sgdescribe>-store-changelog', 2, 0, 0)] "
                            "sinks [] repartition []",
                "member": "own id epoch 3 instance None rack None client kcoord-check topology epoch 1 process True "
                          "endpoint localhost:8080 tags [] offsets [] [] classic False",
                "assignment": "{'0': [0, 1]} {} {}", "target": "{'0': [0, 1]} {} {}",
                "unknown group": "GROUP_ID_NOT_FOUND (Group <nogroup> not found.) state '' topology None"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def offsets_by_members(b: Broker) -> Outcome:
    """OffsetCommit into a streams group with the member's epoch (v9, v10), an older and a newer
    one, a stranger, and below v9 (generation = epoch); OffsetFetch with the member id and epoch."""
    if skipped := _supported(b):
        return skipped
    source = await ready_topic(b, 1)
    m = await SgMember(b, _gid("sgcommit"), topology(subtopology("0", [source]))).open()

    async def commit(version: int, epoch: int, member_id: str | None = None) -> str:
        r = await m.conn.call(COMMIT, version, {
            "group_id": m.group, "generation_id_or_member_epoch": epoch,
            "member_id": m.member_id if member_id is None else member_id, "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [{"name": source, "topic_id": await _topic_id(b, source),
                        "partitions": [{"partition_index": 0, "committed_offset": 7,
                                        "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
        return _name(r.topics[0].partitions[0].error_code)

    async def fetch(version: int, epoch: int, member_id=_OWN) -> str:
        r = await m.conn.call(FETCH, version, {
            "groups": [{"group_id": m.group, "member_id": m.member_id if member_id is _OWN else member_id,
                        "member_epoch": epoch,
                        "topics": [{"name": source, "topic_id": await _topic_id(b, source),
                                    "partition_indexes": [0]}]}], "require_stable": True})
        g = r.groups[0]
        if g.error_code:
            return _name(g.error_code)
        p = g.topics[0].partitions[0]
        return f"{_name(p.error_code)} offset {p.committed_offset}"

    try:
        await m.join()
        await m.until_tasks(1)
        e = m.epoch
        seen = {"v9 own epoch": await commit(9, e), "v9 epoch+1": await commit(9, e + 1),
                "v9 epoch-1": await commit(9, e - 1), "v9 stranger": await commit(9, e, _gid("stranger")),
                "v10 own epoch": await commit(10, e), "v8 own epoch": await commit(8, e),
                "v8 no member": await commit(8, -1, ""),
                "fetch v9 own epoch": await fetch(9, e), "fetch v9 epoch+1": await fetch(9, e + 1),
                "fetch v9 stranger": await fetch(9, e, _gid("stranger")),
                "fetch v10 empty member id": await fetch(10, -1, ""),
                "fetch v10 as an admin": await fetch(10, -1, None)}
        want = {"v9 own epoch": "NONE", "v9 epoch+1": "STALE_MEMBER_EPOCH", "v9 epoch-1": "STALE_MEMBER_EPOCH",
                "v9 stranger": "UNKNOWN_MEMBER_ID", "v10 own epoch": "NONE",
                # A member's commit below v9 is refused: only v9+ carries member epochs.
                "v8 own epoch": "UNSUPPORTED_VERSION", "v8 no member": "UNKNOWN_MEMBER_ID",
                "fetch v9 own epoch": "NONE offset 7", "fetch v9 epoch+1": "STALE_MEMBER_EPOCH",
                "fetch v9 stranger": "UNKNOWN_MEMBER_ID", "fetch v10 empty member id": "UNKNOWN_MEMBER_ID",
                "fetch v10 as an admin": "NONE offset 7"}
        return _outcome(seen, want)
    finally:
        await _close(m)


_OWN = object()
_TOPIC_IDS: dict[tuple[str, int, str], str] = {}


async def _topic_id(b: Broker, topic: str) -> str:
    key = (b.host, b.port, topic)
    if key not in _TOPIC_IDS:
        async with RawConnection(b.host, b.port, SETUP_CLIENT_ID) as c:
            r = await c.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
                                            "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False})
            _TOPIC_IDS[key] = r.topics[0].topic_id
    return _TOPIC_IDS[key]


async def user_endpoints(b: Broker) -> Outcome:
    """Two members with endpoints: which partitions each endpoint serves, and the endpoint
    information epoch, as each member hears them."""
    if skipped := _supported(b):
        return skipped
    _, a, c = await _two_members(b, "sgendpoints", 2, (("host-a", 9001), ("host-b", 9002)))

    def endpoints(r) -> str:
        if r.partitions_by_user_endpoint is None:
            return "-"
        return norm(sorted((f"{e.user_endpoint.host}:{e.user_endpoint.port}",
                            sorted((p.topic, sorted(p.partitions)) for p in e.active_partitions),
                            sorted((p.topic, sorted(p.partitions)) for p in e.standby_partitions))
                           for e in r.partitions_by_user_endpoint))

    try:
        # The endpoint epoch moves with every answer that gives a member with an endpoint new
        # tasks, but not on the answer that creates the group; whether the join's answer already
        # has the tasks depends on the initial rebalance delay: epochs are shown from a's first
        # with its tasks on.
        first = await a.join()
        seen = {"a joins": f"endpoint epoch {first.endpoint_information_epoch}"}
        await a.until_tasks(2)
        alone = a.endpoint_epoch
        r = await a.hb(endpoint_information_epoch=-1)
        seen["a alone, at an old endpoint epoch"] = f"endpoint epoch +{r.endpoint_information_epoch - alone} " \
                                                    f"{endpoints(r)}"
        r = await a.hb()
        seen["a alone, up to date"] = f"endpoint epoch +{r.endpoint_information_epoch - alone} {endpoints(r)}"
        await asyncio.sleep(ASSIGNMENT_INTERVAL_S + 0.5)
        await c.join()
        await a.until(lambda r: a.count() == 1, "a told to revoke one")
        await a.hb()  # reports it has
        await c.until(lambda r: c.count() == 1, "b gets one")
        await a.until(lambda r: a.epoch == c.epoch, "a at b's epoch")
        r = await a.hb(endpoint_information_epoch=-1)
        seen["both, at an old endpoint epoch"] = f"endpoint epoch +{r.endpoint_information_epoch - alone} " \
                                                 f"{endpoints(r)}"
        r = await c.hb()
        seen["b up to date"] = f"endpoint epoch +{r.endpoint_information_epoch - alone} {endpoints(r)}"
        want = {"a joins": "endpoint epoch 0",
                "a alone, at an old endpoint epoch": "endpoint epoch +0 [('host-a:9001', [('<topic>', [0, 1])], [])]",
                "a alone, up to date": "endpoint epoch +0 -",
                # B's join, A told to revoke one, B given it: three answers with new tasks.
                "both, at an old endpoint epoch": "endpoint epoch +3 [('host-a:9001', [('<topic>', [0])], []), "
                                                  "('host-b:9002', [('<topic>', [1])], [])]",
                "b up to date": "endpoint epoch +3 -"}
        return _outcome(seen, want)
    finally:
        await _close(a, c)


async def _broker_config(b: Broker, group: str, name: str) -> str | None:
    """A broker config of the group's coordinator (DescribeConfigs), or None if not described."""
    async with RawConnection(b.host, b.port, SETUP_CLIENT_ID) as c:
        f = await c.call(FIND, b.version(FIND), {"key": group, "key_type": 0})
        r = await c.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": 4, "resource_name": str(f.node_id),
                                                              "configuration_keys": [name]}],
                                               "include_synonyms": False, "include_documentation": False})
    for res in r.results:
        for entry in res.configs:
            if entry.name == name:
                return entry.value
    return None


async def initial_delay(b: Broker) -> Outcome:
    """A new group's first member: with group.streams.initial.rebalance.delay.ms above 0, its
    join is answered with ASSIGNMENT_DELAYED and no tasks, and the tasks come after the delay;
    with 0, at once."""
    if skipped := _supported(b):
        return skipped
    source = await ready_topic(b, 1)
    group = _gid("sgdelay")
    delay = await _broker_config(b, group, "group.streams.initial.rebalance.delay.ms")
    m = await SgMember(b, group, topology(subtopology("0", [source]))).open()
    try:
        first = await m.join()
        await m.until_tasks(1)
        seen = {"delay": "0" if delay == "0" else "above 0" if delay else "not described",
                "join": answer(first, initial_delay=True), "then": f"epoch {m.epoch} active {m.active}"}
        delayed = ("epoch 1 status [ASSIGNMENT_DELAYED: Assignment delayed due to the configured initial "
                   "rebalance delay.] active {}")
        want = {"delay": seen["delay"], "join": delayed if delay != "0" else "epoch 2 status [] active {'0': [0]}",
                "then": "epoch 2 active {'0': [0]}"}
        return _outcome(seen, want)
    finally:
        await _close(m)


SCENARIOS = {
    "streams-missing-source-topic": missing_source_topic,
    "streams-internal-topic-created": internal_topic_created,
    "streams-revoke-before-assign": revoke_before_assign,
    "streams-fenced-and-unknown": fenced_and_unknown,
    "streams-invalid-joins": invalid_joins,
    "streams-stale-topology": stale_topology,
    "streams-leave-list-describe-delete": leave_list_describe_delete,
    "streams-describe-ready-group": describe_ready_group,
    "streams-offsets-by-members": offsets_by_members,
    "streams-user-endpoints": user_endpoints,
    "streams-initial-delay": initial_delay,
}
