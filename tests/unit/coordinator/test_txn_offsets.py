"""Transactional offset commits in the group coordinator (TxnOffsetCommit, KIP-98/447): Kafka's
validation for classic and consumer groups, offsets pending per producer until the transaction
ends, OffsetFetch's require_stable, and how deletion and retention treat pending offsets."""
from kcoord.coordinator import OffsetCommitPartition
from kcoord.coordinator.events import EventKind
from kcoord.coordinator.requests import TxnOffsetCommitRequest
from tests.unit.coordinator.consumer_harness import ConsumerHarness
from tests.unit.coordinator.harness import Harness
from wire.errors import ErrorCode as E

PID, EPOCH = 4000, 3


def txn_commit(h, offsets=(("t", 0, 10),), group="g", pid=PID, member_id="", generation=-1, instance=None,
               metadata=""):
    return h.c.txn_offset_commit(TxnOffsetCommitRequest(
        group, pid, EPOCH, [OffsetCommitPartition(t, p, o, -1, metadata) for t, p, o in offsets],
        member_id=member_id, generation_id=generation, instance_id=instance))


def fetched(h, partitions=(("t", 0),), group="g", stable=False):
    error, out = h.c.fetch_offsets(group, None if partitions is None else list(partitions), require_stable=stable)
    assert error == E.NONE
    return [(f.topic, f.partition, f.offset, f.error) for f in out]


# ------------------------------------------------------------------ pending, commit, abort

def test_a_producer_commit_to_an_unknown_group_waits_for_the_transaction_to_commit():
    h = Harness()
    result = txn_commit(h, [("t", 0, 10), ("t", 1, 20)])
    assert result.partitions == [("t", 0, E.NONE), ("t", 1, E.NONE)]
    assert h.group("g") is not None and str(h.group("g").state) == "Empty"   # a simple group, as Kafka makes
    assert fetched(h, [("t", 0)]) == [("t", 0, -1, E.NONE)]                  # not committed yet
    assert fetched(h, [("t", 0), ("t", 2)], stable=True) == [("t", 0, -1, E.UNSTABLE_OFFSET_COMMIT),
                                                             ("t", 2, -1, E.NONE)]
    assert EventKind.OFFSETS_COMMITTED not in h.kinds()

    assert h.c.complete_transaction(PID, commit=True) == 2
    assert fetched(h, [("t", 0), ("t", 1)], stable=True) == [("t", 0, 10, E.NONE), ("t", 1, 20, E.NONE)]
    committed = [e for e in h.events if e.kind == EventKind.OFFSETS_COMMITTED]
    assert [(e.group_id, e.details["count"], e.details["producer_id"]) for e in committed] == [("g", 2, PID)]


def test_an_aborted_transaction_leaves_the_committed_offsets_as_they_were():
    h = Harness()
    assert h.commit(offsets=[("t", 0, 5)]).error == E.NONE
    txn_commit(h, [("t", 0, 10)])
    assert fetched(h, stable=True) == [("t", 0, -1, E.UNSTABLE_OFFSET_COMMIT)]
    assert fetched(h) == [("t", 0, 5, E.NONE)]
    assert h.c.complete_transaction(PID, commit=False) == 0
    assert fetched(h, stable=True) == [("t", 0, 5, E.NONE)]
    # A marker for a producer with nothing pending (another partition's, or repeated) changes nothing.
    assert h.c.complete_transaction(PID, commit=True) == 0
    assert fetched(h) == [("t", 0, 5, E.NONE)]


def test_require_stable_for_all_partitions_lists_only_committed_ones_as_kafka_does():
    h = Harness()
    h.commit(offsets=[("t", 0, 5), ("t", 1, 6)])
    txn_commit(h, [("t", 1, 10), ("t", 2, 11)])
    assert fetched(h, None, stable=True) == [("t", 0, 5, E.NONE), ("t", 1, -1, E.UNSTABLE_OFFSET_COMMIT)]
    assert fetched(h, None) == [("t", 0, 5, E.NONE), ("t", 1, 6, E.NONE)]


