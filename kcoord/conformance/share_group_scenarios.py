"""Raw-protocol scenarios of share groups (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe,
ShareFetch and ShareAcknowledge with their share sessions, the share-group offsets admin APIs
(DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets) and the group APIs
around them (ListGroups, DescribeGroups, ConsumerGroupDescribe, DeleteGroups), byte for byte
through `wire/`.

They join `raw_scenarios.SCENARIOS` under names starting "share-"; a broker that does not
advertise ShareGroupHeartbeat gets them as skipped. Every expectation is what Apache Kafka 4.3.1
answers (tests/conformance/test_differential.py runs them on both brokers). What an Outcome shows
is normalised as the transcripts are: names with kcoord check's random suffix become `<NAME>`,
member ids are the scenario's own (m1, m2, ...), no timestamps, hosts or topic ids.

Member ids are made by the member, as the Java KafkaShareConsumer makes them. A member's
assignment comes only once the group coordinator has initialised the share-partition state,
which Kafka does asynchronously after the first target assignment: the join is answered with
an empty assignment and the partitions follow on a later heartbeat. The scenarios heartbeat
until the partitions are there and report the state they end in, not how many heartbeats it
took. Groups that fetch read from the earliest offset (the group config share.auto.offset.reset,
set before the group exists), so that records produced before the state is initialised count.

ShareFetch and ShareAcknowledge go to the bootstrap broker: the differential pair runs one
broker each, the leader of every partition.
"""
from __future__ import annotations

import asyncio
import time

from kcoord.conformance.consumer_protocol_scenarios import ready_topic
from kcoord.conformance.raw_scenarios import Broker, Outcome, _gid, _name
from kcoord.conformance.rawclient import SETUP_CLIENT_ID, RawConnection
from kcoord.conformance.streams_group_scenarios import (ASSIGNMENT_INTERVAL_S, _close, _list_own, _on, _outcome, _topic_id,
                                                        described_as_other_types, norm)
from kcoord.testing.consumer_groups import new_member_id
from wire import records as R
from wire.errors import ErrorCode as E

SHARE_HEARTBEAT, SHARE_DESCRIBE, SHARE_FETCH, SHARE_ACK = 76, 77, 78, 79
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
PRODUCE, DELETE_GROUPS, ALTER_CONFIGS = 0, 42, 44
GROUP_RESOURCE = 32
READY_TIMEOUT = 30.0
ACCEPT, RELEASE, REJECT = 1, 2, 3
# A ShareFetch that expects nothing waits this long (Kafka holds it until max_wait_ms).
SHORT_WAIT_MS = 200


def _supported(b: Broker) -> Outcome | None:
    low, high = b.versions.get(SHARE_HEARTBEAT, (0, -1))
    if high < 0 or high < low:
        return Outcome(True, "ShareGroupHeartbeat not advertised", "ShareGroupHeartbeat v1", skipped=True)
    return None


def _offsets_served(b: Broker) -> None:
    """Raises Unsupported (the row is skipped) unless the share-group offsets APIs are served."""
    for api, version in ((DESCRIBE_OFFSETS, 1), (ALTER_OFFSETS, 0), (DELETE_OFFSETS, 0)):
        b.version(api, version)


def partitions(assignment) -> object:
    """An assignment's partitions, sorted over its topics (topic ids differ between brokers);
    "-" when the answer carries none."""
    if assignment is None:
        return "-"
    return sorted(p for tp in assignment.topic_partitions for p in tp.partitions)


def answer(r, *members: "ShMember") -> str:
    """A heartbeat answer in one line: error (and message, the members' ids as m1, m2, ...), or
    epoch and assignment."""
    if r.error_code:
        message = norm(r.error_message)
        for n, m in enumerate(members, 1):
            message = message.replace(m.member_id, f"m{n}")
        return f"{_name(r.error_code)} ({message})"
    return f"epoch {r.member_epoch} assignment {partitions(r.assignment)}"


