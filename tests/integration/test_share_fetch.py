"""ShareFetch (78) and ShareAcknowledge (79) over real sockets with the raw protocol client, against
a real kcoord: share session epochs and their errors, acquire / acknowledge / release / renew,
redelivery, the long poll, a closed connection releasing its member's records, the session limit,
ACL, feature and invalid-request errors. Expected answers are Kafka 4.3.1's (KafkaApis,
SharePartitionManager, ShareSessionCache); the Java share consumer scenarios are in
test_share_groups.py."""
from __future__ import annotations

import threading
import time
import uuid

import pytest

from kcoord.protocol_client import Connection
from kcoord.security.acls import Acl, Operation, PatternType, Permission, ResourceType
from kcoord.share.sessions import next_epoch
from kcoord.testing.brokers import create_topic
from kcoord.testing.plugin import _on_loop
from wire.errors import ErrorCode
from wire.records import build_batch, iter_batches

pytestmark = [pytest.mark.integration]

ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
GROUP = "share-g"


def on_loop(server, fn):
    return server.call(lambda: _on_loop(fn))


@pytest.fixture
def server(kcoord_server):
    """kcoord with share groups on: share.version is finalized at 1 by default, as Kafka 4.3
    formats a new cluster."""
    assert kcoord_server.app.features.level("share.version") == 1
    return kcoord_server


class Member:
    """A share consumer's requests, by hand: one connection, one share session with this broker."""

    def __init__(self, bootstrap: str, member_id: str | None = None, group: str | None = GROUP, version: int = 2):
        self.conn = Connection.to(bootstrap, client_id="share-raw")
        self.member_id = str(uuid.uuid4()) if member_id is None else member_id
        self.group = group
        self.version = version
        self.epoch = 0

    def _moved_on(self, answer) -> None:
        if answer.error_code == 0:
            self.epoch = next_epoch(self.epoch)

    def fetch(self, partitions=(), acks=None, max_wait_ms=0, max_records=500, batch_size=500, forget=(),
              epoch=None, **fields):
        """`partitions`: [(topic id, index)]; `acks`: {(topic id, index): [(first, last, [types])]}."""
        acks = acks or {}
        wanted = list(dict.fromkeys([*partitions, *acks]))
        body = {"group_id": self.group, "member_id": self.member_id,
                "share_session_epoch": self.epoch if epoch is None else epoch, "max_wait_ms": max_wait_ms,
                "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records, "batch_size": batch_size,
                "share_acquire_mode": 0, "is_renew_ack": False,
                "topics": _topics(wanted, acks, "partition_index"),
                "forgotten_topics_data": [{"topic_id": t, "partitions": [i]} for t, i in forget], **fields}
        answer = self.conn.call(78, self.version, body)
        if epoch is None:
            self._moved_on(answer)
        return answer

    def acknowledge(self, acks, epoch=None, renew=False):
        body = {"group_id": self.group, "member_id": self.member_id,
                "share_session_epoch": self.epoch if epoch is None else epoch, "is_renew_ack": renew,
                "topics": _topics(list(acks), acks, "partition_index")}
        answer = self.conn.call(79, self.version, body)
        if epoch is None:
            self._moved_on(answer)
        return answer

    def close(self):
        self.conn.close()


def _topics(partitions, acks, index_field):
    topics: dict = {}
    for topic_id, index in partitions:
        batches = [{"first_offset": f, "last_offset": last, "acknowledge_types": types}
                   for f, last, types in acks.get((topic_id, index), [])]
        topics.setdefault(topic_id, []).append({index_field: index, "acknowledgement_batches": batches})
    return [{"topic_id": t, "partitions": parts} for t, parts in topics.items()]


def partitions_of(answer) -> dict:
    """(topic id, index) -> partition answer."""
    return {(t.topic_id, p.partition_index): p for t in answer.responses for p in t.partitions}


def acquired(answer, pid) -> list[tuple[int, int, int]]:
    p = partitions_of(answer).get(pid)
    return [] if p is None else [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]


def values(answer, pid) -> list[bytes]:
    p = partitions_of(answer)[pid]
    return [r.value for b in iter_batches(p.records) for r in b.records()]