def test_two_producers_pending_on_one_group_end_independently():
    h = Harness()
    txn_commit(h, [("t", 0, 10)], pid=1)
    txn_commit(h, [("t", 1, 20)], pid=2)
    h.c.complete_transaction(2, commit=True)
    assert fetched(h, [("t", 0), ("t", 1)], stable=True) == [("t", 0, -1, E.UNSTABLE_OFFSET_COMMIT),
                                                             ("t", 1, 20, E.NONE)]
    h.c.complete_transaction(1, commit=True)
    assert fetched(h, [("t", 0), ("t", 1)], stable=True) == [("t", 0, 10, E.NONE), ("t", 1, 20, E.NONE)]


# ------------------------------------------------------------------ Kafka's log-order rule

def test_a_plain_commit_made_while_the_transaction_was_open_wins_over_it():
    h = Harness()
    txn_commit(h, [("t", 0, 10)])
    h.commit(offsets=[("t", 0, 7)])                      # written after the transactional one
    assert h.c.complete_transaction(PID, commit=True) == 0
    assert fetched(h) == [("t", 0, 7, E.NONE)]


def test_a_transaction_written_after_a_plain_commit_wins_over_it():
    h = Harness()
    h.commit(offsets=[("t", 0, 7)])
    txn_commit(h, [("t", 0, 10)])
    h.c.complete_transaction(PID, commit=True)
    assert fetched(h) == [("t", 0, 10, E.NONE)]


def test_of_two_committed_transactions_the_later_written_wins_whatever_the_marker_order():
    h = Harness()
    txn_commit(h, [("t", 0, 10)], pid=1)
    txn_commit(h, [("t", 0, 20)], pid=2)
    h.c.complete_transaction(2, commit=True)
    h.c.complete_transaction(1, commit=True)   # written earlier: not applied over producer 2's
    assert fetched(h) == [("t", 0, 20, E.NONE)]
    # With the partition's transactions all ended, a new one is ordered afresh.
    txn_commit(h, [("t", 0, 30)], pid=1)
    h.c.complete_transaction(1, commit=True)
    assert fetched(h) == [("t", 0, 30, E.NONE)]


# ------------------------------------------------------------------ classic group validation

def test_classic_member_checks_as_kafka_makes_them_for_a_transactional_commit():
    h = Harness()
    leader, = h.stable_group(1)
    gen = h.group().generation
    assert txn_commit(h, member_id=leader, generation=gen).error == E.NONE
    assert txn_commit(h, member_id=leader, generation=gen + 1).error == E.ILLEGAL_GENERATION
    assert txn_commit(h, member_id="stranger", generation=gen).error == E.UNKNOWN_MEMBER_ID
    # Before v3 the request names no member: taken whatever the group's state.
    assert txn_commit(h).error == E.NONE
    # An unknown group with a generation is not a simple group.
    assert txn_commit(h, group="nobody", generation=1).error == E.ILLEGAL_GENERATION
    assert h.group("nobody") is None
    assert txn_commit(h, group="").error == E.INVALID_GROUP_ID


def test_a_fenced_static_member_is_told_so():
    h = Harness()
    box = h.join(instance="i1")
    h.advance(1000)
    member = box.result.member_id
    h.sync(member, box.result.generation_id, instance="i1", assignments={member: b"a"})
    gen = h.group().generation
    assert txn_commit(h, member_id=member, generation=gen, instance="i1").error == E.NONE
    assert txn_commit(h, member_id="old-" + member, generation=gen, instance="i1").error == E.FENCED_INSTANCE_ID


def test_the_group_state_is_not_enforced_for_a_transactional_commit():
    h = Harness()
    leader, = h.stable_group(1)
    second = h.join_new()   # the group rebalances: leader's generation is still the current one
    assert str(h.group().state) == "PreparingRebalance"
    assert txn_commit(h, member_id=leader, generation=h.group().generation).error == E.NONE
    assert not second.done


def test_per_partition_errors_as_for_a_plain_commit():
    h = Harness(offset_metadata_max_bytes=8)
    result = txn_commit(h, [("t", 0, 1), ("t", 9, 2), ("nope", 0, 3)], metadata="x" * 9)
    assert result.partitions == [("t", 0, E.OFFSET_METADATA_TOO_LARGE), ("t", 9, E.OFFSET_METADATA_TOO_LARGE),
                                 ("nope", 0, E.OFFSET_METADATA_TOO_LARGE)]
    result = txn_commit(h, [("t", 0, 1), ("t", 9, 2)])
    assert result.partitions == [("t", 0, E.NONE), ("t", 9, E.UNKNOWN_TOPIC_OR_PARTITION)]


