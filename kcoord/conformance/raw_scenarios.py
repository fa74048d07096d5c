"""Raw-protocol conformance scenarios: group APIs spoken byte for byte through `wire/`.

Each scenario gets a `Broker` (bootstrap address + negotiated versions) and
returns a `Outcome`: passed, what the broker did, what Kafka does. Timeouts are
generous because a real broker delays a new group's first rebalance by
group.initial.rebalance.delay.ms (3 s by default).
"""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from kcoord.conformance.rawclient import RawConnection
from wire.errors import ErrorCode as E

JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH, FIND, CREATE, API_VERSIONS, METADATA = 11, 14, 12, 13, 8, 9, 10, 19, 18, 3
# Versions the scenarios speak (downgraded to what the broker advertises).
PREFERRED = {JOIN: 5, SYNC: 3, HEARTBEAT: 3, LEAVE: 3, COMMIT: 7, FETCH: 5, FIND: 2, CREATE: 4, METADATA: 4}
# How long a new topic may take to reach every broker's metadata (a loaded reference Kafka is slow).
TOPIC_READY_S = 30.0
SESSION_MS, REBALANCE_MS = 10000, 30000


@dataclass
class Outcome:
    passed: bool
    observed: str
    expected: str
    skipped: bool = False


class Broker:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.versions: dict[int, tuple[int, int]] = {}
        self.coordinator: dict[str, tuple[str, int]] = {}

    async def probe(self) -> None:
        async with RawConnection(self.host, self.port) as c:
            r = await c.call(API_VERSIONS, 0, {})
            self.versions = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}

    def version(self, api: int, preferred: int | None = None) -> int:
        low, high = self.versions.get(api, (0, -1))
        want = PREFERRED.get(api, 0) if preferred is None else preferred
        if high < low or want < low:
            raise Unsupported(f"api {api} v{want} not advertised (broker: {low}-{high})")
        return min(want, high)

    async def connect(self, group: str) -> RawConnection:
        if group not in self.coordinator:
            async with RawConnection(self.host, self.port) as c:
                v = self.version(FIND)
                for _ in range(60):
                    r = await c.call(FIND, v, {"key": group, "key_type": 0})
                    if r.error_code == 0:
                        break
                    await asyncio.sleep(0.5)  # COORDINATOR_NOT_AVAILABLE while the offsets topic loads
                else:
                    raise AssertionError(f"FindCoordinator({group}) kept failing: {E(r.error_code).name}")
                self.coordinator[group] = (r.host, r.port)
        host, port = self.coordinator[group]
        return await RawConnection(host, port).open()


class Unsupported(Exception):
    pass


def _gid(name: str) -> str:
    return f"kcoord-check-{name}-{uuid.uuid4().hex[:8]}"


def _name(code: int) -> str:
    try:
        return E(code).name
    except ValueError:
        return str(code)


