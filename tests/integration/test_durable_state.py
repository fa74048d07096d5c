"""Durable state under --data-dir: restarts, SIGKILLs and damaged logs lose no acknowledged write."""
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kcoord.storage.record_log import frame
from kcoord.testing.plugin import start_server
from kcoord.testing.reference_kafka import free_port
from kcoord.testing.serve_process import serve
from tests.integration.test_broker_surface import Raw
from wire.records import build_batch

ROOT = Path(__file__).resolve().parents[2]


def _commit(raw, group, offsets, member="", generation=-1, instance=None):
    return raw.call(8, 8, {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
                           "group_instance_id": instance, "topics": [
                               {"name": t, "partitions": [{"partition_index": p, "committed_offset": o,
                                                           "committed_leader_epoch": -1, "committed_metadata": "m"}]}
                               for (t, p), o in offsets.items()]})


def _fetch(raw, group):
    r = raw.call(9, 7, {"group_id": group, "topics": None, "require_stable": False})
    return {(t.name, p.partition_index): p.committed_offset for t in r.topics for p in t.partitions}


def _join(raw, group, instance=None, member="", meta=None):
    # A subscription to topic "t" (v1 without its owned partitions: enough for a classic group).
    meta = meta or b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"
    r = raw.call(11, 5, {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                         "member_id": member, "group_instance_id": instance, "protocol_type": "consumer",
                         "protocols": [{"name": "range", "metadata": meta}]})
    if r.error_code == 79:  # MEMBER_ID_REQUIRED: rejoin with the id handed out
        return _join(raw, group, instance, r.member_id, meta)
    return r


def _sync(raw, group, join, assignment):
    assignments = [{"member_id": m.member_id, "assignment": assignment} for m in join.members]
    return raw.call(14, 3, {"group_id": group, "generation_id": join.generation_id, "member_id": join.member_id,
                            "group_instance_id": None, "assignments": assignments})


def test_restart_keeps_offsets_topics_records_and_members(tmp_path):
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        raw.call(3, 9, {"topics": [{"name": "t"}], "allow_auto_topic_creation": True})
        raw.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": build_batch([(None, b"a"), (None, b"b")])}]}]})
        assert _commit(raw, "simple", {("t", 0): 2}).topics[0].partitions[0].error_code == 0
        static = _join(raw, "static", instance="i-1")
        _sync(raw, "static", static, b"\x00\x01assignment")
        dynamic_raw = Raw(server.bootstrap)
        dynamic = _join(dynamic_raw, "dynamic")
        _sync(dynamic_raw, "dynamic", dynamic, b"")
        assert _commit(raw, "static", {("t", 0): 1}, static.member_id, static.generation_id,
                       "i-1").topics[0].partitions[0].error_code == 0
        topic_id = server.app.broker.topics.get("t").topic_id
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        assert _fetch(raw, "simple") == {("t", 0): 2}
        assert _fetch(raw, "static") == {("t", 0): 1}
        topic = server.app.broker.topics.get("t")
        assert topic.topic_id == topic_id and topic.partitions[0].high_watermark == 2
        # The static member carries on: same generation, same assignment, no rebalance.
        hb = raw.call(12, 3, {"group_id": "static", "generation_id": static.generation_id,
                              "member_id": static.member_id, "group_instance_id": "i-1"})
        assert hb.error_code == 0
        sync = raw.call(14, 3, {"group_id": "static", "generation_id": static.generation_id,
                                "member_id": static.member_id, "group_instance_id": "i-1", "assignments": []})
        assert (sync.error_code, sync.assignment) == (0, b"\x00\x01assignment")
        # A dynamic member carries on too, as Kafka reloads every member after a failover.
        hb = raw.call(12, 3, {"group_id": "dynamic", "generation_id": dynamic.generation_id,
                              "member_id": dynamic.member_id, "group_instance_id": None})
        assert hb.error_code == 0
        group = server.app.coordinator.runtime.group("dynamic")
        assert (group.generation, str(group.state), list(group.members)) == (
            dynamic.generation_id, "Stable", [dynamic.member_id])
    finally:
        server.stop()


