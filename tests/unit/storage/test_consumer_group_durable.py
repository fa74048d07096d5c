"""A consumer group (KIP-848) survives a restart through durable state: epochs, members,
assignments; a later classic group of the same id supersedes it on reload."""
from kcoord.log.topics import TopicStore
from kcoord.storage.durable_state import DurableState
from tests.unit.coordinator.consumer_harness import ConsumerHarness, Topics
from wire.errors import ErrorCode as E


def _started(path, store=None):
    store = store or TopicStore()
    topics = Topics.__new__(Topics)
    topics.topics = store.topics        # the harness names topics by the store's ids
    h = ConsumerHarness(topics)
    state = DurableState(path, h.c, store, fsync="never")
    state.load()
    return h, state, store


def test_consumer_group_comes_back_after_a_restart(tmp_path):
    h, state, store = _started(tmp_path)
    store.create("t", 4)
    h.hb("m1", 0)
    h.hb("m2", 0)
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3]}, partial=True)
    h.hb("m1", 2, owned={"t": [0, 2]}, partial=True)
    h.hb("m2", 3, owned={}, partial=True)
    before = h.group()
    state.log.close()

    h2, state2, _ = _started(tmp_path)
    g = h2.group()
    assert (g.group_epoch, g.assignment_epoch, str(g.state)) == (3, 3, "Stable")
    assert {m: x.assigned for m, x in g.members.items()} == {m: x.assigned for m, x in before.members.items()}
    r = h2.hb("m2", 3, owned={"t": [1, 3]}, partial=True)
    assert (r.error, r.member_epoch) == (E.NONE, 3)
    state2.log.close()


def test_deleted_consumer_group_stays_deleted(tmp_path):
    h, state, store = _started(tmp_path)
    store.create("t", 1)
    h.hb("m1", 0)
    h.hb("m1", -1, owned=None, partial=True)
    assert h.c.delete_group("g") == E.NONE
    state.log.close()
    h2, state2, _ = _started(tmp_path)
    assert h2.group() is None and h2.c.group("g") is None
    state2.log.close()