class ShMember:
    """One share group member: its connection to the group's coordinator (heartbeats) and one to
    the partition leader (ShareFetch, ShareAcknowledge) with its share session epoch."""

    def __init__(self, broker: Broker, group: str, topics: list[str]):
        self.broker, self.group, self.topics = broker, group, topics
        self.member_id, self.epoch = new_member_id(), 0
        self.assigned: list[int] = []
        self.session_epoch = 0
        self.conn: RawConnection | None = None
        self.data: RawConnection | None = None

    async def open(self) -> "ShMember":
        self.conn = await self.broker.connect(self.group)
        self.data = await RawConnection(self.broker.host, self.broker.port).open()
        return self

    async def close(self) -> None:
        for c in (self.conn, self.data):
            if c is not None:
                await c.close()

    async def hb(self, epoch: int | None = None, **fields):
        """One heartbeat at the member's epoch (or `epoch`); a successful answer to the member's
        own epoch, id and group becomes the member's."""
        epoch = self.epoch if epoch is None else epoch
        body = {"group_id": self.group, "member_id": self.member_id, "member_epoch": epoch, "rack_id": None,
                "subscribed_topic_names": self.topics if epoch == 0 else None}
        body.update(fields)
        for _ in range(100):
            r = await self.conn.call(SHARE_HEARTBEAT, 1, body)
            if r.error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE):
                break
            await asyncio.sleep(0.2)
        if r.error_code == 0 and epoch >= 0 and not {"member_id", "group_id"} & fields.keys():
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.assigned = partitions(r.assignment)
        return r

    async def join(self, **fields):
        return await self.hb(0, **fields)

    async def until_assigned(self, count: int, timeout: float = READY_TIMEOUT):
        """Heartbeat every 0.2 s until `count` partitions are assigned; the last answer."""
        deadline = time.monotonic() + timeout
        while True:
            r = await self.hb()
            if r.error_code == 0 and len(self.assigned) == count:
                return r
            if time.monotonic() > deadline:
                raise AssertionError(f"{count} partitions not assigned within {timeout:.0f}s: last answer {answer(r)}")
            await asyncio.sleep(0.2)

    async def fetch(self, topic_id, *, epoch: int | None = None, acks=(), max_records: int = 500,
                    wait_ms: int = SHORT_WAIT_MS, member_id: str | None = None, forget: bool = False):
        """One ShareFetch of partition 0 at the member's session epoch (or `epoch`), piggybacking
        `acks` [(first, last, type)]; a successful answer moves the session epoch on."""
        epoch = self.session_epoch if epoch is None else epoch
        body = {"group_id": self.group, "member_id": self.member_id if member_id is None else member_id,
                "share_session_epoch": epoch, "max_wait_ms": wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
                "max_records": max_records, "batch_size": max_records,
                "topics": [] if forget else [{"topic_id": topic_id, "partitions": [
                    {"partition_index": 0, "partition_max_bytes": 1 << 20,
                     "acknowledgement_batches": _batches(acks)}]}],
                "forgotten_topics_data": [{"topic_id": topic_id, "partitions": [0]}] if forget else []}
        r = await self.data.call(SHARE_FETCH, self.broker.version(SHARE_FETCH, 2), body)
        if r.error_code == 0 and member_id is None:
            self.session_epoch = _next_epoch(epoch)
        return r

    async def acknowledge(self, topic_id, acks, *, epoch: int | None = None, member_id: str | None = None):
        epoch = self.session_epoch if epoch is None else epoch
        body = {"group_id": self.group, "member_id": self.member_id if member_id is None else member_id,
                "share_session_epoch": epoch,
                "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0,
                                                                   "acknowledgement_batches": _batches(acks)}]}]}
        r = await self.data.call(SHARE_ACK, self.broker.version(SHARE_ACK, 2), body)
        if r.error_code == 0 and member_id is None:
            self.session_epoch = _next_epoch(epoch)
        return r

    async def fetch_until(self, topic_id, count: int, timeout: float = READY_TIMEOUT, **kw):
        """ShareFetch until `count` records are acquired in all (a share partition initialises
        asynchronously on Kafka: the first fetches may find nothing); the acquired ranges."""
        deadline = time.monotonic() + timeout
        got: list[str] = []
        while True:
            r = await self.fetch(topic_id, wait_ms=500, **kw)
            kw.pop("acks", None)
            p = _partition(r)  # None while Kafka's share partition is still loading its state
            if r.error_code or (p is not None and p.error_code):
                return [fetched(r)]
            got += acquired(r)
            if sum(_count(a) for a in got) >= count:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"{count} records not acquired within {timeout:.0f}s: {got}")


