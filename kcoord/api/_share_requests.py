"""What ShareFetch and ShareAcknowledge share, as Kafka 4.3.1's KafkaApis handles them: the
share.version gate, the member id check, the acknowledgements a request carries (checked,
applied by `ctx.broker.shares`, answered per partition) and the closing of a share session.
"""
from __future__ import annotations

import uuid

from kcoord.api._leadership import current_leader
from kcoord.security.acls import topic_gate
from kcoord.share.manager import AckBatch, invalid_batches
from kcoord.share.partition import RENEW
from wire.errors import ErrorCode

PartitionId = tuple[uuid.UUID, int]

# Kafka's SharePartition turns the share coordinator's answers into what a share consumer is
# told (fetchPersisterError): not (yet) there -> COORDINATOR_NOT_AVAILABLE, fenced -> NOT_LEADER_OR_FOLLOWER.
_STATE_STORE_ERRORS = {
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.FENCED_LEADER_EPOCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_STATE_EPOCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
}
_NOT_HOSTED = "This server does not host this topic-partition."


def failed(version: int, body, code: int) -> dict:
    """A ShareFetch or ShareAcknowledge failed as a whole (their getErrorResponse: the code alone)."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": None, "acquisition_lock_timeout_ms": 0,
            "responses": [], "node_endpoints": []}


def refusal(ctx, req) -> ErrorCode | None:
    """Why KafkaApis refuses a ShareFetch or ShareAcknowledge as a whole before its session is
    looked at: share groups off (share.version 0), no group id, or a member id no member has
    (empty, or longer than a UUID's text: isMemberIdValid)."""
    if ctx.broker.features.level("share.version") < 1:
        return ErrorCode.UNSUPPORTED_VERSION
    member_id = req.member_id
    if req.group_id is None or member_id is None or not 0 < len(member_id) <= 36:
        return ErrorCode.INVALID_REQUEST
    return None


def share_error(code: int) -> ErrorCode:
    """A share-partition's error as the share consumer is told it."""
    return _STATE_STORE_ERRORS.get(ErrorCode(code), ErrorCode(code))


def by_topic(entries: dict[PartitionId, dict]) -> list[dict]:
    """Partition answers keyed by (topic id, index), as a response's topic list."""
    topics: dict[uuid.UUID, list] = {}
    for (topic_id, index), data in entries.items():
        topics.setdefault(topic_id, []).append({"partition_index": index, **data})
    return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()]


def _refused(batches: list[AckBatch], renew_allowed: bool) -> bool:
    """KafkaApis.validateAcknowledgementBatches: the batch checks, and renew (type 4) only at v2+
    in a request that says it renews (is_renew_ack)."""
    if invalid_batches(batches) is not None:
        return True
    return not renew_allowed and any(t == RENEW for b in batches for t in b.types)


async def acknowledge(ctx, group_id: str, member_id: str, topics, renew_allowed: bool
                      ) -> dict[PartitionId, tuple[ErrorCode, str | None]]:
    """Every partition of `topics` (a request's, with `acknowledgement_batches`) answered
    (KafkaApis.handleAcknowledgements): its acknowledgements applied and durable, or its error."""
    store = ctx.broker.topics
    may_read = topic_gate(ctx)
    out: dict[PartitionId, tuple[ErrorCode, str | None]] = {}
    wanted: dict[tuple[str, int], list[AckBatch]] = {}
    ids: dict[tuple[str, int], PartitionId] = {}
    for t in topics:
        topic = store.by_id(t.topic_id)
        for p in t.partitions:
            pid = (t.topic_id, p.partition_index)
            if topic is None:
                out[pid] = (ErrorCode.UNKNOWN_TOPIC_ID, None)
                continue
            batches = [AckBatch(b.first_offset, b.last_offset, list(b.acknowledge_types))
                       for b in p.acknowledgement_batches]
            partition = store.partition(topic.name, p.partition_index)
            if _refused(batches, renew_allowed):
                out[pid] = (ErrorCode.INVALID_REQUEST, None)
            elif not may_read(topic.name):
                out[pid] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
            elif partition is None:
                out[pid] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif not batches:
                out[pid] = (ErrorCode.NONE, None)
            elif not ctx.broker.leads(partition):
                # Kafka: no share-partition on this broker to acknowledge in.
                out[pid] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _NOT_HOSTED)
            else:
                wanted[(topic.name, p.partition_index)] = batches
                ids[(topic.name, p.partition_index)] = pid
    if wanted:
        answers = await ctx.broker.shares.acknowledge(group_id, member_id, wanted)
        for key, (code, message) in answers.items():
            out[ids[key]] = (share_error(code), message)
    return out


def name_leader(ctx, pid: PartitionId, data: dict, leaders: list) -> None:
    """A NOT_LEADER_OR_FOLLOWER answer for `pid` names the current leader (KIP-951); its node is
    then among the response's node endpoints."""
    topic = ctx.broker.topics.by_id(pid[0])
    partition = None if topic is None else ctx.broker.topics.partition(topic.name, pid[1])
    if partition is not None:
        data["current_leader"] = current_leader(partition)
        leaders.append(partition.leader)


def close_session(ctx, group_id: str, member_id: str) -> None:
    """A request at epoch -1 answered: its session goes, the member's acquired records with it."""
    ctx.broker.share_sessions.release(group_id, member_id)
