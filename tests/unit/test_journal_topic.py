"""The journal's topic sink (`--journal-topic`): the file's lines as records of a topic on the
broker, keyed by group id, appended through the partitions' own path; a failed append is
logged and dropped, never raised into the coordinator."""
from __future__ import annotations

import json
import logging

import pytest

from kcoord.coordinator.events import EventKind, GroupEvent
from kcoord.journal import Journal, JournalTopic, check_journal_topic
from kcoord.log.topics import TopicStore
from wire.records import iter_batches


def _event(i: int, group: str = "g", kind=EventKind.MEMBER_JOINED) -> GroupEvent:
    return GroupEvent(kind=kind, time_ms=1_000 + i, group_id=group, generation=i, state_before="Stable",
                      state_after="Stable", member_id=f"m-{i}", reason="test")


def _records(topic) -> list[list[tuple[int, bytes, bytes, int]]]:
    """Per partition: (offset, key, value, timestamp) in offset order."""
    return [[(r.offset, r.key, r.value, r.timestamp) for sb in p.batches for b in iter_batches(sb.data)
             for r in b.records()] for p in topic.partitions]


def test_each_line_becomes_a_record_keyed_by_group_in_order(tmp_path):
    store = TopicStore(default_partitions=3)
    sink = JournalTopic(store, "journal")
    journal = Journal(tmp_path / "events.jsonl", sinks=(sink,))
    journal(_event(0, "early"))  # before start: held, not appended
    assert store.get("journal") is None
    sink.start()
    groups = [f"group-{n}" for n in range(6)]
    for i in range(30):
        journal(_event(i + 1, groups[i % len(groups)]))
    journal.close()

    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    topic = store.get("journal")
    assert len(topic.partitions) == 3  # the broker's default partitions
    per_partition = _records(topic)
    assert sum(len(p) for p in per_partition) == len(lines) == 31
    for records in per_partition:
        assert [r[0] for r in records] == list(range(len(records)))
    # A group's records share one partition, in the file's order; every value is its line.
    for group in ["early", *groups]:
        (partition,) = {i for i, records in enumerate(per_partition) for r in records if r[1] == group.encode()}
        got = [r[2].decode() for r in per_partition[partition] if r[1] == group.encode()]
        assert got == [line for line in lines if json.loads(line)["group_id"] == group]
    for records in per_partition:
        for _, _, value, ts in records:
            assert ts == json.loads(value)["time_ms"]
    # Kafka's default partitioner would have put "group-0" here too (murmur2 of the key).
    from kafka.partitioner.default import murmur2
    assert any(r[1] == b"group-0" for r in per_partition[(murmur2(b"group-0") & 0x7FFFFFFF) % 3])


def test_the_topic_alone_without_a_file_gets_the_commit_summaries_on_close():
    store = TopicStore()
    sink = JournalTopic(store, "journal")
    sink.start()
    journal = Journal(None, sinks=(sink,), commit_interval_ms=10_000)
    journal(GroupEvent(kind=EventKind.OFFSETS_COMMITTED, time_ms=5, group_id="g", generation=1,
                       state_before="Stable", state_after="Stable", details={"count": 2}))
    assert _records(store.get("journal")) == [[]]
    journal.close()
    ((record,),) = _records(store.get("journal"))
    assert json.loads(record[2]) == {"kind": "offset_commits", "time_ms": 5, "group_id": "g", "interval_ms": 10_000,
                                     "commits": 1, "offsets": 2}


def test_a_failed_append_is_logged_once_dropped_and_never_raised(tmp_path, caplog):
    store = TopicStore()
    sink = JournalTopic(store, "journal")
    sink.start()
    journal = Journal(tmp_path / "events.jsonl", sinks=(sink,))
    partition = store.get("journal").partitions[0]

    def disk_full(stored):  # what durable state raises when the data dir's disk refuses the batch
        raise OSError(28, "No space left on device")
    partition.on_append = disk_full
    with caplog.at_level(logging.WARNING, logger="kcoord.journal"):
        for i in range(3):
            journal(_event(i))
        partition.on_append = None
        journal(_event(3))
    journal.close()
    assert (sink.dropped, sink.appended) == (3, 1)
    assert len((tmp_path / "events.jsonl").read_text().splitlines()) == 4  # the file journal is unaffected
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("kcoord")]
    assert len([m for m in messages if "cannot append" in m]) == 1, messages
    assert "No space left on device" in messages[0]
    assert any("appending again after dropping 3 records" in m for m in messages), messages
    ((record,),) = _records(store.get("journal"))
    assert json.loads(record[2])["generation"] == 3


def test_a_deleted_journal_topic_is_created_again():
    store = TopicStore()
    sink = JournalTopic(store, "journal")
    sink.start()
    sink({"group_id": "g", "time_ms": 1}, '{"a":1}')
    first_id = store.get("journal").topic_id
    store.delete("journal")
    sink({"group_id": "g", "time_ms": 2}, '{"a":2}')
    assert store.get("journal").topic_id != first_id
    assert [r[2] for r in _records(store.get("journal"))[0]] == [b'{"a":2}']


@pytest.mark.parametrize("name", ["", "has space", "a/b", "..", "__consumer_offsets", "x" * 250])
def test_bad_journal_topic_names_are_refused(name):
    with pytest.raises(ValueError):
        check_journal_topic(name)
    with pytest.raises(ValueError):
        JournalTopic(TopicStore(), name)