def test_compaction_keeps_the_live_state_only(tmp_path):
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        raw.call(3, 9, {"topics": [{"name": "t"}], "allow_auto_topic_creation": True})
        for i in range(200):
            _commit(raw, "g", {("t", 0): i})
        storage = server.app.storage
        before = storage.log.size
        server.call(lambda: _compact(storage))
        assert storage.log.size < before / 20
        _commit(raw, "g", {("t", 0): 500})
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _fetch(Raw(server.bootstrap), "g") == {("t", 0): 500}
    finally:
        server.stop()


def _offsets(server) -> dict:
    core = server.app.coordinator.runtime
    return {g: core.committed(g) for g in {g for c in core.active() for g in c.offsets.groups()}}


def _payload_kinds(data_dir) -> set[bytes]:
    from kcoord.storage.record_log import RecordLog

    return {payload[:1] for payload in RecordLog(Path(data_dir) / "state.log").replay()}


def test_offsets_are_written_once_as_consumer_offsets_records_and_read_back_exactly(tmp_path):
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        created = raw.call(19, 4, {"topics": [{"name": "t", "num_partitions": 2, "replication_factor": 1,
                                               "assignments": [], "configs": []}],
                                   "timeout_ms": 5000, "validate_only": False})
        assert created.topics[0].error_code == 0
        raw.call(8, 8, {"group_id": "a", "generation_id_or_member_epoch": -1, "member_id": "",
                        "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                            {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 3,
                             "committed_metadata": "meta"},
                            {"partition_index": 1, "committed_offset": 7, "committed_leader_epoch": -1,
                             "committed_metadata": ""}]}]})
        # An explicit retention (v2-v4): Kafka's value v1, with its expiry.
        raw.call(8, 2, {"group_id": "r", "generation_id_or_member_epoch": -1, "member_id": "",
                        "retention_time_ms": 600000, "topics": [{"name": "t", "partitions": [
                            {"partition_index": 0, "committed_offset": 9, "committed_metadata": "x"}]}]})
        raw.call(47, 0, {"group_id": "a", "topics": [{"name": "t", "partitions": [{"partition_index": 1}]}]})
        _commit(raw, "d", {("t", 0): 1, ("t", 1): 2})
        assert raw.call(42, 2, {"groups_names": ["d"]}).results[0].error_code == 0
        _commit(raw, "d", {("t", 1): 3})            # a group deleted, then committed to again
        _commit(raw, "gone", {("t", 0): 4})
        assert raw.call(42, 2, {"groups_names": ["gone"]}).results[0].error_code == 0
        before = _offsets(server)
        assert {g: sorted(o) for g, o in before.items()} == {"a": [("t", 0)], "r": [("t", 0)], "d": [("t", 1)]}
        assert before["r"][("t", 0)].expire_ms is not None
    finally:
        server.stop()
    # Once: the __consumer_offsets batches hold the offsets, no record of kcoord's own repeats them.
    assert b"B" in _payload_kinds(tmp_path) and not _payload_kinds(tmp_path) & {b"O", b"o"}
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _offsets(server) == before
        server.call(lambda: _compact(server.app.storage))
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _offsets(server) == before
        fetched = Raw(server.bootstrap).call(9, 7, {"group_id": "a", "topics": None, "require_stable": False})
        p = fetched.topics[0].partitions
        assert [(x.partition_index, x.committed_offset, x.committed_leader_epoch, x.metadata) for x in p] == [
            (0, 5, 3, "meta")]
    finally:
        server.stop()


def test_an_older_data_dirs_offset_records_are_read_and_later_topic_records_win(tmp_path):
    # Before the offsets lived only in __consumer_offsets, each was also an "O" record.
    (tmp_path / "state.log").write_bytes(b"".join(frame(p) for p in (
        b'T{"name":"t","id":"00000000-0000-0000-0000-00000000000a","partitions":2,"configs":{}}',
        b'O{"g":"old","t":"t","p":0,"o":11,"e":-1,"m":"","c":1,"x":null}',
        b'O{"g":"old","t":"t","p":1,"o":12,"e":-1,"m":"","c":1,"x":null}',
        b'O{"g":"kept","t":"t","p":0,"o":13,"e":2,"m":"k","c":1,"x":null}')))
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        assert _fetch(raw, "old") == {("t", 0): 11, ("t", 1): 12}
        _commit(raw, "old", {("t", 1): 20})
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        assert _fetch(raw, "old") == {("t", 0): 11, ("t", 1): 20}
        assert raw.call(42, 2, {"groups_names": ["old"]}).results[0].error_code == 0
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        assert _fetch(raw, "old") == {} and _fetch(raw, "kept") == {("t", 0): 13}
    finally:
        server.stop()


