"""Raw-protocol scenarios of the consumer group protocol (KIP-848): ConsumerGroupHeartbeat,
ConsumerGroupDescribe and OffsetCommit with member epochs, byte for byte through `wire/`.

They join `raw_scenarios.SCENARIOS` under names starting "kip848-"; a broker that does not
advertise ConsumerGroupHeartbeat v1 gets them as skipped. Every expectation is what Apache
Kafka 4.3.1 answers (tests/conformance/test_differential.py runs them on both brokers).
Member ids are the client's (v1), made as the Java client makes them.
"""
from __future__ import annotations

import asyncio
import time

from kcoord.conformance.raw_scenarios import FIND, Broker, Outcome, _create_topic, _gid, _name
from kcoord.conformance.rawclient import SETUP_CLIENT_ID, RawConnection
from kcoord.testing.consumer_groups import new_member_id
from wire.errors import ErrorCode as E

CG_HEARTBEAT, CG_DESCRIBE, COMMIT = 68, 69, 8
READY_TIMEOUT = 30.0
ASSIGNMENT_INTERVAL_S = 1.0  # Kafka's default group.consumer.assignment.interval.ms


class CgMember:
    """One consumer-protocol member: its own connection to the group's coordinator."""

    def __init__(self, broker: Broker, group: str, topics: list[str], instance_id: str | None = None):
        self.broker, self.group, self.topics, self.instance_id = broker, group, topics, instance_id
        self.member_id, self.epoch = new_member_id(), 0
        self.owned: list[dict] = []
        self.conn: RawConnection | None = None

    async def open(self) -> "CgMember":
        self.conn = await self.broker.connect(self.group)
        return self

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    async def hb(self, *, epoch: int | None = None, member_id: str | None = None, owned="own", join: bool = False):
        """One heartbeat; by default the member's own id and epoch, acknowledging what it owns.
        A successful answer's epoch and assignment become the member's."""
        epoch = self.epoch if epoch is None else epoch
        body = {"group_id": self.group, "member_id": self.member_id if member_id is None else member_id,
                "member_epoch": epoch, "instance_id": self.instance_id, "rack_id": None,
                "rebalance_timeout_ms": 30000 if join else -1,
                "subscribed_topic_names": self.topics if join else None, "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": [] if join else (self.owned if owned == "own" else owned)}
        r = await self.conn.call(CG_HEARTBEAT, self.broker.version(CG_HEARTBEAT, 1), body)
        if r.error_code == 0 and member_id is None and epoch >= 0:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.owned = [{"topic_id": tp.topic_id, "partitions": sorted(tp.partitions)}
                              for tp in r.assignment.topic_partitions]
        return r

    async def join(self):
        return await self.hb(epoch=0, join=True)

    def count(self) -> int:
        return sum(len(tp["partitions"]) for tp in self.owned)


def _count(answer) -> str:
    """An answer's assignment as a count ("-" when it sends none: unchanged)."""
    if answer.assignment is None:
        return "-"
    return str(sum(len(tp.partitions) for tp in answer.assignment.topic_partitions))


def _supported(b: Broker) -> Outcome | None:
    low, high = b.versions.get(CG_HEARTBEAT, (0, -1))
    if high < 1:
        return Outcome(True, f"ConsumerGroupHeartbeat {'not advertised' if high < low else f'v{high} at most'}",
                       "ConsumerGroupHeartbeat v1", skipped=True)
    return None