# ------------------------------------------------------------------ consumer groups

def test_consumer_group_member_epoch_checks_answer_illegal_generation():
    h = ConsumerHarness()
    joined = h.hb("m1", 0)
    epoch = joined.member_epoch
    assert txn_commit(h, member_id="m1", generation=epoch).error == E.NONE
    # Newer than the member's epoch: Kafka's STALE_MEMBER_EPOCH becomes ILLEGAL_GENERATION here.
    assert txn_commit(h, member_id="m1", generation=epoch + 1).error == E.ILLEGAL_GENERATION
    assert txn_commit(h, member_id="m9", generation=epoch).error == E.UNKNOWN_MEMBER_ID
    # No member fields at all (a producer outside the group): taken.
    assert txn_commit(h).error == E.NONE
    h.c.complete_transaction(PID, commit=True)
    error, out = h.c.fetch_offsets("g", [("t", 0)])
    assert [(f.offset, f.error) for f in out] == [(10, E.NONE)]
    assert [e.kind for e in h.events].count(EventKind.OFFSETS_COMMITTED) == 1


def test_consumer_group_older_epoch_fails_the_whole_commit_if_one_partition_was_not_assigned_then():
    h = ConsumerHarness()
    first = h.hb("m1", 0)
    assert h.named(first.assignment) == {"t": [0, 1, 2, 3]}
    h.hb("m2", 0)   # m1 is to give up 1 and 3
    revoking = h.hb("m1", first.member_epoch, owned={"t": [0, 1, 2, 3]}, partial=True)
    moved_on = h.hb("m1", revoking.member_epoch, owned={"t": [0, 2]}, partial=True)
    older = first.member_epoch
    assert moved_on.member_epoch > older
    # Partitions 0 and 2 were m1's at that epoch already: its older epoch is still good for them.
    assert txn_commit(h, [("t", 0, 1), ("t", 2, 1)], member_id="m1", generation=older).error == E.NONE
    # Partition 1 is not m1's: Kafka fails the whole request, not just that partition.
    result = txn_commit(h, [("t", 0, 1), ("t", 1, 1)], member_id="m1", generation=older)
    assert result.partitions == [("t", 0, E.ILLEGAL_GENERATION), ("t", 1, E.ILLEGAL_GENERATION)]


# ------------------------------------------------------------------ deletion and retention

def test_offset_delete_and_group_delete_drop_pending_offsets_as_kafka_does():
    h = Harness()
    txn_commit(h, [("t", 0, 10), ("t", 1, 11)])
    assert h.c.delete_offsets("g", [("t", 0)]).partitions == [("t", 0, E.NONE)]
    assert fetched(h, [("t", 0), ("t", 1)], stable=True) == [("t", 0, -1, E.NONE), ("t", 1, -1, E.UNSTABLE_OFFSET_COMMIT)]
    assert h.c.delete_group("g") == E.NONE
    assert fetched(h, [("t", 1)], stable=True) == [("t", 1, -1, E.NONE)]
    assert h.c.complete_transaction(PID, commit=True) == 0   # the tombstones took them
    assert fetched(h, [("t", 0), ("t", 1)]) == [("t", 0, -1, E.NONE), ("t", 1, -1, E.NONE)]


def test_retention_keeps_an_offset_and_its_group_while_a_transaction_holds_one_pending():
    h = Harness(offsets_retention_ms=1000, offsets_retention_check_interval_ms=500)
    h.commit(offsets=[("t", 0, 5), ("t", 1, 6)])
    txn_commit(h, [("t", 0, 10)])
    h.advance(2000)
    assert fetched(h, [("t", 0), ("t", 1)]) == [("t", 0, 5, E.NONE), ("t", 1, -1, E.NONE)]
    assert h.group("g") is not None
    h.c.complete_transaction(PID, commit=True)
    assert fetched(h) == [("t", 0, 10, E.NONE)]
    h.advance(2000)
    assert fetched(h) == [("t", 0, -1, E.NONE)] and h.group("g") is None
