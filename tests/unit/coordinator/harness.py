"""Drive the coordinator by hand: a manual clock, no sockets, no sleeps."""
from __future__ import annotations

from kcoord.coordinator import (
    CoordinatorConfig, EventBus, GroupCoordinator, HeartbeatRequest, JoinRequest, LeaveMember, ManualTimer,
    OffsetCommitPartition, OffsetCommitRequest, SyncRequest,
)
from wire.errors import ErrorCode


class Topics:
    def __init__(self, **topics):
        self.topics = topics or {"t": 3}

    def partition_exists(self, topic, partition):
        return 0 <= partition < self.topics.get(topic, 0)


class Box:
    """A parked request's answer, once it comes."""

    def __init__(self):
        self.result = None
        self.calls = 0

    def __call__(self, result):
        self.result = result
        self.calls += 1

    @property
    def done(self):
        return self.result is not None

    @property
    def error(self):
        return self.result.error


class Harness:
    def __init__(self, **config):
        config.setdefault("initial_rebalance_delay_ms", 0)
        self.timer = ManualTimer()
        self.events = []
        bus = EventBus()
        bus.subscribe(self.events.append)
        self.c = GroupCoordinator(self.timer, CoordinatorConfig(**config), Topics(), bus)

    def advance(self, ms):
        self.timer.advance(ms)
        self.check_counts()

    def check_counts(self):
        """A classic group's kept counts (members awaiting a join, members naming each protocol)
        equal what walking its members gives."""
        for g in self.c.ctx.groups.values():
            members = list(g.members.values())
            assert g.awaiting_join_count() == sum(1 for m in members if m.join_callback is not None), g.group_id
            walked = set.intersection(*(set(m.protocol_names()) for m in members)) if members else set()
            assert g.candidate_protocols() == walked, g.group_id

    def group(self, g="g"):
        return self.c.group(g)

    def join(self, member_id="", group="g", instance=None, protocols=(("range", b"meta"),), session=10000,
             rebalance=30000, version=9, client="client", protocol_type="consumer", reason=None):
        box = Box()
        self.c.join_group(JoinRequest(group, member_id, instance, protocol_type, list(protocols), session, rebalance,
                                      client, "/127.0.0.1", require_known_member_id=version >= 4,
                                      supports_skip_assignment=version >= 9, reason=reason), box)
        self.check_counts()
        return box

    def join_new(self, **kw):
        """A dynamic member's two-step join (KIP-394); returns the parked second join."""
        first = self.join(**kw)
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED
        kw.pop("member_id", None)
        return self.join(member_id=first.result.member_id, **kw)

    def sync(self, member_id, generation, group="g", assignments=None, instance=None, protocol_type=None,
             protocol_name=None):
        box = Box()
        self.c.sync_group(SyncRequest(group, member_id, generation, instance, protocol_type, protocol_name,
                                      assignments or {}), box)
        self.check_counts()
        return box

    def heartbeat(self, member_id, generation, group="g", instance=None):
        return self.c.heartbeat(HeartbeatRequest(group, member_id, generation, instance))

    def leave(self, *members, group="g"):
        result = self.c.leave_group(group, [m if isinstance(m, LeaveMember) else LeaveMember(m, None)
                                            for m in members])
        self.check_counts()
        return result

    def commit(self, member_id="", generation=-1, group="g", offsets=(("t", 0, 10),), instance=None, version=9,
               metadata=""):
        return self.c.commit_offsets(OffsetCommitRequest(
            group, member_id, generation, instance,
            [OffsetCommitPartition(t, p, o, -1, metadata) for t, p, o in offsets], version=version))

    def stable_group(self, n=1, **kw):
        """n dynamic members, joined and synced; returns their member ids (leader first)."""
        boxes = [self.join_new(**kw) for _ in range(n)]
        for _ in range(100):
            if all(b.done for b in boxes):
                break
            self.advance(1000)
        assert all(b.done and b.error == ErrorCode.NONE for b in boxes), [b.result for b in boxes]
        ids = [b.result.member_id for b in boxes]
        gen = boxes[0].result.generation_id
        leader = boxes[0].result.leader_id
        syncs = [self.sync(m, gen, assignments={m: f"assign-{m}".encode() for m in ids} if m == leader else None)
                 for m in ids]
        assert all(s.done and s.error == ErrorCode.NONE for s in syncs)
        return [leader] + [m for m in ids if m != leader]

    def kinds(self):
        return [e.kind for e in self.events]