def test_a_compaction_writing_in_the_background_keeps_what_was_committed_meanwhile(tmp_path, monkeypatch):
    """The new file is written and fsynced in a worker thread (slowed down here) while commits
    go on: those go to the old log and are copied after the new file before the rename."""
    from kcoord.storage.record_log import RecordLog

    tails = []
    write_new, finish = RecordLog.write_new, RecordLog.finish_rewrite

    def slow_write(tmp, payloads):
        time.sleep(0.2)
        write_new(tmp, payloads)

    def counting_finish(self, tmp):
        tails.append(len(self._tail))
        finish(self, tmp)
    monkeypatch.setattr(RecordLog, "write_new", staticmethod(slow_write))
    monkeypatch.setattr(RecordLog, "finish_rewrite", counting_finish)
    server = start_server(data_dir=str(tmp_path))
    try:
        server.app.storage.compact_min_bytes = 32 * 1024
        raw = Raw(server.bootstrap)
        created = raw.call(19, 4, {"topics": [{"name": "t", "num_partitions": 8, "replication_factor": 1,
                                               "assignments": [], "configs": []}],
                                   "timeout_ms": 5000, "validate_only": False})
        assert created.topics[0].error_code == 0
        last = {}
        deadline = time.monotonic() + 60
        i = 0
        while (len([t for t in tails if t]) < 3 or i < 3000) and time.monotonic() < deadline:
            key = ("t", i % 8)
            assert _commit(raw, f"g{i % 5}", {key: i}).topics[0].partitions[0].error_code == 0
            last[(f"g{i % 5}", *key)] = i
            i += 1
        # Compactions that finished with commits to carry over (how much the log shrank depends
        # on how many came meanwhile: on a loaded machine, a slowed write's tail is large).
        assert len([t for t in tails if t]) >= 3, tails
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        got = {(g, t, p): o for g in {k[0] for k in last} for (t, p), o in _fetch(raw, g).items()}
        assert got == last
    finally:
        server.stop()


async def _compact(storage):
    storage.compact()


def test_a_torn_or_garbled_tail_is_truncated_with_a_warning_and_earlier_commits_kept(tmp_path):
    port = free_port()
    proc = serve(tmp_path, port)
    try:
        raw = Raw(f"127.0.0.1:{port}")
        raw.call(3, 9, {"topics": [{"name": "t"}], "allow_auto_topic_creation": True})
        for i in range(1, 11):
            _commit(raw, "g", {("t", 0): i})
    finally:
        proc.kill()
        proc.wait(10)
    log = tmp_path / "state.log"
    intact = log.read_bytes()
    for damage in (frame(b"O" + b'{"g":"g"')[:-3],                   # torn: cut mid-record
                   b"\x00\x00\x00\x05\xde\xad\xbe\xefjunk!"):       # garbled: wrong checksum
        log.write_bytes(intact + damage)
        proc = serve(tmp_path, port)
        try:
            assert _fetch(Raw(f"127.0.0.1:{port}"), "g") == {("t", 0): 10}
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=10)
        assert "truncating the last" in err and f"{len(damage)} bytes" in err
        assert log.read_bytes() == intact


