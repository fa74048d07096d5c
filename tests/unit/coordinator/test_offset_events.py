"""What the coordinator's events say of the offsets they change, with the manual clock. (Reloading
groups from their records: tests/unit/storage/test_offsets_loader.py.)"""
from kcoord.coordinator import OffsetCommitRequest
from kcoord.coordinator.events import EventKind as E
from tests.unit.coordinator.harness import Harness


def test_events_name_the_offsets_they_change():
    h = Harness()
    h.c.commit_offsets(OffsetCommitRequest("g", "", -1, None, [_p("t", 0, 1), _p("t", 1, 2)]))
    committed = [e for e in h.events if e.kind == E.OFFSETS_COMMITTED][-1]
    assert committed.details["partitions"] == [("t", 0), ("t", 1)]
    h.c.delete_offsets("g", [("t", 0), ("t", 2)])
    deleted = [e for e in h.events if e.kind == E.OFFSETS_DELETED][-1]
    assert deleted.details["partitions"] == [("t", 0)]


def _p(topic, partition, offset):
    from kcoord.coordinator import OffsetCommitPartition
    return OffsetCommitPartition(topic, partition, offset)
