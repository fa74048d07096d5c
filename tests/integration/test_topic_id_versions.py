"""The newest versions, which name topics by id (Produce 13, Fetch 13+, OffsetCommit and
OffsetFetch 10) and ListOffsets' sentinel timestamps with their minimum versions."""
import uuid

import pytest

from kcoord.testing.plugin import start_server
from tests.integration.test_broker_surface import Raw
from wire.records import build_batch, parse_batch

UNKNOWN_TOPIC_ID, UNSUPPORTED_VERSION = 100, 35


@pytest.fixture
def server():
    s = start_server(default_partitions=1)
    yield s
    s.stop()


def _topic_id(raw, name):
    meta = raw.call(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": True,
                            "include_topic_authorized_operations": False})
    return meta.topics[0].topic_id


def test_produce_and_fetch_by_topic_id(server):
    raw = Raw(server.bootstrap)
    tid = _topic_id(raw, "ids")
    produce = lambda topic_id: raw.call(0, 13, {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
                                                "topic_data": [{"topic_id": topic_id, "partition_data": [
                                                    {"index": 0, "records": build_batch([(b"k", b"v1"), (b"k", b"v2")])}]}]})
    r = produce(tid).responses[0]
    assert (r.topic_id, r.partition_responses[0].error_code, r.partition_responses[0].base_offset) == (tid, 0, 0)
    assert produce(uuid.uuid4()).responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_ID
    fetch = raw.call(1, 18, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                             "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
                             "topics": [{"topic_id": tid, "partitions": [
                                 {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    part = fetch.responses[0].partitions[0]
    assert part.high_watermark == 2
    assert [rec.value for rec in parse_batch(part.records).records()] == [b"v1", b"v2"]


def test_offset_commit_and_fetch_v10_name_topics_by_id(server):
    raw = Raw(server.bootstrap)
    tid = _topic_id(raw, "committed")
    stranger = uuid.uuid4()
    commit = raw.call(8, 10, {"group_id": "g10", "generation_id_or_member_epoch": -1, "member_id": "",
                              "group_instance_id": None, "topics": [
                                  {"topic_id": tid, "partitions": [{"partition_index": 0, "committed_offset": 7,
                                                                    "committed_leader_epoch": -1,
                                                                    "committed_metadata": "m"}]},
                                  {"topic_id": stranger, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                         "committed_leader_epoch": -1,
                                                                         "committed_metadata": ""}]}]})
    errors = {t.topic_id: [p.error_code for p in t.partitions] for t in commit.topics}
    assert errors == {tid: [0], stranger: [UNKNOWN_TOPIC_ID]}

    def fetch(topics):
        r = raw.call(9, 10, {"groups": [{"group_id": "g10", "member_id": None, "member_epoch": -1,
                                         "topics": topics}], "require_stable": False})
        return {t.topic_id: [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions]
                for t in r.groups[0].topics}

    assert fetch([{"topic_id": tid, "partition_indexes": [0]}, {"topic_id": stranger, "partition_indexes": [0]}]) \
        == {tid: [(0, 7, 0)], stranger: [(0, -1, UNKNOWN_TOPIC_ID)]}
    assert fetch(None) == {tid: [(0, 7, 0)]}
    # The same offsets read by name at v9: ids are only how v10 spells topics.
    r = raw.call(9, 9, {"groups": [{"group_id": "g10", "member_id": None, "member_epoch": -1, "topics": None}],
                        "require_stable": False})
    assert [(t.name, t.partitions[0].committed_offset) for t in r.groups[0].topics] == [("committed", 7)]


def test_list_offsets_sentinels_need_their_versions(server):
    raw = Raw(server.bootstrap)
    raw.call(3, 9, {"topics": [{"name": "lo"}], "allow_auto_topic_creation": True})
    raw.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "lo", "partition_data": [{"index": 0, "records": build_batch([(None, b"a", 10), (None, b"b", 20)])}]}]})

    def ask(version, *timestamps):
        body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1000,
                "topics": [{"name": "lo", "partitions": [{"partition_index": 0, "timestamp": t, "current_leader_epoch": -1}
                                                         for t in timestamps]}]}
        return [(p.error_code, p.offset, p.timestamp) for p in raw.call(2, version, body).topics[0].partitions]

    # latest, earliest, max timestamp, earliest local, latest tiered, earliest pending upload
    assert ask(11, -1, -2, -3, -4, -5, -6) == [(0, 2, -1), (0, 0, -1), (0, 1, 20), (0, 0, -1), (0, -1, -1), (0, -1, -1)]
    assert [e for e, _, _ in ask(10, -6)] == [UNSUPPORTED_VERSION]
    assert [e for e, _, _ in ask(8, -5)] == [UNSUPPORTED_VERSION]
    assert [e for e, _, _ in ask(7, -4)] == [UNSUPPORTED_VERSION]
    assert [e for e, _, _ in ask(6, -3)] == [UNSUPPORTED_VERSION]
    assert [e for e, _, _ in ask(1, -7)] == [UNSUPPORTED_VERSION]


def test_the_same_commit_again_is_answered_by_its_own_outcome(server):
    """Repeated commits of one shape are answered from a memo: each answer must still be its
    own commit's, whether a partition stopped existing or its topic came back with a new id."""
    raw = Raw(server.bootstrap)
    tid = _topic_id(raw, "again")

    def commit(version, topic):
        r = raw.call(8, version, {"group_id": "g-again", "generation_id_or_member_epoch": -1, "member_id": "",
                                  "group_instance_id": None, "topics": [{**topic, "partitions": [
                                      {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1,
                                       "committed_metadata": ""}]}]})
        return [(t.get("name"), t.get("topic_id"), [p.error_code for p in t.partitions]) for t in r.topics]

    for _ in range(2):
        assert commit(9, {"name": "again"}) == [("again", None, [0])]
        assert commit(10, {"topic_id": tid}) == [(None, tid, [0])]
    deleted = raw.call(20, 6, {"topics": [{"name": "again", "topic_id": uuid.UUID(int=0)}], "timeout_ms": 5000})
    assert deleted.responses[0].error_code == 0
    assert commit(9, {"name": "again"}) == [("again", None, [3])]   # UNKNOWN_TOPIC_OR_PARTITION
    assert commit(10, {"topic_id": tid}) == [(None, tid, [UNKNOWN_TOPIC_ID])]
    renewed = _topic_id(raw, "again")
    assert renewed != tid
    assert commit(10, {"topic_id": renewed}) == [(None, renewed, [0])]
    assert commit(9, {"name": "again"}) == [("again", None, [0])]


def test_the_answer_memo_stays_within_its_bytes_whatever_shapes_clients_commit(server, monkeypatch):
    from kcoord.api import offset_commit as handler

    monkeypatch.setattr(handler, "_MEMO_BYTES", 64 << 10)
    raw = Raw(server.bootstrap)
    name = "t" * 249   # no such topic: every partition is refused, and the answer is still kept
    for first in range(60):
        wanted = list(range(first, first + 64))
        r = raw.call(8, 9, {"group_id": "g-shapes", "generation_id_or_member_epoch": -1, "member_id": "",
                            "group_instance_id": None, "topics": [{"name": name, "partitions": [
                                {"partition_index": p, "committed_offset": 1, "committed_leader_epoch": -1,
                                 "committed_metadata": ""} for p in wanted]}]})
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] \
            == [(name, [(p, 3) for p in wanted])]
        assert handler._memo_bytes <= 64 << 10
    assert 0 < len(handler._ANSWERS) < 60
