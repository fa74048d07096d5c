"""The checksummed record log: replay, torn and garbled tails, compaction, fsync policies."""
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.storage.record_log import RecordLog, frame


def _written(path, payloads, fsync="never"):
    log = RecordLog(path, fsync)
    log.open()
    for p in payloads:
        log.append(p)
    log.close()
    return log


def test_replay_returns_what_was_appended(tmp_path):
    _written(tmp_path / "l", [b"a", b"", b"c" * 10000])
    assert list(RecordLog(tmp_path / "l").replay()) == [b"a", b"", b"c" * 10000]


@settings(max_examples=80, deadline=None)
@given(payloads=st.lists(st.binary(max_size=64), min_size=1, max_size=8), data=st.data())
def test_any_cut_or_flipped_byte_in_the_tail_loses_only_the_damaged_record(tmp_path_factory, payloads, data):
    path = tmp_path_factory.mktemp("log") / "l"
    _written(path, payloads)
    whole = path.read_bytes()
    last_start = len(whole) - len(frame(payloads[-1]))
    if data.draw(st.booleans(), label="cut"):
        damaged = whole[:data.draw(st.integers(last_start, len(whole) - 1), label="cut at")]
    else:
        at = data.draw(st.integers(last_start, len(whole) - 1), label="flip at")
        damaged = whole[:at] + bytes([whole[at] ^ 0x5A]) + whole[at + 1:]
    path.write_bytes(damaged)
    log = RecordLog(path)
    replayed = list(log.replay())
    assert replayed[:len(payloads) - 1] == payloads[:-1]
    if replayed != payloads[:-1]:  # a flip inside a length can still frame an intact record only by chance
        assert replayed == payloads
    assert path.read_bytes() == whole[:last_start] or replayed == payloads


def test_truncation_is_logged(tmp_path, caplog):
    _written(tmp_path / "l", [b"one", b"two"])
    (tmp_path / "l").write_bytes((tmp_path / "l").read_bytes()[:-1])
    with caplog.at_level(logging.WARNING, "kcoord.storage"):
        assert list(RecordLog(tmp_path / "l").replay()) == [b"one"]
    assert "truncating the last" in caplog.text


def test_rewrite_replaces_the_log_and_appends_continue(tmp_path):
    log = _written(tmp_path / "l", [b"x"] * 100)
    log.open()
    log.rewrite([b"snapshot"])
    log.append(b"after")
    log.close()
    assert list(RecordLog(tmp_path / "l").replay()) == [b"snapshot", b"after"]
    assert not list(tmp_path.glob("*.compacting"))


@pytest.mark.parametrize("policy", ["always", "interval", "never"])
def test_fsync_policies_write_through_to_the_file(tmp_path, policy):
    log = RecordLog(tmp_path / "l", policy)
    log.open()
    log.append(b"p")
    # Readable by another reader at once: the bytes are in the OS, whatever the fsync policy.
    assert list(RecordLog(tmp_path / "l").replay()) == [b"p"]
    assert log.dirty == (policy != "always")
    log.sync()
    assert not log.dirty
    log.close()


def test_unknown_policy_is_refused(tmp_path):
    with pytest.raises(ValueError, match="fsync policy"):
        RecordLog(tmp_path / "l", "sometimes")