async def ready_topic(b: Broker, partitions: int, topic: str | None = None) -> str:
    """A new topic (named `topic`, or at random), once the group coordinator assigns all of it (Kafka answers CreateTopics
    before its coordinator's metadata image has the topic: a member joining at once would
    get nothing at its first epoch, and the group epoch would move again later)."""
    topic = topic or _gid("topic")
    await _create_topic(b, topic, partitions)
    group = f"kcoord-topic-ready-{topic}"
    async with RawConnection(b.host, b.port, SETUP_CLIENT_ID) as c:
        r = await c.call(FIND, b.version(FIND), {"key": group, "key_type": 0})
        host, port = (r.host, r.port) if r.error_code == 0 else (b.host, b.port)
    deadline = time.monotonic() + READY_TIMEOUT
    async with RawConnection(host, port, SETUP_CLIENT_ID) as c:
        while True:
            member = new_member_id()
            r = await c.call(CG_HEARTBEAT, b.version(CG_HEARTBEAT, 1), {
                "group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 1000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": []})
            got = (sum(len(tp.partitions) for tp in r.assignment.topic_partitions)
                   if r.error_code == 0 and r.assignment else 0)
            if r.error_code == 0:
                await c.call(CG_HEARTBEAT, b.version(CG_HEARTBEAT, 1), {
                    "group_id": group, "member_id": member, "member_epoch": -1, "instance_id": None,
                    "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
                    "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None})
            if got == partitions:
                return topic
            if time.monotonic() > deadline:
                raise AssertionError(f"the group coordinator assigns {got} of {partitions} partitions of {topic}")
            await asyncio.sleep(0.2)


async def _describe(b: Broker, conn: RawConnection, group: str):
    r = await conn.call(CG_DESCRIBE, b.version(CG_DESCRIBE, 1),
                        {"group_ids": [group], "include_authorized_operations": False})
    return r.groups[0]


async def _close(*members: CgMember) -> None:
    for m in members:
        await m.close()


async def join_ack_leave(b: Broker) -> Outcome:
    """A first heartbeat (epoch 0) joins with every partition; one that acknowledges them keeps
    the epoch and sends no assignment; epoch -1 leaves; a second leave is unknown."""
    if skipped := _supported(b):
        return skipped
    topic = await ready_topic(b, 3)
    m = await CgMember(b, _gid("cpjoin"), [topic]).open()
    try:
        first = await m.join()
        ack = await m.hb()
        gone = await m.hb(epoch=-1)
        again = await m.hb(epoch=-1, member_id=m.member_id)
        seen = (f"join -> {_name(first.error_code)} epoch {first.member_epoch} with {_count(first)}, "
                f"ack -> {_name(ack.error_code)} epoch {ack.member_epoch} with {_count(ack)}, "
                f"leave -> {_name(gone.error_code)} epoch {gone.member_epoch}, again -> {_name(again.error_code)}")
        want = ("join -> NONE epoch 2 with 3, ack -> NONE epoch 2 with -, leave -> NONE epoch -1, "
                "again -> UNKNOWN_MEMBER_ID")
        return Outcome(seen == want, seen, want)
    finally:
        await _close(m)


async def fenced_and_invalid(b: Broker) -> Outcome:
    """Epochs ahead of or behind the member's are fenced and change nothing; a stranger with an
    epoch is unknown; an epoch below -2 is invalid."""
    if skipped := _supported(b):
        return skipped
    topic = await ready_topic(b, 2)
    m = await CgMember(b, _gid("cpfenced"), [topic]).open()
    try:
        await m.join()
        epoch = m.epoch
        seen = {"ahead": (await m.hb(epoch=epoch + 4, member_id=m.member_id)).error_code,
                "behind": (await m.hb(epoch=epoch - 1, member_id=m.member_id)).error_code,
                "stranger": (await m.hb(member_id=new_member_id())).error_code,
                "epoch -3": (await m.hb(epoch=-3, member_id=m.member_id)).error_code,
                "own epoch after": (await m.hb()).error_code}
        want = {"ahead": E.FENCED_MEMBER_EPOCH, "behind": E.FENCED_MEMBER_EPOCH, "stranger": E.UNKNOWN_MEMBER_ID,
                "epoch -3": E.INVALID_REQUEST, "own epoch after": E.NONE}
        return Outcome(seen == want, ", ".join(f"{k} -> {_name(v)}" for k, v in seen.items()),
                       ", ".join(f"{k} -> {v.name}" for k, v in want.items()))
    finally:
        await _close(m)


async def revoke_before_assign(b: Broker) -> Outcome:
    """A owns 4 partitions; B joins. Both heartbeat (acknowledging what they own) until the
    group is stable: A is first told to give up the two that move while keeping its epoch, and
    B is given none of them before A has acknowledged releasing it."""
    if skipped := _supported(b):
        return skipped
    topic = await ready_topic(b, 4)
    group = _gid("cprevoke")
    a = await CgMember(b, group, [topic]).open()
    c = await CgMember(b, group, [topic]).open()

    def held(m: CgMember) -> set:
        return {(tp["topic_id"], p) for tp in m.owned for p in tp["partitions"]}

    try:
        await a.join()
        await a.hb()
        first_epoch = a.epoch
        # Past group.consumer.assignment.interval.ms (1 s by default) since A's assignment, B's
        # join computes the new target at once, whatever the machine's speed.
        await asyncio.sleep(ASSIGNMENT_INTERVAL_S + 0.5)
        r = await c.join()
        joined = f"b joins at epoch {r.member_epoch} with {_count(r)}"
        revoked_at_old_epoch, overlap, while_revoking = False, False, None
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            released = held(a)  # what A has told the coordinator it owns
            r = await a.hb()
            if r.assignment is not None and a.epoch == first_epoch and a.count() < len(released):
                revoked_at_old_epoch = True
                # Until A has given them up, the partitions it is to revoke are still its own.
                view = await _describe(b, c.conn, group)
                while_revoking = sorted(sum(map(len, _parts(m))) for m in view.members)
            r = await c.hb()
            overlap = overlap or bool(held(c) & released)
            view = await _describe(b, c.conn, group)
            if (view.group_state == "Stable" and a.count() == c.count() == 2
                    and a.epoch == c.epoch == view.group_epoch):
                break
            await asyncio.sleep(0.1)
        view = await _describe(b, c.conn, group)
        seen = (f"a joins at epoch {first_epoch} with 4, {joined}; a told to revoke at its old epoch "
                f"{revoked_at_old_epoch}, described meanwhile as {while_revoking}; b given a partition a still held {overlap}; group {view.group_state} "
                f"at epoch {view.group_epoch - first_epoch:+d}, members {sorted((a.count(), c.count()))} at the "
                f"group epoch {a.epoch == c.epoch == view.group_epoch}, disjoint {not held(a) & held(c)}")
        want = ("a joins at epoch 2 with 4, b joins at epoch 3 with 0; a told to revoke at its old epoch True, "
                "described meanwhile as [0, 4]; "
                "b given a partition a still held False; group Stable at epoch +1, members [2, 2] at the group "
                "epoch True, disjoint True")
        return Outcome(seen == want, seen, want)
    finally:
        await _close(a, c)


def _parts(member) -> list[list[int]]:
    return [list(tp.partitions) for tp in member.assignment.topic_partitions] or [[]]


async def static_leave_and_return(b: Broker) -> Outcome:
    """A static member leaves with epoch -2 and keeps its place and partitions; back with a new
    member id and the same instance id it gets them at the same epoch, no new group epoch; the
    old id is then fenced."""
    if skipped := _supported(b):
        return skipped
    topic = await ready_topic(b, 2)
    group = _gid("cpstatic")
    s = await CgMember(b, group, [topic], instance_id="inst-1").open()
    back = await CgMember(b, group, [topic], instance_id="inst-1").open()
    try:
        await s.join()
        await s.hb()
        epoch = s.epoch
        gone = await s.hb(epoch=-2, member_id=s.member_id)
        view = await _describe(b, s.conn, group)
        kept = [(m.member_epoch, sum(map(len, _parts(m)))) for m in view.members]
        r = await back.join()
        after = await _describe(b, s.conn, group)
        old = await s.hb(epoch=-1, member_id=s.member_id)
        seen = (f"leave -> {_name(gone.error_code)} epoch {gone.member_epoch}; kept {kept} at group epoch "
                f"{view.group_epoch}; back -> {_name(r.error_code)} same epoch {r.member_epoch == epoch} with "
                f"{_count(r)}; group epoch {after.group_epoch - view.group_epoch:+d}, {len(after.members)} member; "
                f"old id -> {_name(old.error_code)}")
        want = ("leave -> NONE epoch -2; kept [(-2, 2)] at group epoch 2; back -> NONE same epoch True with 2; "
                "group epoch +0, 1 member; old id -> FENCED_INSTANCE_ID")
        return Outcome(seen == want, seen, want)
    finally:
        await _close(s, back)


async def offset_commit_epochs(b: Broker) -> Outcome:
    """OffsetCommit into a consumer group carries the member epoch (v9+): the member's own
    epoch commits, another epoch is stale, a stranger is unknown."""
    if skipped := _supported(b):
        return skipped
    low, high = b.versions.get(COMMIT, (0, -1))
    if high < 9:
        return Outcome(True, f"OffsetCommit v{high} at most", "OffsetCommit v9", skipped=True)
    topic = await ready_topic(b, 1)
    m = await CgMember(b, _gid("cpcommit"), [topic]).open()

    async def commit(epoch: int, member_id: str) -> int:
        r = await m.conn.call(COMMIT, 9, {
            "group_id": m.group, "generation_id_or_member_epoch": epoch, "member_id": member_id,
            "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0}]}]})
        return r.topics[0].partitions[0].error_code

    try:
        await m.join()
        await m.hb()
        seen = {"own epoch": await commit(m.epoch, m.member_id),
                "epoch+1": await commit(m.epoch + 1, m.member_id),
                "epoch-1": await commit(m.epoch - 1, m.member_id),
                "stranger": await commit(m.epoch, "kcoord-check-stranger")}
        want = {"own epoch": E.NONE, "epoch+1": E.STALE_MEMBER_EPOCH, "epoch-1": E.STALE_MEMBER_EPOCH,
                "stranger": E.UNKNOWN_MEMBER_ID}
        return Outcome(seen == want, ", ".join(f"{k} -> {_name(v)}" for k, v in seen.items()),
                       ", ".join(f"{k} -> {v.name}" for k, v in want.items()))
    finally:
        await _close(m)


SCENARIOS = {
    "kip848-join-ack-leave": join_ack_leave,
    "kip848-fenced-and-invalid": fenced_and_invalid,
    "kip848-revoke-before-assign": revoke_before_assign,
    "kip848-static-leave-and-return": static_leave_and_return,
    "kip848-offset-commit-epochs": offset_commit_epochs,
}
