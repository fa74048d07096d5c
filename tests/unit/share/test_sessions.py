"""The share session cache (kcoord.share.sessions) as Kafka 4.3.1's ShareSessionCache and
SharePartitionManager.newContext / acknowledgeSessionUpdate keep it: epochs, partitions added and
forgotten, what an incremental answer carries, the session limit, and the session going with the
connection that opened it."""
import uuid

import pytest

from kcoord.share.sessions import (FINAL_EPOCH, CachedPartition, SessionError, ShareSessionCache, next_epoch)
from wire.errors import ErrorCode

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


class FakeConnection:
    """What the cache needs of kcoord.server.Connection: close callbacks."""

    def __init__(self):
        self.callbacks = []

    def on_close(self, callback):
        if callback not in self.callbacks:
            self.callbacks.append(callback)

    def close(self):
        for callback in self.callbacks:
            callback(self)


def parts(*pids):
    return [CachedPartition(t, i, {T1: "a", T2: "b"}.get(t)) for t, i in pids]


def test_next_epoch_wraps_to_one_and_final_stays():
    assert next_epoch(0) == 1
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_epoch_zero_opens_a_session_then_each_request_needs_the_next_epoch():
    cache = ShareSessionCache(10)
    conn = FakeConnection()
    ctx = cache.new_context("g", "m", 0, parts((T1, 0)), [], False, conn)
    assert [(p.topic_id, p.index) for p in ctx.partitions()] == [(T1, 0)]
    assert cache.get("g", "m").epoch == 1
    with pytest.raises(SessionError) as err:
        cache.new_context("g", "m", 5, [], [], False, conn)
    assert err.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(SessionError) as err:
        cache.new_context("g", "other", 1, [], [], False, conn)
    assert err.value.code == ErrorCode.SHARE_SESSION_NOT_FOUND
    cache.new_context("g", "m", 1, [], [], False, conn)
    assert cache.get("g", "m").epoch == 2


def test_acknowledgements_in_the_opening_request_are_refused():
    with pytest.raises(SessionError) as err:
        ShareSessionCache(10).new_context("g", "m", 0, parts((T1, 0)), [], True, FakeConnection())
    assert err.value.code == ErrorCode.INVALID_REQUEST


def test_incremental_requests_add_and_forget_and_fetch_the_whole_session():
    cache = ShareSessionCache(10)
    conn = FakeConnection()
    cache.new_context("g", "m", 0, parts((T1, 0)), [], False, conn)
    ctx = cache.new_context("g", "m", 1, parts((T2, 3)), [], False, conn)
    assert [(p.topic_id, p.index) for p in ctx.partitions()] == [(T1, 0), (T2, 3)]
    ctx = cache.new_context("g", "m", 2, [], [(T1, 0)], False, conn)
    assert [(p.topic_id, p.index) for p in ctx.partitions()] == [(T2, 3)]


def test_incremental_answer_carries_records_errors_and_new_partitions_once():
    cache = ShareSessionCache(10)
    conn = FakeConnection()
    full = cache.new_context("g", "m", 0, parts((T1, 0), (T1, 1)), [], False, conn)
    empty = {"records": b"", "error_code": 0}
    # A full answer carries every partition asked for.
    assert set(full.answer({(T1, 0): empty, (T1, 1): empty})[1]) == {(T1, 0), (T1, 1)}
    ctx = cache.new_context("g", "m", 1, parts((T2, 0)), [], False, conn)
    error, kept = ctx.answer({(T1, 0): {"records": b"x", "error_code": 0}, (T1, 1): empty, (T2, 0): empty})
    assert error == ErrorCode.NONE
    assert set(kept) == {(T1, 0), (T2, 0)}     # records; new to the session
    ctx = cache.new_context("g", "m", 2, [], [], False, conn)
    error, kept = ctx.answer({(T1, 0): empty, (T1, 1): {"records": b"", "error_code": 6}, (T2, 0): empty})
    assert set(kept) == {(T1, 1)}              # the error only
    ctx = cache.new_context("g", "m", 3, [], [], False, conn)
    error, kept = ctx.answer({(T1, 0): empty, (T1, 1): empty, (T2, 0): empty})
    assert set(kept) == {(T1, 1)}              # sent again once its error is gone
    # A partition that returned records goes last in the next fetch.
    assert [(p.topic_id, p.index) for p in cache.get("g", "m").partitions.values()] == [(T1, 1), (T2, 0), (T1, 0)]


