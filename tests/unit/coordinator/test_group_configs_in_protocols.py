"""Per-group configs (kcoord.group_configs) as the consumer and streams group protocols read them
(CoordinatorContext.group_config): a group's own value wins over the broker's, within the broker's
bounds. Set and described over the wire in tests/integration/test_group_configs.py."""
from __future__ import annotations

from kcoord.config import ServerConfig
from kcoord.coordinator.events import EventKind as K
from kcoord.coordinator.streams.group import StreamsGroupState
from kcoord.group_configs import GroupConfigs
from tests.unit.coordinator.consumer_harness import ConsumerHarness, Topics
from tests.unit.coordinator.test_consumer_protocol import two_members_stable
from tests.unit.coordinator.test_streams_protocol import StreamsHarness, topology

CHANGELOG = "app-store-changelog"


def _stateful_streams(store: GroupConfigs | None) -> StreamsHarness:
    """Two members of different processes on one subtopology whose changelog topic exists: its
    tasks are stateful, so standby replicas have somewhere to go."""
    h = StreamsHarness(Topics(**{"in": 4, CHANGELOG: 4}))
    h.c.ctx.group_configs = store
    return h


def _partitions(task_list) -> set[int]:
    return {p for t in task_list for p in t["partitions"]}


def _two_members(h: StreamsHarness) -> dict:
    """m1 (process p1) and m2 (p2) join and heartbeat, each reporting what it was last told, until
    the group is stable; what each was told: member -> (active tasks, standby tasks)."""
    topo = topology(changelog=CHANGELOG)
    h.hb("m1", topo=topo, process="p1")
    h.hb("m2", topo=topo, process="p2")
    told = {"m1": ([], []), "m2": ([], [])}
    for _ in range(4):
        for member, process in (("m1", "p1"), ("m2", "p2")):
            r = h.hb(member, h.group().members[member].member_epoch, process=process, owned=told[member])
            if r.active_tasks is not None:
                told[member] = (r.active_tasks, r.standby_tasks or [])
    assert h.group().state is StreamsGroupState.STABLE
    return {m: (_partitions(active), _partitions(standby)) for m, (active, standby) in told.items()}


def test_a_groups_own_num_standby_replicas_gives_its_members_standby_tasks():
    store = GroupConfigs(ServerConfig())
    store.replace("app", store.altered("app", [("streams.num.standby.replicas", 0, "1")]))
    told = _two_members(_stateful_streams(store))
    # Every task active once and standby once, never both on one process.
    assert told["m1"][1] | told["m2"][1] == {0, 1, 2, 3}
    assert all(not active & standby for active, standby in told.values())


def test_without_the_config_the_brokers_zero_standbys_stand():
    told = _two_members(_stateful_streams(GroupConfigs(ServerConfig())))
    assert told["m1"][1] == told["m2"][1] == set()
    assert told["m1"][0] | told["m2"][0] == {0, 1, 2, 3}


def test_changing_num_standby_replicas_bumps_the_group_epoch_at_the_next_heartbeat():
    """As Kafka: the group's assignment configs changed, so the next heartbeat computes a new
    target assignment."""
    store = GroupConfigs(ServerConfig())
    h = _stateful_streams(store)
    _two_members(h)
    before = h.group().group_epoch
    store.replace("app", {"streams.num.standby.replicas": "1"})
    h.hb("m1", h.group().members["m1"].member_epoch, process="p1")
    assert h.group().group_epoch == before + 1
    assert h.group().last_assignment_configs == {"num.standby.replicas": "1"}


def test_streams_heartbeat_interval_and_session_timeout_are_the_groups():
    store = GroupConfigs(ServerConfig(group_streams_min_session_timeout_ms=1000))
    store.replace("app", {"streams.heartbeat.interval.ms": "6000", "streams.session.timeout.ms": "20000"})
    h = _stateful_streams(store)
    _two_members(h)
    assert h.hb("m1", h.group().members["m1"].member_epoch, process="p1").heartbeat_interval_ms == 6000
    for _ in range(3):   # m1 keeps heartbeating; m2 stops
        h.timer.advance(7000)
        h.hb("m1", h.group().members["m1"].member_epoch, process="p1")
    assert "m2" not in h.group().members


def test_a_consumer_groups_own_session_timeout_fences_a_member_at_that_timeout():
    store = GroupConfigs(ServerConfig(group_consumer_min_session_timeout_ms=1000))
    store.replace("g", store.altered("g", [("consumer.session.timeout.ms", 0, "12000")]))
    h = ConsumerHarness(consumer_session_timeout_ms=45000)
    h.c.ctx.group_configs = store
    two_members_stable(h)
    h.advance(11000)
    h.hb("m1", 3, owned={"t": [0, 2]}, partial=True)
    assert "m2" in h.group().members        # within its 12 s
    h.advance(1000)
    assert "m2" not in h.group().members    # at 12 s, far short of the broker's 45 s
    assert any(e.kind is K.MEMBER_EXPIRED and e.member_id == "m2" for e in h.events)


def test_a_consumer_groups_own_heartbeat_interval_is_what_members_are_told():
    store = GroupConfigs(ServerConfig())
    store.replace("g", {"consumer.heartbeat.interval.ms": "7000"})
    h = ConsumerHarness()
    h.c.ctx.group_configs = store
    assert h.hb("m1", 0).heartbeat_interval_ms == 7000
    assert h.hb("m1", 0, group="other").heartbeat_interval_ms == 5000   # the broker's, for a group without


def test_a_value_outside_bounds_narrowed_since_it_was_set_is_capped(tmp_path):
    """Kafka's GroupConfig.evaluate: the broker restarted with a lower group.streams.max.standby.replicas
    than a group's stored value gets the maximum, with a warning."""
    wide = GroupConfigs(ServerConfig(), str(tmp_path))
    wide.replace("app", wide.altered("app", [("streams.num.standby.replicas", 0, "2"),
                                             ("consumer.session.timeout.ms", 0, "50000")]))
    narrow = GroupConfigs(ServerConfig(group_streams_max_standby_replicas=1,
                                       group_consumer_max_session_timeout_ms=48000), str(tmp_path))
    narrow.load()
    assert narrow.configs("app") == {"streams.num.standby.replicas": "2", "consumer.session.timeout.ms": "50000"}
    assert narrow.effective("app") == {"streams.num.standby.replicas": 1, "consumer.session.timeout.ms": 48000}
    assert narrow.effective("nobody") == {}