def _healthz(http_port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/healthz", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_failure_of_any_kind_while_recording_is_never_acknowledged(tmp_path):
    """Not only the disk's errors: a bug while encoding or appending a record (here a
    ValueError injected into the log) must not let the commit be acknowledged."""
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        raw.call(3, 9, {"topics": [{"name": "t"}], "allow_auto_topic_creation": True})
        assert _commit(raw, "g", {("t", 0): 5}).topics[0].partitions[0].error_code == 0

        def broken_append(*payloads):
            raise ValueError("injected: a record that cannot be encoded")
        server.app.storage.log.append = broken_append
        answer = _commit(raw, "g", {("t", 0): 9}).topics[0].partitions[0].error_code
        assert answer == 15  # COORDINATOR_NOT_AVAILABLE, not NONE
        assert "ValueError" in server.app.storage.failure
        assert server.app.coordinator.runtime.committed("g")[("t", 0)].offset == 5  # nothing changed
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        assert _fetch(Raw(server.bootstrap), "g") == {("t", 0): 5}
    finally:
        server.stop()


def test_a_failed_disk_write_is_never_acknowledged(tmp_path):
    port, http_port = free_port(), free_port()
    limit = 16 * 1024
    proc = serve(tmp_path, port, http_port, extra=["--journal", "none", "--fsync", "always"],
                  max_file_bytes=limit)
    try:
        raw = Raw(f"127.0.0.1:{port}")
        raw.call(3, 9, {"topics": [{"name": "t"}], "allow_auto_topic_creation": True})
        acknowledged, error = 0, 0
        for offset in range(1, 10_000):
            error = _commit(raw, "g", {("t", 0): offset}).topics[0].partitions[0].error_code
            if error:
                break
            acknowledged = offset
        assert acknowledged > 10 and error == 15  # COORDINATOR_NOT_AVAILABLE: the client retries elsewhere
        # From now on the coordinator is unavailable (memory may be ahead of the disk) ...
        assert _commit(raw, "g", {("t", 0): 1}).topics[0].partitions[0].error_code == 15
        assert raw.call(9, 7, {"group_id": "g", "topics": None, "require_stable": False}).error_code == 15
        assert raw.call(10, 3, {"key": "g", "key_type": 0}).error_code == 15
        status, text = _healthz(http_port)
        assert status == 503 and "state.log failed" in text, (status, text)
        # ... and a producer whose batch the disk refused hears KAFKA_STORAGE_ERROR; the
        # partition did not take the batch.
        produced = raw.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": build_batch([(None, b"x" * 4096)])}]}]})
        assert produced.responses[0].partition_responses[0].error_code == 56
        latest = raw.call(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        assert latest.topics[0].partitions[0].offset == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert "COORDINATOR_NOT_AVAILABLE until a restart" in err
    assert (tmp_path / "state.log").stat().st_size <= limit
    # With room on the disk again, a restart has every acknowledged commit and no torn record.
    proc = serve(tmp_path, port, http_port)
    try:
        raw = Raw(f"127.0.0.1:{port}")
        assert _fetch(raw, "g") == {("t", 0): acknowledged}
        assert _healthz(http_port) == (200, "ok\n")
        assert _commit(raw, "g", {("t", 0): acknowledged + 1}).topics[0].partitions[0].error_code == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert "truncating" not in err, err


def _group(http_port, group):
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/groups/{group}", timeout=5) as r:
        return json.load(r)


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except OSError as exc:
            last = exc
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout}s (last: {last})")


@pytest.mark.integration
def test_kill_9_twenty_times_loses_no_acknowledged_commit_and_static_members_never_rebalance(tmp_path):
    port, http_port = free_port(), free_port()
    # The server's and the committers' logs, kept for a failure's diagnosis (the server's says
    # why any rebalance happened; a committer's why it went quiet).
    server_log = open(tmp_path / "server.log", "a")
    servers = [serve(tmp_path, port, http_port, log=server_log)]
    raw = Raw(f"127.0.0.1:{port}")
    raw.call(19, 4, {"topics": [{"name": "k9", "num_partitions": 8, "replication_factor": 1, "assignments": [],
                                 "configs": []}], "timeout_ms": 5000, "validate_only": False})
    acked: dict[tuple[str, int], int] = {}
    lock = threading.Lock()
    committers = [subprocess.Popen([sys.executable, "-m", "tests.integration.committer", "--bootstrap",
                                    f"127.0.0.1:{port}", "--topic", "k9", "--group", "k9",
                                    "--instance-id", f"static-{i}", "--session-ms", "30000"],
                                   stdout=subprocess.PIPE, stderr=open(tmp_path / f"committer-{i}.log", "w"),
                                   text=True, cwd=ROOT)
                  for i in range(4)]

    def read(p):
        for line in p.stdout:
            e = json.loads(line)
            if "offset" in e:
                with lock:
                    key = (e["topic"], e["partition"])
                    acked[key] = max(acked.get(key, 0), e["offset"])

    def diagnosis():
        logs = [(tmp_path / "server.log").read_text()[-3000:]]
        logs += [f"committer-{i} (exit {p.poll()}): " + (tmp_path / f"committer-{i}.log").read_text()[-4000:]
                 for i, p in enumerate(committers)]
        return "\n".join(logs)

    readers = [threading.Thread(target=read, args=(p,), daemon=True) for p in committers]
    for t in readers:
        t.start()
    try:
        try:
            # Settled: every member synced and committing for all 8 partitions, then a generation
            # that holds still for a few heartbeats (a kafka-python leader that assigned before its
            # topic metadata arrived rejoins once by itself, a rebalance against Kafka too).
            _wait(lambda: len(acked) == 8, 60, "commits for all 8 partitions")

            def settled():
                first = _group(http_port, "k9")
                if first["state"] != "Stable" or len(first["members"]) != 4:
                    return None
                time.sleep(3)
                again = _group(http_port, "k9")
                return first if (again["state"], again["generation"]) == ("Stable", first["generation"]) else None

            generation = _wait(settled, 90, "4 static members stable, the generation holding still")["generation"]
            for _ in range(20):
                seen = dict(acked)
                _wait(lambda: any(acked.get(k, 0) > v for k, v in seen.items()) or (not seen and acked),
                      30, "a commit acknowledged since the last restart")
                servers[-1].kill()
                servers[-1].wait(10)
                servers.append(serve(tmp_path, port, http_port, log=server_log))
            _wait(lambda: len(acked) == 8, 30, "commits for all 8 partitions")
            after = _group(http_port, "k9")
            assert (after["state"], after["generation"], len(after["members"])) == ("Stable", generation, 4), \
                diagnosis()
        except AssertionError as err:
            raise AssertionError(f"{err}\n{diagnosis()}") from None
        finally:
            for p in committers:
                p.send_signal(signal.SIGTERM)
            for p in committers:
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
        for t in readers:
            t.join(5)
        committed = _fetch(Raw(f"127.0.0.1:{port}"), "k9")
        lost = {k: (v, committed.get(k)) for k, v in acked.items() if committed.get(k, -1) < v}
        assert not lost, f"acknowledged commits lost (acked, committed): {lost}"
    finally:
        for server in servers:
            if server.poll() is None:
                server.kill()
                server.wait(10)


def test_a_mixed_group_survives_restarts_before_and_after_the_downgrade(tmp_path):
    """Online migration under --data-dir: a classic group upgraded by a consumer-protocol member
    comes back after a restart as the same consumer group, its classic member still served by
    Heartbeat/JoinGroup/SyncGroup; after the downgrade a restart brings back the classic group."""
    from kcoord.protocol_client import Connection
    from kcoord.testing.consumer_groups import describe, heartbeat, list_groups, new_member_id

    assignment = b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01" \
                 b"\x00\x00\x00\x02\x00\x00\x00\x03\xff\xff\xff\xff"   # consumer assignment v0: t-0..3
    subscription = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"   # consumer subscription v0 to t
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        raw.call(19, 4, {"topics": [{"name": "t", "num_partitions": 4, "replication_factor": 1, "assignments": [],
                                     "configs": []}], "timeout_ms": 5000, "validate_only": False})
        classic = _join(raw, "mixed", meta=subscription)
        assert _sync(raw, "mixed", classic, assignment).error_code == 0
        modern_id = new_member_id()
        with Connection.to(server.bootstrap) as conn:
            hb = heartbeat(conn, "mixed", member_id=modern_id, member_epoch=0, rebalance_timeout_ms=30000,
                           topics=["t"])
        assert hb.error_code == 0
        assert list_groups(server.bootstrap)["mixed"]["type"] == "consumer"
        # The classic member is told to rejoin, and does: one reconciliation step.
        assert raw.call(12, 3, {"group_id": "mixed", "generation_id": classic.generation_id,
                                "member_id": classic.member_id, "group_instance_id": None}).error_code == 27
        rejoined = _join(raw, "mixed", member=classic.member_id, meta=subscription)
        assert rejoined.error_code == 0 and rejoined.leader == ""
        epochs = {m["member_id"]: m["member_epoch"] for m in describe(server.bootstrap, "mixed").members}
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        raw = Raw(server.bootstrap)
        view = describe(server.bootstrap, "mixed")
        assert {m["member_id"]: (m["member_epoch"], m["type"]) for m in view.members} == {
            classic.member_id: (epochs[classic.member_id], 0), modern_id: (epochs[modern_id], 1)}
        sync = raw.call(14, 3, {"group_id": "mixed", "generation_id": rejoined.generation_id,
                                "member_id": classic.member_id, "group_instance_id": None, "assignments": []})
        assert sync.error_code in (0, 27), sync   # served as a classic member of a consumer group
        with Connection.to(server.bootstrap) as conn:
            assert heartbeat(conn, "mixed", member_id=modern_id, member_epoch=-1).error_code == 0
        # The last consumer-protocol member left: the group is classic again, rebalancing.
        assert list_groups(server.bootstrap)["mixed"]["type"] == "classic"
        group = server.app.coordinator.runtime.group("mixed")
        assert list(group.members) == [classic.member_id] and str(group.state) == "PreparingRebalance"
    finally:
        server.stop()
    server = start_server(data_dir=str(tmp_path))
    try:
        group = server.app.coordinator.runtime.group("mixed")
        assert server.app.coordinator.runtime.consumer_group("mixed") is None
        assert list(group.members) == [classic.member_id] and group.protocol_type == "consumer"
    finally:
        server.stop()


def test_a_three_broker_kcoord_killed_comes_back_with_its_leaders_epochs_and_groups(tmp_path):
    """`kcoord serve --brokers 3` killed with SIGKILL and started again on its data dir: every
    partition's replicas, leader and leader epoch (one moved, and one broker stopped, before the
    kill) are as they were, each group's coordinator is the same broker, and every acknowledged
    commit is there, read from that coordinator."""
    from kcoord.protocol_client import Connection
    from kcoord.testing.failover import _find

    port, http_port = free_port(), free_port()
    while any(_in_use(port + i) for i in range(3)):
        port = free_port()
    bootstrap = ",".join(f"127.0.0.1:{port + i}" for i in range(3))
    extra = ("--brokers", "3")
    log = open(tmp_path / "server.log", "a")
    server = serve(tmp_path / "data", port, http_port, extra=extra, log=log)
    groups = [f"g{i}" for i in range(12)]
    try:
        raw = Raw(bootstrap)
        created = raw.call(19, 4, {"topics": [{"name": "t", "num_partitions": 6, "replication_factor": 3,
                                               "assignments": [], "configs": []}],
                                   "timeout_ms": 5000, "validate_only": False})
        assert created.topics[0].error_code == 0
        acked = {}
        for i, group in enumerate(groups):
            coordinator = _find(bootstrap, group)
            with Connection.to(f"127.0.0.1:{port + coordinator}") as conn:
                answer = _commit(conn, group, {("t", p): 10 * i + p for p in range(6)})
                assert all(p.error_code == 0 for t in answer.topics for p in t.partitions)
            acked[group] = {("t", p): 10 * i + p for p in range(6)}
        moved = _metadata(raw, "t")[0]
        target = moved["replicas"][1]
        _post(http_port, "/partitions/t/0/leader", {"broker": target})
        _post(http_port, "/brokers/2/stop", {})
        before = _metadata(raw, "t")
        coordinators = {g: _find(bootstrap, g) for g in groups}
        assert before[0]["leader"] == target and before[0]["epoch"] > moved["epoch"]
    finally:
        server.kill()
        server.wait(10)
    server = serve(tmp_path / "data", port, http_port, extra=extra, log=log)
    try:
        raw = Raw(bootstrap)
        after = _metadata(raw, "t")
        # Every broker runs again; the stopped one is back in sync and leads again only what
        # it led at the kill (nothing), until a preferred election.
        assert {p: (s["replicas"], s["leader"], s["epoch"]) for p, s in after.items()} == \
            {p: (s["replicas"], s["leader"], s["epoch"]) for p, s in before.items()}
        assert all(sorted(s["isr"]) == sorted(s["replicas"]) for s in after.values())
        for group in groups:
            assert _find(bootstrap, group) == coordinators[group]
            with Connection.to(f"127.0.0.1:{port + coordinators[group]}") as conn:
                assert _fetch(conn, group) == acked[group]
    finally:
        server.kill()
        server.wait(10)
        log.close()


def _in_use(port: int) -> bool:
    from kcoord.testing.reference_kafka import _port_in_use

    return _port_in_use("127.0.0.1", port)


def _metadata(raw, topic: str) -> dict[int, dict]:
    answer = raw.call(3, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                             "include_cluster_authorized_operations": False,
                             "include_topic_authorized_operations": False})
    return {p.partition_index: {"leader": p.leader_id, "epoch": p.leader_epoch, "replicas": list(p.replica_nodes),
                                "isr": list(p.isr_nodes)} for p in answer.topics[0].partitions}


def _post(http_port: int, path: str, body: dict) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{http_port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"{}")
