"""Produce: record batches v2 appended to in-memory partitions.

acks=0 gets no response, as in Kafka. Idempotent producers' sequences and epochs
are checked per (producer id, partition) like Kafka's producer state, and a retry
of one of a producer's last five batches is answered with its first base offset
(kcoord.log.partition).
"""
import logging

from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._leadership import current_leader, node_endpoints, serving_error
from kcoord.log.partition import AppendError
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.produce")

# Kafka answers a producer's sequence and epoch errors without an error message (the reference
# Kafka 4.3.1 sends none); kcoord logs the reason instead.
_WITHOUT_MESSAGE = frozenset({"OUT_OF_ORDER_SEQUENCE_NUMBER", "INVALID_PRODUCER_EPOCH"})


def _min_isr(broker, topic, partition) -> int:
    """min.insync.replicas of the topic (else the cluster's dynamic default, else 1), at most
    the partition's replicas, as Kafka's effective minimum."""
    dynamic = broker.dynamic_configs.default if broker.dynamic_configs is not None else {}
    value = topic.configs.get("min.insync.replicas") or dynamic.get("min.insync.replicas") or "1"
    return min(int(value), len(partition.replicas))


async def produce(ctx, req):
    store = ctx.broker.topics
    may_write = topic_gate(ctx)
    appended = False
    leaders = []   # of the partitions answered NOT_LEADER_OR_FOLLOWER (KIP-951)
    responses = []
    for topic_data in req.topic_data:
        name = topic_data.get("name")
        topic = store.resolve(name, topic_data.get("topic_id"))
        partition_responses = []
        for pd in topic_data.partition_data:
            r = {"index": pd.index, "error_code": ErrorCode.NONE, "base_offset": -1,
                 "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [], "error_message": None}
            partition = None if topic is None else store.partition(topic.name, pd.index)
            if (topic is not None or name is not None) and not may_write(name if topic is None else topic.name):
                # Kafka decides Write before looking the topic up: a denied name is never
                # told whether it exists.
                r["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition is None:
                # v13+ names topics by id only: an id nobody knows is UNKNOWN_TOPIC_ID.
                r["error_code"] = (ErrorCode.UNKNOWN_TOPIC_ID if name is None and topic is None
                                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif serving_error(ctx.broker, partition) is not None:
                r["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                if ctx.api_version >= 10:
                    r["current_leader"] = current_leader(partition)
                    leaders.append(partition.leader)
            elif req.acks == -1 and len(partition.isr) < _min_isr(ctx.broker, topic, partition):
                # Kafka's leader refuses an acks=all write its in-sync replicas cannot make safe.
                r["error_code"] = ErrorCode.NOT_ENOUGH_REPLICAS
                r["error_message"] = (f"The size of the current ISR : {len(partition.isr)} is insufficient to "
                                      f"satisfy the min.isr requirement of {_min_isr(ctx.broker, topic, partition)}"
                                      f" for partition {topic.name}-{pd.index}, live replica(s) broker.id are : "
                                      f"[{', '.join(map(str, partition.isr))}]")
            elif topic.internal:
                # Kafka's ReplicaManager: only the broker itself appends to internal topics
                # (its InvalidTopicException reaches the producer without a message).
                r["error_code"] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif req.transactional_id is not None:
                r["error_code"] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                r["error_message"] = "kcoord does not implement transactions"
            else:
                try:
                    r["base_offset"] = partition.append(pd.records or b"")
                    r["log_start_offset"] = partition.log_start_offset
                    appended = True
                except AppendError as err:
                    r["error_code"] = ErrorCode[err.code_name]
                    if err.code_name in _WITHOUT_MESSAGE:
                        log.info("produce to %s-%d: %s", topic.name, pd.index, err)
                    else:
                        r["error_message"] = str(err)
            partition_responses.append(r)
        responses.append({"name": name, "topic_id": topic_data.get("topic_id"),
                          "partition_responses": partition_responses})
    if appended:
        store.notify_appended()
    if req.acks == 0:
        return None
    answer = {"responses": responses, "throttle_time_ms": 0}
    if leaders:
        answer["node_endpoints"] = node_endpoints(ctx.broker, leaders)
    return answer


DESCRIPTOR = ApiDescriptor(
    ApiKey.PRODUCE, 3, 13, produce,
    "record batches v2, offsets assigned, acks 0/1/-1; idempotent producers: sequences and epochs checked, "
    "a retry of one of the last five batches answered with its first offset",
    topic_acl=TopicAcl(TopicOperation.WRITE),
    version_notes={10: "a partition led elsewhere: NOT_LEADER_OR_FOLLOWER with the current leader (KIP-951)",
                   13: "topics by id; an unknown id gets UNKNOWN_TOPIC_ID"})
