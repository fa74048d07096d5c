"""ShareFetch: a share group member's long poll for records (KIP-932), as Kafka 4.3.1's
KafkaApis.handleShareFetchRequest serves it. The request goes through the broker's share
session (kcoord.share.sessions), applies the acknowledgements it carries first, then acquires
records for the member (kcoord.share.manager.ShareManager), waiting up to max_wait_ms until some
can be acquired. v2: record_limit acquisition (KIP-1206) and renew acknowledgements (KIP-1222),
which fetch nothing.
"""
from __future__ import annotations

import asyncio

from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.api._leadership import node_endpoints, serving_error
from kcoord.api._share_requests import (acknowledge, by_topic, close_session, failed, name_leader, refusal,
                                        share_error)
from kcoord.security.acls import topic_gate
from kcoord.share.sessions import FINAL_EPOCH, CachedPartition, SessionError
from wire.errors import ErrorCode

BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1   # share_acquire_mode


def _partition(code: ErrorCode = ErrorCode.NONE, records: bytes = b"", acquired=()) -> dict:
    return {"error_code": int(code), "error_message": None, "acknowledge_error_code": 0,
            "acknowledge_error_message": None, "records": records,
            "acquired_records": [{"first_offset": a.first_offset, "last_offset": a.last_offset,
                                  "delivery_count": a.delivery_count} for a in acquired]}


class UnknownAcquireMode(ValueError):
    """Kafka's ShareAcquireMode.forId refuses the mode when records are to be acquired: the request
    fails as a whole with UNKNOWN_SERVER_ERROR (after its acknowledgements)."""


def _renew_misuse(req) -> bool:
    """KIP-1222: a renewing request must ask for no records (max_bytes, min_bytes, max_records and
    max_wait_ms all 0): the time a fetch takes could outlast the locks it renews."""
    return any(v != 0 for v in (req.max_bytes, req.min_bytes, req.max_records, req.max_wait_ms))


async def share_fetch(ctx, req):
    version = ctx.api_version
    if (refused := refusal(ctx, req)) is not None:
        return failed(version, req, refused)
    group_id, member_id, epoch = req.group_id, req.member_id, req.share_session_epoch
    renew = version >= 2 and req.is_renew_ack
    if renew and _renew_misuse(req):
        return failed(version, req, ErrorCode.INVALID_REQUEST)
    store = ctx.broker.topics
    names = {}
    for t in req.topics:
        topic = store.by_id(t.topic_id)
        names[t.topic_id] = None if topic is None else topic.name
    requested = [CachedPartition(t.topic_id, p.partition_index, names[t.topic_id])
                 for t in req.topics for p in t.partitions]
    forget = [(f.topic_id, index) for f in req.forgotten_topics_data for index in f.partitions]
    has_acks = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    try:
        context = ctx.broker.share_sessions.new_context(group_id, member_id, epoch, requested, forget, has_acks,
                                                        ctx.connection)
    except SessionError as err:
        if err.code == ErrorCode.SHARE_SESSION_LIMIT_REACHED:
            # As Kafka: the client is told after its max wait, not made to spin on the refusal.
            await asyncio.sleep(max(req.max_wait_ms, 0) / 1000)
        return failed(version, req, err.code)

    acks = await acknowledge(ctx, group_id, member_id, req.topics, renew) if has_acks else {}
    try:
        results, leaders = ({}, []) if renew else await _fetch(ctx, req, context.partitions(), epoch)
    except UnknownAcquireMode:
        return failed(version, req, ErrorCode.UNKNOWN_SERVER_ERROR)
    error, answered = context.answer(results)
    for pid, (code, message) in acks.items():
        data = answered.setdefault(pid, _partition())
        data["acknowledge_error_code"], data["acknowledge_error_message"] = int(code), message
    if epoch == FINAL_EPOCH:
        close_session(ctx, group_id, member_id)
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": None,
            "acquisition_lock_timeout_ms": ctx.broker.shares.lock_duration_ms(group_id),
            "responses": by_topic(answered), "node_endpoints": node_endpoints(ctx.broker, leaders)}


async def _fetch(ctx, req, partitions: list[CachedPartition], epoch: int):
    """Each partition's answer, and the leaders named by its NOT_LEADER_OR_FOLLOWER answers."""
    store = ctx.broker.topics
    may_read = topic_gate(ctx)
    erroneous, leaders = {}, []
    keys = {}   # (topic, partition) -> (topic id, partition), in fetch order
    for p in partitions:
        pid = (p.topic_id, p.index)
        topic = store.by_id(p.topic_id)
        partition = None if topic is None or topic.name != p.topic else store.partition(p.topic, p.index)
        if p.topic is None:
            erroneous[pid] = _partition(ErrorCode.UNKNOWN_TOPIC_ID)
        elif not may_read(p.topic):
            erroneous[pid] = _partition(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif partition is None:
            erroneous[pid] = _partition(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif (error := serving_error(ctx.broker, partition)) is not None:
            erroneous[pid] = _partition(error)
            name_leader(ctx, pid, erroneous[pid], leaders)
        else:
            keys[(p.topic, p.index)] = pid
    results = {}
    if keys:
        if ctx.api_version >= 2 and req.share_acquire_mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
            raise UnknownAcquireMode(req.share_acquire_mode)
        for key, fetched in (await _acquire(ctx, req, _rotated(list(keys), epoch))).items():
            code = share_error(fetched.error)
            results[keys[key]] = _partition(code, fetched.records, fetched.acquired)
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                name_leader(ctx, keys[key], results[keys[key]], leaders)
    results.update(erroneous)
    return results, leaders


def _rotated(keys: list, epoch: int) -> list:
    """Kafka's round robin over a session's partitions: each epoch starts one further along."""
    if len(keys) < 2 or epoch < 1:
        return keys
    at = epoch % len(keys)
    return keys[at:] + keys[:at]


async def _acquire(ctx, req, keys: list[tuple[str, int]]):
    """What the member acquires, waiting up to max_wait_ms for something to be acquirable
    (DelayedShareFetch); at the deadline, whatever is acquirable then (often nothing)."""
    shares = ctx.broker.shares
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(req.max_wait_ms, 0) / 1000
    record_limit = ctx.api_version >= 2 and req.share_acquire_mode == RECORD_LIMIT
    while True:
        got = await shares.acquire(req.group_id, req.member_id, keys, req.max_records, req.batch_size,
                                   record_limit, req.max_bytes)
        remaining = deadline - loop.time()
        if remaining <= 0 or any(f.acquired or f.error for f in got.values()):
            return got
        # Woken by what may make records acquirable from now on (an append, a release, a lock
        # ending): nothing could be acquired just now, and nothing ran in between. asyncio.timeout,
        # not wait_for: on Python 3.11 wait_for can swallow a cancellation (a shutdown's) that
        # lands as its timeout fires, as the Fetch long poll found (kcoord.log.topics).
        try:
            async with asyncio.timeout(remaining):
                await shares.watch(keys)
        except TimeoutError:
            pass


DESCRIPTOR = ApiDescriptor(
    ApiKey.SHARE_FETCH, 1, 2, share_fetch,
    "share groups (KIP-932): share sessions per broker (closed with their connection, releasing the member's "
    "records), piggybacked acknowledgements, a long poll until records can be acquired",
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.READ),
    error_response=failed,
    version_notes={2: "record_limit acquisition (KIP-1206); renew acknowledgements (KIP-1222)"})