class Member:
    """One simulated consumer: its own connection, member id and generation."""

    def __init__(self, broker: Broker, group: str, instance_id: str | None = None,
                 protocols=(("range", b"\x00\x01"),), session_ms: int = SESSION_MS,
                 rebalance_ms: int = REBALANCE_MS, protocol_type: str = "consumer"):
        self.broker, self.group, self.instance_id = broker, group, instance_id
        self.protocols, self.session_ms, self.rebalance_ms = protocols, session_ms, rebalance_ms
        self.protocol_type = protocol_type
        self.member_id, self.generation, self.leader, self.protocol = "", -1, "", None
        self.members: list = []
        self.conn: RawConnection | None = None
        self.last = None

    async def open(self):
        self.conn = await self.broker.connect(self.group)
        return self

    async def close(self):
        if self.conn is not None:
            await self.conn.close()

    async def join_once(self, version: int | None = None):
        v = self.broker.version(JOIN) if version is None else version
        body = {"group_id": self.group, "session_timeout_ms": self.session_ms, "rebalance_timeout_ms": self.rebalance_ms,
                "member_id": self.member_id, "group_instance_id": self.instance_id,
                "protocol_type": self.protocol_type,
                "protocols": [{"name": n, "metadata": m} for n, m in self.protocols], "reason": None}
        for _ in range(150):
            r = await self.conn.call(JOIN, v, body)
            # A broker that has just started may still be loading the group's offsets partition
            # although FindCoordinator already names it; clients retry this, so do we.
            if r.error_code != E.COORDINATOR_LOAD_IN_PROGRESS:
                break
            await asyncio.sleep(0.2)
        self.last = r
        if r.member_id:
            self.member_id = r.member_id
        if r.error_code == 0:
            self.generation, self.leader, self.protocol = r.generation_id, r.leader, r.protocol_name
            self.members = list(r.members)
        return r

    async def join(self, version: int | None = None):
        """JoinGroup, retrying once on MEMBER_ID_REQUIRED as clients do."""
        r = await self.join_once(version)
        if r.error_code == E.MEMBER_ID_REQUIRED:
            r = await self.join_once(version)
        return r

    async def sync(self, assignments=None, version: int | None = None):
        v = self.broker.version(SYNC) if version is None else version
        body = {"group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": self.instance_id, "protocol_type": self.protocol_type,
                "protocol_name": self.protocol,
                "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or [])]}
        r = await self.conn.call(SYNC, v, body)
        self.last = r
        return r

    async def heartbeat(self, generation: int | None = None, member_id: str | None = None):
        return await self.conn.call(HEARTBEAT, self.broker.version(HEARTBEAT), {
            "group_id": self.group, "generation_id": self.generation if generation is None else generation,
            "member_id": self.member_id if member_id is None else member_id,
            "group_instance_id": self.instance_id})

    async def leave(self):
        v = self.broker.version(LEAVE)
        body = ({"group_id": self.group, "member_id": self.member_id} if v < 3 else
                {"group_id": self.group, "members": [{"member_id": self.member_id,
                                                       "group_instance_id": self.instance_id}]})
        return await self.conn.call(LEAVE, v, body)

    async def stable(self):
        """Join then sync (the leader assigns nothing to anyone); like a client, rejoin
        when the sync says REBALANCE_IN_PROGRESS (Kafka does not, but some brokers do)."""
        for _ in range(5):
            r = await self.join()
            if r.error_code:
                raise AssertionError(f"JoinGroup failed: {_name(r.error_code)}")
            assignments = [(m.member_id, b"") for m in self.members] if self.leader == self.member_id else []
            s = await self.sync(assignments)
            if s.error_code != E.REBALANCE_IN_PROGRESS:
                break
        if s.error_code:
            raise AssertionError(f"SyncGroup failed: {_name(s.error_code)}")
        return self


async def _members(broker, group, n, **kw) -> list[Member]:
    return [await Member(broker, group, **kw).open() for _ in range(n)]


async def _rejoin_when_told(m: Member) -> None:
    """Heartbeat like a client until the coordinator says a rebalance is on, then rejoin."""
    for _ in range(300):
        h = await m.heartbeat()
        if h.error_code == E.REBALANCE_IN_PROGRESS:
            break
        if h.error_code:
            raise AssertionError(f"heartbeat while waiting for a rebalance: {_name(h.error_code)}")
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("no rebalance announced within 30 s")
    r = await m.join()
    if r.error_code:
        raise AssertionError(f"rejoin failed: {_name(r.error_code)}")


async def _sync_all(members: list[Member]) -> None:
    leader = next(m for m in members if m.leader == m.member_id)
    syncs = await asyncio.gather(*(m.sync([(x.member_id, b"") for x in leader.members] if m is leader else [])
                                   for m in members))
    bad = [_name(s.error_code) for s in syncs if s.error_code]
    if bad:
        raise AssertionError(f"SyncGroup failed: {bad}")


async def _join_all(members: list[Member], *, sync_last: bool = False) -> None:
    """Bring `members` into one generation the way consumers started one after another do:
    each newcomer's join starts a rebalance, the members already in learn of it from their
    heartbeat and rejoin. Joining them all at once instead races the coordinator's
    group.initial.rebalance.delay.ms timer: at delay 0 a real Kafka often completes the first
    join alone, so generations (and transcripts) would depend on thread timing."""
    joined: list[Member] = []
    for m in members:
        results = await asyncio.gather(m.join(), *(_rejoin_when_told(x) for x in joined))
        if results[0].error_code:
            raise AssertionError(f"JoinGroup failed: {_name(results[0].error_code)}")
        joined.append(m)
        if len(joined) < len(members) or sync_last:
            await _sync_all(joined)


async def _close(*members):
    for m in members:
        await m.close()


# ----------------------------------------------------------------- scenarios
async def member_id_required(b: Broker) -> Outcome:
    if b.version(JOIN) < 4:
        return Outcome(True, "JoinGroup < v4 only", "MEMBER_ID_REQUIRED from v4", skipped=True)
    m = await Member(b, _gid("mir")).open()
    try:
        r = await m.join_once()
        ok = r.error_code == E.MEMBER_ID_REQUIRED and bool(r.member_id)
        return Outcome(ok, f"first join -> {_name(r.error_code)}, member id {'given' if r.member_id else 'empty'}",
                       "first join -> MEMBER_ID_REQUIRED, member id given")
    finally:
        await m.close()


async def single_member_stable(b: Broker) -> Outcome:
    m = await Member(b, _gid("single")).open()
    try:
        await m.stable()
        h = await m.heartbeat()
        ok = m.leader == m.member_id and m.generation == 1 and h.error_code == 0
        return Outcome(ok, f"leader={m.leader == m.member_id} generation={m.generation} heartbeat={_name(h.error_code)}",
                       "leader=True generation=1 heartbeat=NONE")
    finally:
        await m.close()


async def unknown_member_id(b: Broker) -> Outcome:
    m = await Member(b, _gid("unknown")).open()
    try:
        await m.stable()
        h = await m.heartbeat(member_id="not-a-member")
        s_out = await m.conn.call(SYNC, b.version(SYNC), {"group_id": m.group, "generation_id": m.generation,
                                                         "member_id": "not-a-member", "assignments": []})
        ok = h.error_code == E.UNKNOWN_MEMBER_ID and s_out.error_code == E.UNKNOWN_MEMBER_ID
        return Outcome(ok, f"heartbeat -> {_name(h.error_code)}, sync -> {_name(s_out.error_code)}",
                       "heartbeat -> UNKNOWN_MEMBER_ID, sync -> UNKNOWN_MEMBER_ID")
    finally:
        await m.close()


async def illegal_generation(b: Broker) -> Outcome:
    m = await Member(b, _gid("generation")).open()
    try:
        await m.stable()
        h = await m.heartbeat(generation=m.generation + 5)
        ok = h.error_code == E.ILLEGAL_GENERATION
        return Outcome(ok, f"heartbeat with a wrong generation -> {_name(h.error_code)}",
                       "heartbeat with a wrong generation -> ILLEGAL_GENERATION")
    finally:
        await m.close()


async def rebalance_in_progress_and_early_completion(b: Broker) -> Outcome:
    """Two stable members; one rejoins with new metadata: the other's heartbeat says
    REBALANCE_IN_PROGRESS, and the join completes as soon as both rejoin (not at the timeout)."""
    a, c = await _members(b, _gid("rip"), 2)
    try:
        await _join_all([a, c], sync_last=True)
        gen = a.generation
        a.protocols = (("range", b"\x00\x02"),)  # changed subscription: the leader must rebalance
        loop = asyncio.get_running_loop()
        start = loop.time()
        rejoin = asyncio.ensure_future(a.join())
        code = None
        for _ in range(100):
            h = await c.heartbeat()
            code = h.error_code
            if code == E.REBALANCE_IN_PROGRESS:
                break
            await asyncio.sleep(0.2)
        await c.join()
        await rejoin
        took = loop.time() - start
        ok = code == E.REBALANCE_IN_PROGRESS and a.generation == gen + 1 and took < REBALANCE_MS / 1000 / 2
        return Outcome(ok, f"heartbeat -> {_name(code)}, new generation {a.generation - gen:+d} "
                           f"after {took:.1f}s (rebalance timeout {REBALANCE_MS // 1000}s)",
                       "heartbeat -> REBALANCE_IN_PROGRESS, new generation +1 as soon as all rejoined")
    finally:
        await _close(a, c)


async def static_replacement(b: Broker) -> Outcome:
    """A static member rejoining with a new member id replaces the old one without a
    rebalance; the old id is fenced."""
    group = _gid("static")
    a = await Member(b, group, instance_id="instance-1").open()
    a2 = await Member(b, group, instance_id="instance-1").open()
    try:
        await a.stable()
        r = await a2.join()
        same_gen = r.error_code == 0 and a2.generation == a.generation
        await a2.sync([(a2.member_id, b"")] if a2.leader == a2.member_id else [])
        old = await a.heartbeat()
        new = await a2.heartbeat()
        ok = same_gen and old.error_code == E.FENCED_INSTANCE_ID and new.error_code == 0 and a2.member_id != a.member_id
        return Outcome(ok, f"rejoin -> {_name(r.error_code)} generation {'unchanged' if same_gen else 'changed'}; "
                           f"old id heartbeat -> {_name(old.error_code)}, new -> {_name(new.error_code)}",
                       "rejoin -> NONE generation unchanged; old id heartbeat -> FENCED_INSTANCE_ID, new -> NONE")
    finally:
        await _close(a, a2)


async def inconsistent_group_protocol(b: Broker) -> Outcome:
    group = _gid("inconsistent")
    a = await Member(b, group).open()
    other = await Member(b, group, protocols=(("roundrobin", b""),)).open()
    other_type = await Member(b, group, protocol_type="connect").open()
    try:
        await a.stable()
        r1 = await other.join()
        r2 = await other_type.join()
        ok = r1.error_code == E.INCONSISTENT_GROUP_PROTOCOL and r2.error_code == E.INCONSISTENT_GROUP_PROTOCOL
        return Outcome(ok, f"no common protocol -> {_name(r1.error_code)}, other protocol type -> {_name(r2.error_code)}",
                       "no common protocol -> INCONSISTENT_GROUP_PROTOCOL, other protocol type -> INCONSISTENT_GROUP_PROTOCOL")
    finally:
        await _close(a, other, other_type)


async def invalid_session_timeout(b: Broker) -> Outcome:
    group = _gid("session")
    low = await Member(b, group, session_ms=1).open()
    high = await Member(b, group, session_ms=24 * 3600 * 1000).open()
    try:
        r1 = await low.join()
        r2 = await high.join()
        ok = r1.error_code == E.INVALID_SESSION_TIMEOUT and r2.error_code == E.INVALID_SESSION_TIMEOUT
        return Outcome(ok, f"session 1 ms -> {_name(r1.error_code)}, 24 h -> {_name(r2.error_code)}",
                       "session 1 ms -> INVALID_SESSION_TIMEOUT, 24 h -> INVALID_SESSION_TIMEOUT")
    finally:
        await _close(low, high)


async def protocol_vote(b: Broker) -> Outcome:
    """Members vote for their first protocol all members support: two prefer `y`, one `x`."""
    group = _gid("vote")
    ms = [await Member(b, group, protocols=p).open()
          for p in ((("x", b""), ("y", b"")), (("y", b""), ("x", b"")), (("y", b""), ("x", b""), ("z", b"")))]
    try:
        await _join_all(ms)
        chosen = {m.protocol for m in ms}
        return Outcome(chosen == {"y"}, f"chosen {sorted(c or '' for c in chosen)}", "chosen ['y']")
    finally:
        await _close(*ms)


async def skip_assignment(b: Broker) -> Outcome:
    """KIP-814: a static leader replaced (JoinGroup v9) learns the members but is told to skip assigning."""
    low, high = b.versions.get(JOIN, (0, -1))
    if high < 9:
        return Outcome(True, f"JoinGroup v{high} at most", "skip_assignment from JoinGroup v9", skipped=True)
    group = _gid("kip814")
    a = await Member(b, group, instance_id="leader").open()
    a2 = await Member(b, group, instance_id="leader").open()
    try:
        await a.join(version=9)
        await a.sync([(a.member_id, b"")], version=min(5, b.versions.get(SYNC, (0, 0))[1]))
        r2 = await a2.join(version=9)
        ok = (r2.error_code == 0 and r2.leader == a2.member_id and r2.get("skip_assignment") is True
              and len(r2.members) == 1 and a2.generation == a.generation)
        return Outcome(ok, f"{_name(r2.error_code)} leader={r2.leader == a2.member_id} "
                           f"skip_assignment={r2.get('skip_assignment')} members={len(r2.members)}",
                       "NONE leader=True skip_assignment=True members=1")
    finally:
        await _close(a, a2)


async def static_leader_rejoin_before_v9(b: Broker) -> Outcome:
    """A static leader replaced with JoinGroup v5-v8 (no KIP-814) is told the old leader id and no
    members, so it syncs as a follower and the Stable group does not rebalance."""
    low, high = b.versions.get(JOIN, (0, -1))
    if high < 5:
        return Outcome(True, f"JoinGroup v{high} at most", "static members from JoinGroup v5", skipped=True)
    version = min(high, 8)
    group = _gid("staticleader")
    a = await Member(b, group, instance_id="leader").open()
    a2 = await Member(b, group, instance_id="leader").open()
    try:
        await a.join(version=version)
        await a.sync([(a.member_id, b"mine")], version=min(5, b.versions.get(SYNC, (0, 0))[1]))
        r2 = await a2.join(version=version)
        s2 = await a2.sync(version=min(5, b.versions.get(SYNC, (0, 0))[1]))
        ok = (r2.error_code == 0 and r2.leader == a.member_id != a2.member_id and len(r2.members) == 0
              and a2.generation == a.generation and s2.error_code == 0 and s2.assignment == b"mine")
        return Outcome(ok, f"{_name(r2.error_code)} leader={'old id' if r2.leader == a.member_id else 'new id'} "
                           f"members={len(r2.members)} same generation={a2.generation == a.generation} "
                           f"sync {_name(s2.error_code)} kept assignment={s2.assignment == b'mine'}",
                       "NONE leader=old id members=0 same generation=True sync NONE kept assignment=True")
    finally:
        await _close(a, a2)


async def pending_sync_expiry(b: Broker) -> Outcome:
    """A follower that never syncs is removed after the rebalance timeout; the group rebalances."""
    group = _gid("pendingsync")
    # 6 s: the leader must sync within the rebalance timeout too, and with every raw scenario
    # running at once in a loaded full run its SyncGroup once came after 2 s, on both brokers.
    a = await Member(b, group, rebalance_ms=6000).open()
    f = await Member(b, group, rebalance_ms=6000).open()
    try:
        await _join_all([a, f])
        leader, follower = (a, f) if a.leader == a.member_id else (f, a)
        await leader.sync([(m.member_id, b"") for m in leader.members])
        code = None
        for _ in range(150):  # 30 s
            h = await leader.heartbeat()
            code = h.error_code
            if code == E.REBALANCE_IN_PROGRESS:
                break
            await asyncio.sleep(0.2)
        await leader.join()
        fh = await follower.heartbeat()
        ok = code == E.REBALANCE_IN_PROGRESS and len(leader.members) == 1 and fh.error_code == E.UNKNOWN_MEMBER_ID
        return Outcome(ok, f"leader heartbeat -> {_name(code)}, rejoin members={len(leader.members)}, "
                           f"follower -> {_name(fh.error_code)}",
                       "leader heartbeat -> REBALANCE_IN_PROGRESS, rejoin members=1, follower -> UNKNOWN_MEMBER_ID")
    finally:
        await _close(a, f)


async def _create_topic(b: Broker, topic: str, partitions: int = 1) -> None:
    async with RawConnection(b.host, b.port) as c:
        r = await c.call(CREATE, b.version(CREATE), {"topics": [{"name": topic, "num_partitions": partitions,
                                                                "replication_factor": 1, "assignments": [],
                                                                "configs": []}], "timeout_ms": 10000})
        code = r.topics[0].error_code
        if code not in (0, E.TOPIC_ALREADY_EXISTS):
            raise AssertionError(f"CreateTopics({topic}) -> {_name(code)}")
    await _until_known(b, topic, partitions)


async def _until_known(b: Broker, topic: str, partitions: int) -> None:
    """Until every broker's metadata has the topic with a leader for each partition: Kafka
    answers CreateTopics before its brokers' metadata caches have the topic, and an OffsetCommit
    meanwhile gets UNKNOWN_TOPIC_OR_PARTITION (seen on a loaded reference Kafka in CI)."""
    deadline = asyncio.get_running_loop().time() + TOPIC_READY_S
    pending = [(b.host, b.port)]
    seen: set[tuple[str, int]] = set()
    while pending:
        host, port = pending[0]
        async with RawConnection(host, port) as c:
            r = await c.call(METADATA, b.version(METADATA), {"topics": [{"name": topic}],
                                                              "allow_auto_topic_creation": False})
        t = r.topics[0] if r.topics else None
        if t is not None and t.error_code == 0 and len(t.partitions) == partitions \
                and all(p.leader_id >= 0 for p in t.partitions):
            seen.add((host, port))
            pending = [(n.host, n.port) for n in r.brokers if (n.host, n.port) not in seen]
            continue
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{topic} not in the metadata of {host}:{port} within {TOPIC_READY_S:.0f}s")
        await asyncio.sleep(0.1)


async def _fetch(conn, b, group, topic):
    v = b.version(FETCH)
    r = await conn.call(FETCH, v, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]})
    return r.error_code, r.topics[0].partitions[0].committed_offset if r.topics else None