def test_an_answer_after_another_request_moved_the_session_on_is_an_epoch_error():
    cache = ShareSessionCache(10)
    conn = FakeConnection()
    cache.new_context("g", "m", 0, parts((T1, 0)), [], False, conn)
    ctx = cache.new_context("g", "m", 1, [], [], False, conn)
    cache.acknowledge_update("g", "m", 2)
    assert ctx.answer({(T1, 0): {"records": b"x", "error_code": 0}}) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH, {})


def test_final_epoch_fetches_nothing_and_needs_a_session():
    cache = ShareSessionCache(10)
    conn = FakeConnection()
    with pytest.raises(SessionError) as err:
        cache.new_context("g", "m", FINAL_EPOCH, [], [], True, conn)
    assert err.value.code == ErrorCode.SHARE_SESSION_NOT_FOUND
    cache.new_context("g", "m", 0, parts((T1, 0)), [], False, conn)
    ctx = cache.new_context("g", "m", FINAL_EPOCH, parts((T1, 0)), [], True, conn)
    assert ctx.final and ctx.partitions() == []


def test_acknowledge_never_opens_a_session_and_leaves_closing_to_the_answer():
    cache = ShareSessionCache(10)
    conn = FakeConnection()
    with pytest.raises(SessionError) as err:
        cache.acknowledge_update("g", "m", 0)
    assert err.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(SessionError) as err:
        cache.acknowledge_update("g", "m", 1)
    assert err.value.code == ErrorCode.SHARE_SESSION_NOT_FOUND
    cache.new_context("g", "m", 0, parts((T1, 0)), [], False, conn)
    cache.acknowledge_update("g", "m", 1)
    with pytest.raises(SessionError) as err:
        cache.acknowledge_update("g", "m", 1)
    assert err.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    cache.acknowledge_update("g", "m", FINAL_EPOCH)
    assert cache.get("g", "m").epoch == 2


def test_the_session_limit_counts_sessions_and_reopening_ones_own_is_allowed():
    cache = ShareSessionCache(2)
    conn = FakeConnection()
    cache.new_context("g", "a", 0, [], [], False, conn)
    cache.new_context("g", "b", 0, [], [], False, conn)
    with pytest.raises(SessionError) as err:
        cache.new_context("g", "c", 0, [], [], False, conn)
    assert err.value.code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    cache.new_context("g", "a", 0, [], [], False, conn)   # replaces its own
    assert len(cache) == 2


def test_a_closed_connection_takes_its_session_and_releases_the_members_partitions():
    released = []
    cache = ShareSessionCache(10, lambda g, m, keys: released.append((g, m, keys)))
    first, second = FakeConnection(), FakeConnection()
    cache.new_context("g", "m", 0, parts((T1, 0), (T2, 1)), [], False, first)
    cache.new_context("g", "n", 0, parts((T1, 0)), [], False, second)
    first.close()
    assert cache.get("g", "m") is None and cache.get("g", "n") is not None
    assert released == [("g", "m", [("a", 0), ("b", 1)])]


def test_a_session_reopened_on_another_connection_outlives_the_first_one():
    released = []
    cache = ShareSessionCache(10, lambda g, m, keys: released.append(m))
    old, new = FakeConnection(), FakeConnection()
    cache.new_context("g", "m", 0, parts((T1, 0)), [], False, old)
    cache.new_context("g", "m", 0, parts((T1, 0)), [], False, new)
    old.close()
    assert cache.get("g", "m") is not None and released == []
    new.close()
    assert cache.get("g", "m") is None and released == ["m"]


def test_release_removes_the_session_once():
    released = []
    cache = ShareSessionCache(10, lambda g, m, keys: released.append(keys))
    conn = FakeConnection()
    cache.new_context("g", "m", 0, parts((T1, 0)), [], False, conn)
    assert cache.release("g", "m") is not None
    assert cache.release("g", "m") is None
    conn.close()
    assert released == [[("a", 0)]]
