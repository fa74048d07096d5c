"""ShareManager, what the ShareFetch/ShareAcknowledge handlers call: share-partitions started
from the group's share.auto.offset.reset or from __share_group_state, acknowledgements durable
before they are answered, a member's records released, watchers woken, a kcoord killed and
started again from its data dir (nothing acknowledged delivered again, nothing acquired lost),
and the admin views (describe, alter, delete)."""
from __future__ import annotations

import asyncio

from kcoord.config import ServerConfig
from kcoord.coordinator.clock import ManualTimer
from kcoord.group_configs import GroupConfigs
from kcoord.log.topics import InternalTopic, TopicStore
from kcoord.app import Kcoord
from kcoord.share.manager import AckBatch, ShareManager
from kcoord.share.records import AVAILABLE, StateBatch
from kcoord.share.partition import ACCEPT, RELEASE
from kcoord.share.state import TOPIC, TOPIC_CONFIGS, ShareStateRuntime
from kcoord.storage.durable_state import DurableState
from wire import records as R
from wire.errors import ErrorCode

KEY = ("t", 0)


def store(data_dir=None) -> TopicStore:
    topics = TopicStore()
    topics.internal[TOPIC] = InternalTopic(3, dict(TOPIC_CONFIGS), 1)
    if data_dir is not None:
        DurableState(data_dir, topics, fsync="always").load()
    return topics


def manager(topics: TopicStore, timer=None, bus=None, **group) -> ShareManager:
    config = ServerConfig()
    configs = GroupConfigs(config)
    if group:
        configs.replace("g", {k.replace("_", "."): v for k, v in group.items()})
    return ShareManager(topics, timer or ManualTimer(), ShareStateRuntime(ManualTimer(), topics, 3), config, configs,
                        bus=bus)


def produce(topics: TopicStore, n: int) -> None:
    if topics.get("t") is None:
        topics.create("t", 1)
    if n:
        topics.partition(*KEY).append(R.build_batch([(b"k", b"v", 0)] * n, 0))


async def fetch(m: ShareManager, member: str = "m1", max_records: int = 500) -> list[tuple[int, int, int]]:
    out = await m.acquire("g", member, [KEY], max_records, 500, False, 1 << 20)
    assert out[KEY].error == ErrorCode.NONE
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in out[KEY].acquired]


async def test_latest_by_default_and_earliest_when_the_group_says_so():
    topics = store()
    produce(topics, 3)
    m = manager(topics)
    assert await fetch(m) == []
    produce(topics, 2)
    assert await fetch(m) == [(3, 4, 1)]
    assert await fetch(manager(store_with(3), share_auto_offset_reset="earliest")) == [(0, 2, 1)]


def store_with(n: int) -> TopicStore:
    topics = store()
    produce(topics, n)
    return topics


async def test_the_record_bytes_cover_the_acquired_ranges():
    topics = store_with(0)
    m = manager(topics, share_auto_offset_reset="earliest")
    produce(topics, 4)
    out = await m.acquire("g", "m1", [KEY], 500, 500, False, 1 << 20)
    assert out[KEY].records == topics.partition(*KEY).read(0, 1 << 20)