async def offsets_of_empty_group(b: Broker) -> Outcome:
    """After the last member leaves, the Empty group still takes commits from a
    standalone consumer (generation -1) and returns them."""
    group, topic = _gid("offsets"), _gid("topic")
    await _create_topic(b, topic)
    m = await Member(b, group).open()
    try:
        await m.stable()
        await m.leave()
        c = await m.conn.call(COMMIT, b.version(COMMIT), {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 42,
                                                        "committed_metadata": "m"}]}]})
        code = c.topics[0].partitions[0].error_code
        fcode, offset = await _fetch(m.conn, b, group, topic)
        stale = await m.conn.call(COMMIT, b.version(COMMIT), {
            "group_id": group, "generation_id_or_member_epoch": 1, "member_id": m.member_id,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 7}]}]})
        scode = stale.topics[0].partitions[0].error_code
        ok = code == 0 and fcode == 0 and offset == 42 and scode == E.UNKNOWN_MEMBER_ID
        return Outcome(ok, f"commit gen -1 -> {_name(code)}, fetch -> {offset}; old member commit -> {_name(scode)}",
                       "commit gen -1 -> NONE, fetch -> 42; old member commit -> UNKNOWN_MEMBER_ID")
    finally:
        await m.close()


_OWN = object()


async def _commit(m: Member, topic: str, *, generation: int | None = None, member_id: str | None = None,
                  instance_id=_OWN) -> int:
    r = await m.conn.call(COMMIT, m.broker.version(COMMIT), {
        "group_id": m.group, "generation_id_or_member_epoch": m.generation if generation is None else generation,
        "member_id": m.member_id if member_id is None else member_id,
        "group_instance_id": m.instance_id if instance_id is _OWN else instance_id,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1}]}]})
    return r.topics[0].partitions[0].error_code