def make_topic(server, name: str, partitions: int = 1) -> uuid.UUID:
    create_topic(server.bootstrap, name, partitions, wait=len(server.brokers) == 1)
    return on_loop(server, lambda: server.app.broker.topics.get(name).topic_id)


def produce(server, topic: str, *vals: bytes, partition: int = 0) -> None:
    with Connection.to(server.bootstrap, client_id="producer") as conn:
        answer = conn.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": build_batch(
                [(None, v, int(time.time() * 1000)) for v in vals])}]}]})
        assert answer.responses[0].partition_responses[0].error_code == 0


def open_session(member: Member, pids) -> object:
    """The opening ShareFetch; the share-partitions start at the log end (share.auto.offset.reset
    latest), retried while the share coordinator is still loading, as a share consumer retries."""
    deadline = time.monotonic() + 30
    answer = member.fetch(pids)
    while any(p.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE for p in partitions_of(answer).values()):
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)
        answer = member.fetch()
    assert answer.error_code == 0 and all(p.error_code == 0 for p in partitions_of(answer).values()), answer
    return answer


def sessions_on_new_topic(server, topic: str, members: int = 1):
    """A new one-partition topic and `members` members, each with a share session on it opened
    before anything is produced: (the partition, the members)."""
    pid = (make_topic(server, topic), 0)
    opened = [Member(server.bootstrap) for _ in range(members)]
    for member in opened:
        open_session(member, [pid])
    return pid, opened


def test_acquire_acknowledge_and_nothing_is_delivered_again(server):
    tid = make_topic(server, "sf-accept")
    pid = (tid, 0)
    member = Member(server.bootstrap)
    first = open_session(member, [pid])
    assert first.acquisition_lock_timeout_ms == 30000
    produce(server, "sf-accept", b"a", b"b", b"c")
    answer = member.fetch(max_wait_ms=5000)
    assert acquired(answer, pid) == [(0, 2, 1)]
    assert values(answer, pid) == [b"a", b"b", b"c"]
    answer = member.fetch(acks={pid: [(0, 2, [ACCEPT])]})
    assert partitions_of(answer)[pid].acknowledge_error_code == 0
    assert acquired(answer, pid) == []
    other = Member(server.bootstrap)
    assert acquired(open_session(other, [pid]), pid) == []


def test_release_delivers_again_with_delivery_count_two(server):
    pid, (member,) = sessions_on_new_topic(server, "sf-release")
    produce(server, "sf-release", b"a", b"b")
    assert acquired(member.fetch(max_wait_ms=5000), pid) == [(0, 1, 1)]
    answer = member.acknowledge({pid: [(0, 1, [RELEASE])]})
    assert answer.error_code == 0 and partitions_of(answer)[pid].error_code == 0
    assert answer.acquisition_lock_timeout_ms == 30000
    again = member.fetch(max_wait_ms=5000)
    assert acquired(again, pid) == [(0, 1, 2)]
    assert values(again, pid) == [b"a", b"b"]
    # Per offset: accept one, reject the other; then nothing is left to deliver.
    answer = member.acknowledge({pid: [(0, 1, [ACCEPT, REJECT])]})
    assert partitions_of(answer)[pid].error_code == 0
    assert acquired(member.fetch(max_wait_ms=0), pid) == []


def test_acknowledging_records_not_acquired_is_an_invalid_record_state(server):
    pid, (member,) = sessions_on_new_topic(server, "sf-bad-ack")
    produce(server, "sf-bad-ack", b"a", b"b")
    assert acquired(member.fetch(max_wait_ms=5000), pid) == [(0, 1, 1)]
    other = Member(server.bootstrap)
    open_session(other, [pid])
    answer = other.fetch(acks={pid: [(0, 1, [ACCEPT])]})
    p = partitions_of(answer)[pid]
    assert (p.error_code, p.acknowledge_error_code) == (0, ErrorCode.INVALID_RECORD_STATE)
    # Batches out of order: INVALID_REQUEST for the partition, nothing applied.
    answer = member.acknowledge({pid: [(1, 1, [ACCEPT]), (0, 0, [ACCEPT])]})
    assert partitions_of(answer)[pid].error_code == ErrorCode.INVALID_REQUEST
    assert partitions_of(member.acknowledge({pid: [(0, 1, [ACCEPT])]}))[pid].error_code == 0