def _next_epoch(epoch: int) -> int:
    return 1 if epoch in (0, 2 ** 31 - 1) else -1 if epoch == -1 else epoch + 1


def _batches(acks) -> list[dict]:
    return [{"first_offset": first, "last_offset": last, "acknowledge_types": [kind]} for first, last, kind in acks]


def _partition(r):
    for t in r.responses:
        for p in t.partitions:
            return p
    return None


def acquired(r) -> list[str]:
    """The acquired ranges of a ShareFetch answer as "first-last x delivery count"."""
    p = _partition(r)
    return [] if p is None else [f"{a.first_offset}-{a.last_offset} x{a.delivery_count}" for a in p.acquired_records]


def _count(text: str) -> int:
    first, last = text.split(" ")[0].split("-")
    return int(last) - int(first) + 1


def fetched(r) -> str:
    """A ShareFetch answer in one line: its error, or the partition's errors and acquired ranges."""
    if r.error_code:
        return f"{_name(r.error_code)} ({norm(r.error_message)})"
    p = _partition(r)
    if p is None:
        return "no partitions"
    out = f"{_name(p.error_code)} acquired {acquired(r)}"
    if p.acknowledge_error_code:
        out += f" ack {_name(p.acknowledge_error_code)} ({norm(p.acknowledge_error_message)})"
    return out


def acknowledged(r) -> str:
    if r.error_code:
        return f"{_name(r.error_code)} ({norm(r.error_message)})"
    p = _partition(r)
    return "no partitions" if p is None else f"{_name(p.error_code)} ({norm(p.error_message)})"