async def offset_commit_errors(b: Broker) -> Outcome:
    """OffsetCommit is validated like a heartbeat: wrong generation, unknown member, a
    member-less commit into a live group, a replaced static member's old id, and a commit
    while the group waits for its leader's assignment (CompletingRebalance)."""
    if b.version(COMMIT) < 7:
        return Outcome(True, f"OffsetCommit v{b.version(COMMIT)} at most", "group_instance_id from v7", skipped=True)
    group, topic = _gid("commiterrors"), _gid("topic")
    await _create_topic(b, topic)
    s = await Member(b, group, instance_id="s").open()
    s2 = await Member(b, group, instance_id="s").open()
    d = await Member(b, group).open()
    try:
        await s.stable()
        seen = {"right": await _commit(s, topic),
                "generation+1": await _commit(s, topic, generation=s.generation + 1),
                "unknown member": await _commit(s, topic, member_id="nobody", instance_id=None),
                "no member in a live group": await _commit(s, topic, generation=-1, member_id="", instance_id=None)}
        await s2.join()  # replaces s (same instance id, no rebalance): s's id is fenced
        seen["replaced static id"] = await _commit(s, topic)
        # A dynamic member joins: once both have joined, the group awaits the leader's sync.
        await d.join_once()
        await asyncio.gather(d.join(), s2.join())
        seen["while CompletingRebalance"] = await _commit(d, topic)
        want = {"right": E.NONE, "generation+1": E.ILLEGAL_GENERATION, "unknown member": E.UNKNOWN_MEMBER_ID,
                "no member in a live group": E.UNKNOWN_MEMBER_ID, "replaced static id": E.FENCED_INSTANCE_ID,
                "while CompletingRebalance": E.REBALANCE_IN_PROGRESS}
        return Outcome(seen == want, ", ".join(f"{k} -> {_name(v)}" for k, v in seen.items()),
                       ", ".join(f"{k} -> {v.name}" for k, v in want.items()))
    finally:
        await _close(s, s2, d)