def test_session_epochs_and_their_errors(server):
    tid = make_topic(server, "sf-epochs", partitions=2)
    p0, p1 = (tid, 0), (tid, 1)
    member = Member(server.bootstrap)
    assert member.fetch([p0], epoch=3).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert member.fetch([p0], epoch=-1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert member.acknowledge({p0: [(0, 0, [ACCEPT])]}, epoch=0).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert member.acknowledge({p0: [(0, 0, [ACCEPT])]}, epoch=1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    # Acknowledgements cannot open a session.
    assert member.fetch(acks={p0: [(0, 0, [ACCEPT])]}, epoch=0).error_code == ErrorCode.INVALID_REQUEST
    full = open_session(member, [p0])
    assert set(partitions_of(full)) == {p0}
    assert member.fetch(epoch=member.epoch + 1).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # An incremental request adding p1: the answer names it once, and p0 (no records) not at all.
    assert set(partitions_of(member.fetch([p1]))) == {p1}
    assert partitions_of(member.fetch()) == {}
    produce(server, "sf-epochs", b"x", partition=1)
    assert acquired(member.fetch(max_wait_ms=5000), p1) == [(0, 0, 1)]
    # p1 forgotten: nothing more from it.
    produce(server, "sf-epochs", b"y", partition=1)
    assert partitions_of(member.fetch(forget=[p1], max_wait_ms=200)) == {}
    # A ShareAcknowledge moves the epoch on too.
    assert member.acknowledge({p1: [(0, 0, [ACCEPT])]}).error_code == 0
    # Epoch -1 closes the session: it fetches nothing, acknowledges, and the session is gone.
    produce(server, "sf-epochs", b"z", partition=0)
    closing = member.fetch([p0], max_wait_ms=200, epoch=-1)
    assert closing.error_code == 0 and acquired(closing, p0) == []
    assert member.fetch(epoch=member.epoch).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_closing_the_session_releases_the_members_records(server):
    pid, (member, other) = sessions_on_new_topic(server, "sf-close", members=2)
    produce(server, "sf-close", b"a", b"b")
    assert acquired(member.fetch(max_wait_ms=5000), pid) == [(0, 1, 1)]
    answer = member.acknowledge({pid: [(0, 0, [ACCEPT])]}, epoch=-1)
    assert answer.error_code == 0 and partitions_of(answer)[pid].error_code == 0
    # Offset 1 was released with the session, long before its 30 s lock would end.
    assert acquired(other.fetch(max_wait_ms=10000), pid) == [(1, 1, 2)]


def test_a_closed_connection_releases_its_members_records_at_once(server):
    pid, (member, other) = sessions_on_new_topic(server, "sf-disconnect", members=2)
    produce(server, "sf-disconnect", b"a", b"b", b"c")
    assert acquired(member.fetch(max_wait_ms=5000), pid) == [(0, 2, 1)]
    assert acquired(other.fetch(max_wait_ms=0), pid) == []
    member.close()
    # Released when the connection went, not when the 30 s lock would have ended.
    answer = other.fetch(max_wait_ms=10000)
    assert acquired(answer, pid) == [(0, 2, 2)]
    assert values(answer, pid) == [b"a", b"b", b"c"]
    # The session went with the connection: the member must open a new one.
    again = Member(server.bootstrap, member_id=member.member_id)
    again.epoch = 2
    assert again.fetch().error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_the_long_poll_answers_when_a_record_is_produced(server):
    pid, (member,) = sessions_on_new_topic(server, "sf-poll")
    # Nothing to acquire: the answer at the end of the wait is empty.
    assert acquired(member.fetch(max_wait_ms=300), pid) == []
    before = server.requests_after(0, 78)
    answers = []
    poll = threading.Thread(target=lambda: answers.append(member.fetch(max_wait_ms=120000)))
    poll.start()
    deadline = time.monotonic() + 30
    while server.requests_after(0, 78) == before:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    produce(server, "sf-poll", b"late")
    poll.join(60)   # well short of the 120 s wait: the produce ended it
    assert not poll.is_alive()
    assert acquired(answers[0], pid) == [(0, 0, 1)] and values(answers[0], pid) == [b"late"]


def test_max_records_and_record_limit_mode(server):
    pid, (member,) = sessions_on_new_topic(server, "sf-limit")
    produce(server, "sf-limit", b"a", b"b", b"c", b"d")
    # KIP-1206 record_limit: exactly max_records, even inside a log batch.
    answer = member.fetch(max_wait_ms=5000, max_records=1, share_acquire_mode=1)
    assert acquired(answer, pid) == [(0, 0, 1)]
    answer = member.fetch(max_wait_ms=5000, max_records=2, share_acquire_mode=1)
    assert acquired(answer, pid) == [(1, 2, 1)]
    assert member.fetch(share_acquire_mode=7).error_code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_renew_extends_locks_and_is_refused_where_kafka_refuses_it(server):
    pid, (member,) = sessions_on_new_topic(server, "sf-renew")
    produce(server, "sf-renew", b"a", b"b")
    assert acquired(member.fetch(max_wait_ms=5000), pid) == [(0, 1, 1)]
    # A renewing ShareFetch must ask for nothing else.
    bad = member.fetch(acks={pid: [(0, 1, [RENEW])]}, is_renew_ack=True, max_wait_ms=100, epoch=member.epoch)
    assert bad.error_code == ErrorCode.INVALID_REQUEST
    # Renew without is_renew_ack: the partition's acknowledgement is refused.
    answer = member.acknowledge({pid: [(0, 1, [RENEW])]})
    assert partitions_of(answer)[pid].error_code == ErrorCode.INVALID_REQUEST
    answer = member.fetch(acks={pid: [(0, 1, [RENEW])]}, is_renew_ack=True, max_bytes=0, min_bytes=0,
                          max_records=0, max_wait_ms=0)
    assert answer.error_code == 0 and partitions_of(answer)[pid].acknowledge_error_code == 0
    assert acquired(answer, pid) == []
    answer = member.acknowledge({pid: [(0, 1, [RENEW])]}, renew=True)
    assert partitions_of(answer)[pid].error_code == 0
    # Still the member's: another member gets nothing, and the member can accept them.
    other = Member(server.bootstrap)
    assert acquired(open_session(other, [pid]), pid) == []
    assert partitions_of(member.acknowledge({pid: [(0, 1, [ACCEPT])]}))[pid].error_code == 0
    # v1 knows no renew.
    v1 = Member(server.bootstrap, member_id=member.member_id, version=1)
    v1.epoch = member.epoch
    answer = v1.acknowledge({pid: [(0, 1, [RENEW])]})
    assert partitions_of(answer)[pid].error_code == ErrorCode.INVALID_REQUEST
    assert "acquisition_lock_timeout_ms" not in answer


def test_renewed_locks_outlast_the_first_lock(kcoord_manual_clock_server):
    """On the coordinator's manual clock: the 30 s lock of a renewed record ends 30 s after the renew."""
    server = kcoord_manual_clock_server
    pid, (member, other) = sessions_on_new_topic(server, "sf-renew-clock", members=2)
    produce(server, "sf-renew-clock", b"a")
    assert acquired(member.fetch(), pid) == [(0, 0, 1)]
    server.advance(20000)
    assert partitions_of(member.acknowledge({pid: [(0, 0, [RENEW])]}, renew=True))[pid].error_code == 0
    server.advance(20000)   # 40 s after the acquisition, 20 s after the renew
    assert acquired(other.fetch(), pid) == []
    server.advance(11000)   # the renewed lock has ended
    assert acquired(other.fetch(), pid) == [(0, 0, 2)]


@pytest.mark.kcoord(kafka_config={"group.share.max.share.sessions": "1"})
def test_the_session_limit(server):
    tid = make_topic(server, "sf-sessions")
    pid = (tid, 0)
    first, second = Member(server.bootstrap), Member(server.bootstrap)
    open_session(first, [pid])
    answer = second.fetch([pid], max_wait_ms=200)
    assert answer.error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED and answer.responses == []
    # Reopening one's own session is not a new one.
    first.epoch = 0
    assert first.fetch([pid]).error_code == 0
    first.close()   # the session goes with the connection
    deadline = time.monotonic() + 30
    while (answer := second.fetch([pid], max_wait_ms=0, epoch=0)).error_code:
        assert answer.error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED and time.monotonic() < deadline
        time.sleep(0.05)


def test_invalid_requests(server):
    tid = make_topic(server, "sf-invalid")
    for member_id in ("", "x" * 37):
        assert Member(server.bootstrap, member_id=member_id).fetch([(tid, 0)]).error_code == ErrorCode.INVALID_REQUEST
        answer = Member(server.bootstrap, member_id=member_id).acknowledge({(tid, 0): [(0, 0, [ACCEPT])]}, epoch=1)
        assert answer.error_code == ErrorCode.INVALID_REQUEST
    assert Member(server.bootstrap, group=None).fetch([(tid, 0)]).error_code == ErrorCode.INVALID_REQUEST
    unknown = uuid.uuid4()
    member = Member(server.bootstrap)
    answer = open_session(member, [(tid, 0)]) and member.fetch([(unknown, 0), (tid, 5)])
    errors = {pid: p.error_code for pid, p in partitions_of(answer).items()}
    assert errors == {(unknown, 0): ErrorCode.UNKNOWN_TOPIC_ID, (tid, 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    answer = member.acknowledge({(unknown, 0): [(0, 0, [ACCEPT])]})
    assert partitions_of(answer)[(unknown, 0)].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_share_groups_off_is_unsupported_version(kcoord_server):
    # kafka-features downgrade --feature share.version=0, on this test's own server.
    on_loop(kcoord_server, lambda: kcoord_server.app.features.update({"share.version": 0}))
    tid = make_topic(kcoord_server, "sf-off")
    member = Member(kcoord_server.bootstrap)
    assert member.fetch([(tid, 0)]).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert member.acknowledge({(tid, 0): [(0, 0, [ACCEPT])]}, epoch=1).error_code == ErrorCode.UNSUPPORTED_VERSION


ANONYMOUS = "User:ANONYMOUS"


def _allow(resource_type, name, operation):
    return Acl(resource_type, name, PatternType.LITERAL, ANONYMOUS, "*", operation, Permission.ALLOW)


@pytest.mark.kcoord(acls=True)
def test_group_and_topic_acls(server):
    authorizer = server.app.broker.authorizer
    on_loop(server, lambda: authorizer.create([
        _allow(ResourceType.CLUSTER, "kafka-cluster", Operation.CREATE),
        _allow(ResourceType.TOPIC, "sf-ok", Operation.READ), _allow(ResourceType.TOPIC, "sf-ok", Operation.DESCRIBE),
        _allow(ResourceType.TOPIC, "sf-denied", Operation.DESCRIBE),
        _allow(ResourceType.GROUP, GROUP, Operation.READ)]))
    ok, denied = (make_topic(server, "sf-ok"), 0), (make_topic(server, "sf-denied"), 0)
    assert Member(server.bootstrap, group="other").fetch([ok]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    answer = Member(server.bootstrap, group="other").acknowledge({ok: [(0, 0, [ACCEPT])]}, epoch=1)
    assert answer.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    member = Member(server.bootstrap)
    answer = member.fetch([ok, denied])
    errors = {pid: p.error_code for pid, p in partitions_of(answer).items()}
    assert errors[denied] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert errors[ok] in (0, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    answer = member.acknowledge({denied: [(0, 0, [ACCEPT])]})
    assert partitions_of(answer)[denied].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.kcoord(brokers=3)
def test_a_partition_led_elsewhere_names_its_leader(server):
    tid = make_topic(server, "sf-leaders", partitions=3)
    led = {index: server.leader("sf-leaders", index) for index in range(3)}
    broker = server.brokers[0]
    elsewhere = next(i for i, node in led.items() if node != broker.node_id)
    member = Member(broker.bootstrap)
    answer = member.fetch([(tid, elsewhere)])
    p = partitions_of(answer)[(tid, elsewhere)]
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert p.current_leader.leader_id == led[elsewhere]
    assert [n.node_id for n in answer.node_endpoints] == [led[elsewhere]]