async def _describe(b: Broker, group: str):
    r = await _on(b, group, SHARE_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
    return r.groups[0]


def described(g) -> str:
    if g.error_code:
        return f"{_name(g.error_code)} ({norm(g.error_message)}) state {g.group_state!r}"
    return f"{g.group_state} epoch {g.group_epoch} assignment epoch {g.assignment_epoch} " \
           f"members {sorted(partitions(m.assignment) for m in g.members)}"


async def _earliest(b: Broker, group: str) -> None:
    """share.auto.offset.reset=earliest for `group` (a group config, before the group exists)."""
    async with RawConnection(b.host, b.port, SETUP_CLIENT_ID) as c:
        r = await c.call(ALTER_CONFIGS, 1, {"resources": [{
            "resource_type": GROUP_RESOURCE, "resource_name": group,
            "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
            "validate_only": False})
    if r.responses[0].error_code:
        raise AssertionError(f"share.auto.offset.reset of {group}: {_name(r.responses[0].error_code)}")


async def _produce(b: Broker, topic: str, *values: bytes) -> None:
    """One batch per record, so that records can be acquired one at a time."""
    async with RawConnection(b.host, b.port, SETUP_CLIENT_ID) as c:
        for v in values:
            r = await c.call(PRODUCE, b.version(PRODUCE, 9), {
                "transactional_id": None, "acks": -1, "timeout_ms": 10000,
                "topic_data": [{"name": topic, "partition_data": [
                    {"index": 0, "records": R.build_batch([(None, v, int(time.time() * 1000))])}]}]})
            code = r.responses[0].partition_responses[0].error_code
            if code:
                raise AssertionError(f"Produce to {topic}: {_name(code)}")


async def _group(b: Broker, prefix: str, partitions_: int = 1, earliest: bool = False) -> tuple[str, str]:
    topic = await ready_topic(b, partitions_)
    group = _gid(prefix)
    if earliest:
        await _earliest(b, group)
    return topic, group


async def _fetching_member(b: Broker, prefix: str, records: int) -> tuple[ShMember, object]:
    """A member of a new group reading from the earliest offset, assigned its topic's one
    partition, with `records` records produced to it; the member and its topic id."""
    topic, group = await _group(b, prefix, earliest=True)
    m = await ShMember(b, group, [topic]).open()
    await m.join()
    await m.until_assigned(1)
    tid = await _topic_id(b, topic)
    await _loaded(m, tid)
    await _produce(b, topic, *(f"r{i}".encode() for i in range(records)))
    return m, tid


async def _loaded(m: ShMember, tid) -> None:
    """Until the broker's share partition has loaded its state: Kafka loads it from the share
    coordinator on the first ShareFetch, and until then answers a fetch with no partitions at
    all (a loaded CI run took longer than a short fetch's wait). A session opened and closed
    before any record is produced, so nothing is acquired and the scenario opens its own."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        r = await m.fetch(tid, wait_ms=500)
        if r.error_code:
            raise AssertionError(f"ShareFetch while loading: {fetched(r)}")
        await m.fetch(tid, epoch=-1, forget=True)
        m.session_epoch = 0
        if _partition(r) is not None:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the share partition did not load within {READY_TIMEOUT:.0f}s")


async def _another_member(m: ShMember) -> ShMember:
    """A second member of `m`'s group, joined and assigned the one partition too. It joins once
    group.share.assignment.interval.ms (1 s) has passed since the group's last target assignment,
    so that its join is assigned at once on both brokers: within the interval the answer is held
    at the old assignment epoch, and whether a join lands there is timing (seen under load)."""
    await asyncio.sleep(ASSIGNMENT_INTERVAL_S + 0.2)
    other = await ShMember(m.broker, m.group, m.topics).open()
    await other.join()
    await other.until_assigned(1)
    return other


# ----------------------------------------------------------------- scenarios
async def join_assigned(b: Broker) -> Outcome:
    """A member joins with its own id: epoch 0 answered with epoch 1 and an empty assignment;
    the partitions come once the share-partition state is initialised, at a later epoch."""
    if skipped := _supported(b):
        return skipped
    topic, group = await _group(b, "shjoin", 2)
    m = await ShMember(b, group, [topic]).open()
    try:
        first = await m.join()
        own_id = first.member_id == m.member_id
        ready = await m.until_assigned(2)
        g = await _describe(b, group)
        seen = {"join": f"{answer(first)} own id {own_id} interval {first.heartbeat_interval_ms}",
                "assigned": f"epoch {ready.member_epoch} assignment {m.assigned}", "group": described(g)}
        # Kafka answers the join at epoch 2 with nothing (the partitions' share state not yet
        # initialised) and moves the group to epoch 3 once it is.
        want = {"join": "epoch 2 assignment [] own id True interval 5000",
                "assigned": "epoch 3 assignment [0, 1]", "group": "Stable epoch 3 assignment epoch 3 members [[0, 1]]"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def two_members_one_partition(b: Broker) -> Outcome:
    """Share groups assign a partition to several members: A and B both get the one partition."""
    if skipped := _supported(b):
        return skipped
    topic, group = await _group(b, "shtwo")
    a = await ShMember(b, group, [topic]).open()
    c = await ShMember(b, group, [topic]).open()
    try:
        await a.join()
        await a.until_assigned(1)
        # Past group.share.assignment.interval.ms since A's assignment, B's join is assigned at
        # once; within it the answer would be held at the old epoch, and whether B lands there
        # is timing.
        await asyncio.sleep(ASSIGNMENT_INTERVAL_S + 0.2)
        joined = await c.join()
        await c.until_assigned(1)
        a_then = await a.hb()
        g = await _describe(b, group)
        seen = {"b joins": answer(joined), "b": f"epoch {c.epoch} assignment {c.assigned}",
                "a then": answer(a_then), "group": described(g)}
        # B's join moves the group to epoch 4 and is answered with the partition, which A keeps.
        want = {"b joins": "epoch 4 assignment [0]", "b": "epoch 4 assignment [0]",
                "a then": "epoch 4 assignment -", "group": "Stable epoch 4 assignment epoch 4 members [[0], [0]]"}
        return _outcome(seen, want)
    finally:
        await _close(a, c)


async def fenced_and_unknown(b: Broker) -> Outcome:
    """Epochs ahead of or behind the member's are fenced; a stranger is unknown; a group that does
    not exist; invalid joins (no member id, no topics, static epoch -2)."""
    if skipped := _supported(b):
        return skipped
    topic, group = await _group(b, "shfenced")
    m = await ShMember(b, group, [topic]).open()
    try:
        await m.join()
        await m.until_assigned(1)
        e = m.epoch
        seen = {"ahead": answer(await m.hb(e + 3)), "previous epoch": answer(await m.hb(e - 1)),
                "two behind": answer(await m.hb(e - 2)),
                "stranger": answer(await m.hb(member_id=_gid("stranger"))),
                "unknown group": answer(await m.hb(group_id=_gid("nogroup"))),
                "empty member id": answer(await m.hb(0, member_id="")),
                "join without topics": answer(await m.hb(0, member_id=new_member_id(), subscribed_topic_names=None)),
                "epoch -2": answer(await m.hb(-2)),
                "own epoch after": answer(await m.hb())}
        want = {"ahead": "FENCED_MEMBER_EPOCH (The share group member has a greater member epoch (6) than the one known "
                         "by the group coordinator (3). The member must abandon all its partitions and rejoin.)",
                # The previous epoch is taken: the answer that moved the member on may have been lost.
                "previous epoch": "epoch 3 assignment -",
                "two behind": "FENCED_MEMBER_EPOCH (The share group member has a smaller member epoch (1) than the "
                              "one known by the group coordinator (3), and it does not match the previous member "
                              "epoch (2). The member must abandon all its partitions and rejoin.)",
                "stranger": "UNKNOWN_MEMBER_ID (Member <stranger> is not a member of group <shfenced>.)",
                "unknown group": "GROUP_ID_NOT_FOUND (Share group <nogroup> not found.)",
                "empty member id": "INVALID_REQUEST (None)",
                "join without topics": "INVALID_REQUEST (SubscribedTopicNames must be set in first request.)",
                "epoch -2": "INVALID_REQUEST (MemberEpoch is invalid.)",
                "own epoch after": "epoch 3 assignment -"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def leave_list_describe_delete(b: Broker) -> Outcome:
    """A member in the group: ListGroups (types and states filters), DescribeGroups and
    ConsumerGroupDescribe of a share group, DeleteGroups while a member is in it; the member leaves
    (-1), then again; the group listed Empty, deleted, described after."""
    if skipped := _supported(b):
        return skipped
    topic, group = await _group(b, "shleave")
    m = await ShMember(b, group, [topic]).open()
    try:
        await m.join()
        await m.until_assigned(1)
        seen = {"listed [share]": await _list_own(b, [group], [], ["share"]),
                "listed [consumer]": await _list_own(b, [group], [], ["consumer"]),
                "listed [Stable]": await _list_own(b, [group], ["Stable"], []),
                "listed [Empty]": await _list_own(b, [group], ["Empty"], [])}
        seen.update(await described_as_other_types(b, group))
        dg = await _on(b, group, DELETE_GROUPS, 2, {"groups_names": [group]})
        seen["delete while a member"] = _name(dg.results[0].error_code)
        seen["leave"] = answer(await m.hb(-1))
        seen["leave again"] = answer(await m.hb(-1), m)
        seen["described"] = described(await _describe(b, group))
        seen["listed after"] = await _list_own(b, [group], [], ["share"])
        dg = await _on(b, group, DELETE_GROUPS, 2, {"groups_names": [group]})
        seen["delete empty"] = _name(dg.results[0].error_code)
        seen["described after delete"] = described(await _describe(b, group))
        want = {"listed [share]": ["<shleave> Stable share"], "listed [consumer]": [],
                "listed [Stable]": ["<shleave> Stable share"], "listed [Empty]": [],
                # DescribeGroups knows classic groups only: a share group is described as Dead, and
                # from v6 (which has error messages) with GROUP_ID_NOT_FOUND.
                "DescribeGroups v5": "NONE (None) state 'Dead' type ''",
                "DescribeGroups v6": "GROUP_ID_NOT_FOUND (Group <shleave> is not a classic group.) state 'Dead' type ''",
                "ConsumerGroupDescribe": "GROUP_ID_NOT_FOUND (Group <shleave> is not a consumer group.)",
                "delete while a member": "NON_EMPTY_GROUP", "leave": "epoch -1 assignment -",
                "leave again": "UNKNOWN_MEMBER_ID (Member m1 is not a member of group <shleave>.)",
                # The leave moves the group epoch on, not its assignment epoch.
                "described": "Empty epoch 4 assignment epoch 3 members []", "listed after": ["<shleave> Empty share"],
                "delete empty": "NONE", "described after delete": "GROUP_ID_NOT_FOUND (Group <shleave> not found.) state ''"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def describe_group(b: Broker) -> Outcome:
    """ShareGroupDescribe of a group with a member: state, epochs, assignor, the member's client,
    subscription and assignment with topic names; and of a group that does not exist."""
    if skipped := _supported(b):
        return skipped
    topic, group = await _group(b, "shdescribe", 2)
    m = await ShMember(b, group, [topic]).open()
    try:
        await m.join(rack_id="rack-a")
        await m.until_assigned(2)
        g = await _describe(b, group)
        member = g.members[0]
        seen = {"group": f"{_name(g.error_code)} {described(g)} assignor {g.assignor_name} "
                         f"operations {g.authorized_operations}",
                "member": norm(f"{'own id' if member.member_id == m.member_id else 'other id'} epoch "
                               f"{member.member_epoch} rack {member.rack_id} client {member.client_id} "
                               f"topics {list(member.subscribed_topic_names)} assignment "
                               f"{[(t.topic_name, sorted(t.partitions)) for t in member.assignment.topic_partitions]}"),
                "unknown group": described(await _describe(b, _gid("nogroup")))}
        want = {"group": "NONE Stable epoch 3 assignment epoch 3 members [[0, 1]] assignor simple operations -2147483648",
                "member": "own id epoch 3 rack rack-a client kcoord-check topics ['<topic>'] "
                          "assignment [('<topic>', [0, 1])]",
                "unknown group": "GROUP_ID_NOT_FOUND (Group <nogroup> not found.) state ''"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def fetch_sessions(b: Broker) -> Outcome:
    """Share session epochs: 0 opens a session, the next is 1; a wrong epoch; a session that was
    never opened; acknowledgements on epoch 0; -1 closes the session; after the close."""
    if skipped := _supported(b):
        return skipped
    m, tid = await _fetching_member(b, "shsession", 0)
    try:
        seen = {"open (0)": fetched(await m.fetch(tid)), "next (1)": fetched(await m.fetch(tid)),
                "wrong epoch (7)": fetched(await m.fetch(tid, epoch=7)),
                "other member, epoch 1": fetched(await m.fetch(tid, epoch=1, member_id=new_member_id())),
                "acks on epoch 0": fetched(await m.fetch(tid, epoch=0, acks=[(0, 0, ACCEPT)])),
                "ack on epoch 0": acknowledged(await m.acknowledge(tid, [(0, 0, ACCEPT)], epoch=0))}
        seen["right epoch after"] = fetched(await m.fetch(tid))
        seen["close (-1)"] = fetched(await m.fetch(tid, epoch=-1, forget=True))
        seen["after the close"] = fetched(await m.fetch(tid, epoch=m.session_epoch))
        want = {"open (0)": "NONE acquired []",
                # An incremental session's answer leaves out partitions with nothing new.
                "next (1)": "no partitions",
                "wrong epoch (7)": "INVALID_SHARE_SESSION_EPOCH (None)",
                "other member, epoch 1": "SHARE_SESSION_NOT_FOUND (None)",
                "acks on epoch 0": "INVALID_REQUEST (None)", "ack on epoch 0": "INVALID_SHARE_SESSION_EPOCH (None)",
                "right epoch after": "no partitions", "close (-1)": "no partitions",
                "after the close": "SHARE_SESSION_NOT_FOUND (None)"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def acquire_accept_release_reject(b: Broker) -> Outcome:
    """Three records acquired at once; one accepted, one released, one rejected (piggybacked on
    the next ShareFetch): only the released one comes again, with delivery count 2; accepted with
    ShareAcknowledge, nothing is left."""
    if skipped := _supported(b):
        return skipped
    m, tid = await _fetching_member(b, "shacks", 3)
    try:
        seen = {"acquired": await m.fetch_until(tid, 3)}
        r = await m.fetch(tid, acks=[(0, 0, ACCEPT), (1, 1, RELEASE), (2, 2, REJECT)])
        # The released record comes back in this answer, or (when Kafka's release is still
        # being written as the fetch is served, seen under load) in a later one.
        p = _partition(r)
        seen["after accept/release/reject"] = fetched(r) if r.error_code or (p and (
            p.error_code or p.acknowledge_error_code)) else f"NONE redelivered {acquired(r) or await m.fetch_until(tid, 1)}"
        seen["accept the redelivered"] = acknowledged(await m.acknowledge(tid, [(1, 1, ACCEPT)]))
        seen["then"] = fetched(await m.fetch(tid))
        want = {"acquired": ["0-2 x1"], "after accept/release/reject": "NONE redelivered ['1-1 x2']",
                "accept the redelivered": "NONE (None)", "then": "no partitions"}
        return _outcome(seen, want)
    finally:
        await _close(m)


async def acknowledge_errors(b: Broker) -> Outcome:
    """ShareAcknowledge of records not acquired, of records another member holds, twice, with an
    unknown session, and a release through the session's close (-1)."""
    if skipped := _supported(b):
        return skipped
    m, tid = await _fetching_member(b, "shackerr", 2)
    other = await _another_member(m)
    try:
        seen = {"acquired": await m.fetch_until(tid, 2, max_records=1)}
        seen["other opens"] = fetched(await other.fetch(tid))
        seen["other acks m's record"] = acknowledged(await other.acknowledge(tid, [(0, 0, ACCEPT)]))
        seen["not delivered yet"] = acknowledged(await m.acknowledge(tid, [(5, 5, ACCEPT)]))
        seen["accept"] = acknowledged(await m.acknowledge(tid, [(0, 0, ACCEPT)]))
        seen["accept again"] = acknowledged(await m.acknowledge(tid, [(0, 0, ACCEPT)]))
        seen["unknown session"] = acknowledged(await m.acknowledge(tid, [(1, 1, ACCEPT)], epoch=3,
                                                                    member_id=new_member_id()))
        seen["close with a release"] = acknowledged(await m.acknowledge(tid, [(1, 1, RELEASE)], epoch=-1))
        seen["other then"] = await other.fetch_until(tid, 1)
        want = {"acquired": ["0-0 x1", "1-1 x1"], "other opens": "NONE acquired []",
                "other acks m's record": "INVALID_RECORD_STATE (Member is not the owner of batch record)",
                "not delivered yet": "INVALID_REQUEST (Batch record not found. The first offset in request is past "
                                     "acquired records.)",
                # Kafka skips an acknowledgement wholly below the start offset (already archived).
                "accept": "NONE (None)", "accept again": "NONE (None)",
                "unknown session": "SHARE_SESSION_NOT_FOUND (None)", "close with a release": "NONE (None)",
                "other then": ["1-1 x2"]}
        return _outcome(seen, want)
    finally:
        await _close(m, other)


async def second_member_fetch(b: Broker) -> Outcome:
    """A acquires two of three records; B, on its own connection, fetches only the third; when A's
    session closes, its records become B's with delivery count 2."""
    if skipped := _supported(b):
        return skipped
    a, tid = await _fetching_member(b, "shsecond", 3)
    c = await _another_member(a)
    try:
        seen = {"a": await a.fetch_until(tid, 2, max_records=2)}
        seen["b"] = await c.fetch_until(tid, 1)
        seen["b again"] = fetched(await c.fetch(tid))
        await a.data.close()
        a.data = None
        seen["b after a's connection closed"] = await c.fetch_until(tid, 2)
        want = {"a": ["0-1 x1"], "b": ["2-2 x1"], "b again": "no partitions",
                # A's share session ends with its connection: its acquired records are released.
                "b after a's connection closed": ["0-1 x2"]}
        return _outcome(seen, want)
    finally:
        await _close(a, c)


async def _describe_offsets(conn: RawConnection, group: str, topic: str | None) -> str:
    r = await conn.call(DESCRIBE_OFFSETS, 1, {"groups": [{"group_id": group, "topics": None if topic is None else [
        {"topic_name": topic, "partitions": [0]}]}]})
    g = r.groups[0]
    if g.error_code:
        return f"{_name(g.error_code)} ({norm(g.error_message)})"
    return "; ".join(f"{norm(t.topic_name)}[{p.partition_index}] {_name(p.error_code)} start {p.start_offset} "
                     f"lag {p.lag}" for t in g.topics for p in t.partitions) or "none"


async def offsets_admin(b: Broker) -> Outcome:
    """DescribeShareGroupOffsets after acknowledgements; AlterShareGroupOffsets and
    DeleteShareGroupOffsets while a member is in the group; after it left, both work."""
    if skipped := _supported(b):
        return skipped
    _offsets_served(b)
    m, tid = await _fetching_member(b, "shoffsets", 3)
    topic = m.topics[0]

    async def alter(offset: int) -> str:
        r = await m.conn.call(ALTER_OFFSETS, 0, {"group_id": m.group, "topics": [
            {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": offset}]}]})
        if r.error_code:
            return f"{_name(r.error_code)} ({norm(r.error_message)})"
        return "; ".join(f"{_name(p.error_code)} ({norm(p.error_message)})" for t in r.responses for p in t.partitions)

    async def delete() -> str:
        r = await m.conn.call(DELETE_OFFSETS, 0, {"group_id": m.group, "topics": [{"topic_name": topic}]})
        if r.error_code:
            return f"{_name(r.error_code)} ({norm(r.error_message)})"
        return "; ".join(f"{_name(t.error_code)} ({norm(t.error_message)})" for t in r.responses)

    try:
        await m.fetch_until(tid, 3)
        await m.acknowledge(tid, [(0, 1, ACCEPT)])
        # Kafka persists a share-partition's start offset as it was before the write's own
        # acknowledgements moved it, and DescribeShareGroupOffsets reads what was persisted: right
        # after 0-1 are accepted it says start 0 (lag 1), kcoord says start 2 (deviations.md). A
        # release of 2, which moves nothing, writes start 2 on Kafka too; then both say the same.
        await m.acknowledge(tid, [(2, 2, RELEASE)])
        await m.fetch_until(tid, 1)
        seen = {"after two accepted": await _describe_offsets(m.conn, m.group, topic),
                "all topics": await _describe_offsets(m.conn, m.group, None),
                "alter while a member": await alter(0), "delete while a member": await delete()}
        await m.acknowledge(tid, [(2, 2, ACCEPT)], epoch=-1)
        seen["leave"] = answer(await m.hb(-1))
        seen["alter when empty"] = await alter(1)
        seen["after alter"] = await _describe_offsets(m.conn, m.group, topic)
        seen["delete when empty"] = await delete()
        seen["after delete"] = await _describe_offsets(m.conn, m.group, topic)
        seen["unknown group"] = await _describe_offsets(m.conn, _gid("nogroup"), topic)
        want = {"after two accepted": "<topic>[0] NONE start 2 lag 1", "all topics": "<topic>[0] NONE start 2 lag 1",
                "alter while a member": "NON_EMPTY_GROUP (The group is not empty.)",
                "delete while a member": "NON_EMPTY_GROUP (The group is not empty.)",
                "leave": "epoch -1 assignment -", "alter when empty": "NONE (None)",
                "after alter": "<topic>[0] NONE start 1 lag 2", "delete when empty": "NONE (None)",
                "after delete": "<topic>[0] NONE start -1 lag -1",
                "unknown group": "<topic>[0] NONE start -1 lag -1"}
        return _outcome(seen, want)
    finally:
        await _close(m)


SCENARIOS = {
    "share-join-assigned": join_assigned,
    "share-two-members-one-partition": two_members_one_partition,
    "share-fenced-and-unknown": fenced_and_unknown,
    "share-leave-list-describe-delete": leave_list_describe_delete,
    "share-describe-group": describe_group,
    "share-fetch-sessions": fetch_sessions,
    "share-acquire-accept-release-reject": acquire_accept_release_reject,
    "share-acknowledge-errors": acknowledge_errors,
    "share-second-member-fetch": second_member_fetch,
    "share-offsets-admin": offsets_admin,
}