async def leave_group(b: Broker) -> Outcome:
    group = _gid("leave")
    a, c = await _members(b, group, 2)
    try:
        await _join_all([a, c], sync_last=True)
        r = await c.leave()
        code = r.error_code if b.version(LEAVE) < 3 else (r.error_code or r.members[0].error_code)
        h = await a.heartbeat()
        c.member_id = "gone-" + c.member_id
        r2 = await c.leave()
        code2 = r2.error_code if b.version(LEAVE) < 3 else (r2.error_code or (r2.members[0].error_code if r2.members else 0))
        ok = code == 0 and h.error_code == E.REBALANCE_IN_PROGRESS and code2 == E.UNKNOWN_MEMBER_ID
        return Outcome(ok, f"leave -> {_name(code)}, other's heartbeat -> {_name(h.error_code)}, "
                           f"unknown leaver -> {_name(code2)}",
                       "leave -> NONE, other's heartbeat -> REBALANCE_IN_PROGRESS, unknown leaver -> UNKNOWN_MEMBER_ID")
    finally:
        await _close(a, c)


SCENARIOS = {
    "member-id-required": member_id_required,
    "single-member-stable": single_member_stable,
    "unknown-member-id": unknown_member_id,
    "illegal-generation": illegal_generation,
    "rebalance-in-progress+early-join": rebalance_in_progress_and_early_completion,
    "static-replacement+fenced-instance": static_replacement,
    "inconsistent-group-protocol": inconsistent_group_protocol,
    "invalid-session-timeout": invalid_session_timeout,
    "protocol-vote": protocol_vote,
    "kip-814-skip-assignment": skip_assignment,
    "static-leader-rejoin-before-v9": static_leader_rejoin_before_v9,
    "pending-sync-expiry": pending_sync_expiry,
    "offsets-of-empty-group": offsets_of_empty_group,
    "offset-commit-errors": offset_commit_errors,
    "leave-group": leave_group,
}

# The consumer group protocol's scenarios (KIP-848) live in a module of their own; it builds
# on this one's Broker and Outcome, so it is imported last.
from kcoord.conformance.consumer_protocol_scenarios import SCENARIOS as _CONSUMER_PROTOCOL  # noqa: E402

SCENARIOS.update(_CONSUMER_PROTOCOL)

# The streams groups' scenarios (KIP-1071), likewise built on this module's Broker and Outcome.
from kcoord.conformance.streams_group_scenarios import SCENARIOS as _STREAMS_GROUPS  # noqa: E402

SCENARIOS.update(_STREAMS_GROUPS)

# The share groups' scenarios (KIP-932), likewise built on this module's Broker and Outcome.
from kcoord.conformance.share_group_scenarios import SCENARIOS as _SHARE_GROUPS  # noqa: E402

SCENARIOS.update(_SHARE_GROUPS)