async def test_an_unknown_partition_is_answered_with_its_error():
    m = manager(store_with(1))
    out = await m.acquire("g", "m1", [("nope", 0), ("t", 5)], 10, 10, False, 1 << 20)
    assert {k: v.error for k, v in out.items()} == {("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                     ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


async def test_acknowledgements_are_durable_when_answered_and_errors_are_kafkas():
    topics = store_with(10)
    m = manager(topics, share_auto_offset_reset="earliest")
    await fetch(m)
    answers = await m.acknowledge("g", "m1", {KEY: [AckBatch(0, 4, [ACCEPT])]})
    assert answers == {KEY: (ErrorCode.NONE, None)}
    key = m._key_of("g", KEY)
    assert m.state.read(key)[1].start_offset == 5
    code, _ = (await m.acknowledge("g", "m2", {KEY: [AckBatch(5, 9, [ACCEPT])]}))[KEY]
    assert code == ErrorCode.INVALID_RECORD_STATE
    code, _ = (await m.acknowledge("g", "m1", {KEY: [AckBatch(6, 5, [ACCEPT])]}))[KEY]
    assert code == ErrorCode.INVALID_REQUEST
    code, _ = (await m.acknowledge("g", "m1", {KEY: [AckBatch(5, 9, [ACCEPT, ACCEPT])]}))[KEY]
    assert code == ErrorCode.INVALID_REQUEST


async def test_a_kill_and_restart_delivers_acquired_records_again_and_acknowledged_ones_never(tmp_path):
    topics = store(tmp_path)
    produce(topics, 5)
    produce(topics, 5)
    m = manager(topics, share_auto_offset_reset="earliest")
    assert await fetch(m, max_records=1) == [(0, 4, 1)]
    assert await fetch(m, "m2", max_records=1) == [(5, 9, 1)]
    await m.acknowledge("g", "m1", {KEY: [AckBatch(0, 4, [ACCEPT, ACCEPT, RELEASE, ACCEPT, ACCEPT])]})
    # kill -9: nothing closed; a new process loads the data dir.
    restarted = store(tmp_path)
    again = manager(restarted, share_auto_offset_reset="latest")
    assert await fetch(again, "m3") == [(2, 2, 2), (5, 9, 1)]


async def test_release_member_gives_its_records_to_the_others_and_wakes_watchers():
    topics = store_with(0)
    m = manager(topics, share_auto_offset_reset="earliest")
    produce(topics, 3)
    await fetch(m)
    watcher = m.watch([KEY], "g")
    assert not watcher.done()
    await m.release_member("g", "m1")
    assert watcher.done()
    assert await fetch(m, "m2") == [(0, 2, 2)]


async def test_watch_resolves_when_records_are_appended():
    topics = store_with(0)
    m = manager(topics)
    await fetch(m)
    watcher = m.watch([KEY], "g")
    await asyncio.sleep(0)
    produce(topics, 1)
    topics.notify_appended()
    await asyncio.wait_for(watcher, 5)
    assert await fetch(m) == [(0, 0, 1)]


async def test_lock_expiry_is_persisted_and_wakes_watchers():
    timer = ManualTimer()
    topics = store_with(0)
    m = manager(topics, timer, share_auto_offset_reset="earliest", share_record_lock_duration_ms="15000")
    assert m.lock_duration_ms("g") == 15000 and m.lock_duration_ms("other") == 30000
    produce(topics, 2)
    await fetch(m)
    watcher = m.watch([KEY], "g")
    timer.advance(15000)
    assert watcher.done()
    assert m.state.read(m._key_of("g", KEY))[1].batches == [StateBatch(0, 1, AVAILABLE, 1)]
    assert await fetch(m, "m2") == [(0, 1, 2)]


async def test_describe_alter_and_delete_the_state():
    topics = store_with(10)
    m = manager(topics, share_auto_offset_reset="earliest")
    assert m.describe_offsets("g", [KEY])[KEY].start_offset == -1
    await fetch(m, max_records=1)
    await m.acknowledge("g", "m1", {KEY: [AckBatch(0, 3, [ACCEPT])]})
    described = m.describe_offsets("g", [KEY])[KEY]
    assert (described.start_offset, described.lag) == (4, 6)
    assert m.alter_start_offset("g", {KEY: 8}) == {KEY: ErrorCode.NONE}
    assert m.describe_offsets("g", [KEY])[KEY].start_offset == 8
    assert await fetch(m) == [(8, 9, 1)]
    assert m.delete_state("g", ["t"]) == {KEY: ErrorCode.NONE}
    assert m.describe_offsets("g", [KEY])[KEY].start_offset == -1


def test_every_broker_of_a_kcoord_reaches_the_same_share_manager():
    app = Kcoord(ServerConfig(brokers=3))
    assert {id(b.shares) for b in app.brokers} == {id(app.shares)}
    assert app.topics.internal[TOPIC].partitions == 50
