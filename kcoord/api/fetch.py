"""Fetch: long-polling reads of the in-memory partitions.

Sessionless only: answering with session id 0 makes every client send full
fetch requests (KIP-227 allows a broker to decline sessions). A read_committed
fetch (isolation level 1) reads no batch past the last stable offset and lists the
aborted transactions in what it read (read_uncommitted: null, as Kafka sends), so
a long poll of one waits, while a transaction is open, until a marker moves the
LSO or its time is up; both levels are told the LSO.
"""
import asyncio

from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._leadership import current_leader, node_endpoints, serving_error
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

READ_COMMITTED = 1   # the request's isolation_level


def _collect(ctx, req):
    store = ctx.broker.topics
    may_read = topic_gate(ctx)
    budget = req.max_bytes if ctx.api_version >= 3 else 2**31 - 1
    read_committed = req.isolation_level == READ_COMMITTED
    total = 0
    responses = []
    leaders = []   # of the partitions answered NOT_LEADER_OR_FOLLOWER (KIP-951)
    for t in req.topics:
        name = t.get("topic")
        topic = store.resolve(name, t.get("topic_id"))
        parts = []
        for p in t.partitions:
            r = {"partition_index": p.partition, "error_code": ErrorCode.NONE, "high_watermark": -1,
                 "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                 "preferred_read_replica": -1, "records": None}
            partition = None if topic is None else store.partition(topic.name, p.partition)
            if (topic is not None or name is not None) and not may_read(name if topic is None else topic.name):
                r["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition is None:
                r["error_code"] = (ErrorCode.UNKNOWN_TOPIC_ID if name is None and topic is None
                                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            # Unlike the other APIs, Kafka's Fetch takes any negative epoch for "not given".
            elif (error := serving_error(ctx.broker, partition, max(p.get("current_leader_epoch", -1), -1),
                                         followers_too=ctx.api_version >= 11)) is not None:
                r["error_code"] = error
                if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and ctx.api_version >= 12:
                    r["current_leader"] = current_leader(partition)
                    leaders.append(partition.leader)
            elif not partition.log_start_offset <= p.fetch_offset <= partition.high_watermark:
                # As Kafka: an out-of-range fetch learns no offsets (-1); the consumer asks ListOffsets.
                r["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
            else:
                r["high_watermark"] = partition.high_watermark
                r["last_stable_offset"] = partition.last_stable_offset
                r["log_start_offset"] = partition.log_start_offset
                # The first batch is returned even past the limits, as Kafka does, so a
                # consumer can always make progress.
                limit = min(p.partition_max_bytes, max(budget - total, 0))
                if read_committed:
                    data, aborted = partition.read_committed(p.fetch_offset, limit, at_least_one=total == 0)
                    r["aborted_transactions"] = [{"producer_id": pid, "first_offset": first}
                                                 for pid, first in aborted]
                else:
                    data = partition.read(p.fetch_offset, limit, at_least_one=total == 0)
                total += len(data)
                r["records"] = data
            parts.append(r)
        responses.append({"topic": name, "topic_id": t.get("topic_id"), "partitions": parts})
    return responses, total, leaders


async def fetch(ctx, req):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(req.max_wait_ms, 0) / 1000
    while True:
        responses, total, leaders = _collect(ctx, req)
        remaining = deadline - loop.time()
        # As Kafka's ReplicaManager: a fetch of no partitions (a closing consumer's) is not parked.
        if (total >= max(req.min_bytes, 1) or remaining <= 0 or not any(t["partitions"] for t in responses)
                or _has_error(responses)):
            break
        await ctx.broker.topics.wait_appended(remaining)
    answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
    if leaders and ctx.api_version >= 16:
        answer["node_endpoints"] = node_endpoints(ctx.broker, leaders)
    return answer


def _has_error(responses):
    return any(p["error_code"] for t in responses for p in t["partitions"])


DESCRIPTOR = ApiDescriptor(
    ApiKey.FETCH, 4, 18, fetch,
    "long poll woken by produce and transaction markers; sessionless (session id 0); "
    "read_committed: whole batches below the last stable offset, with the aborted transactions in them",
    topic_acl=TopicAcl(TopicOperation.READ),
    version_notes={11: "any in-sync replica answers a consumer (KIP-392); others: NOT_LEADER_OR_FOLLOWER",
                   12: "NOT_LEADER_OR_FOLLOWER names the current leader (KIP-951)",
                   13: "topics by id; an unknown id gets UNKNOWN_TOPIC_ID"})
