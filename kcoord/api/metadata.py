"""Metadata: the brokers the controller counts in, and each partition's leader and replicas."""
from kcoord.api import NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.log.topics import TopicError
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode


def partition_entry(p, alive: set[int]) -> dict:
    """A partition as Metadata (and DescribeTopicPartitions) describe it: no leader is
    LEADER_NOT_AVAILABLE; replicas on brokers the controller counts out (not in `alive`) are
    offline."""
    return {"error_code": ErrorCode.NONE if p.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
            "partition_index": p.index, "leader_id": p.leader, "leader_epoch": p.leader_epoch,
            "replica_nodes": list(p.replicas), "isr_nodes": list(p.isr),
            "offline_replicas": [b for b in p.replicas if b not in alive]}


def _topic_entry(broker, topic, version):
    alive = {n["node_id"] for n in broker.brokers()}
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": [partition_entry(p, alive) for p in topic.partitions],
        "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


async def metadata(ctx, req):
    broker = ctx.broker
    store = broker.topics
    requested = req.topics
    may_describe = topic_gate(ctx)
    if requested is None or (ctx.api_version == 0 and not requested):
        # As Kafka: the topics the principal may not describe are left out.
        topics = [_topic_entry(broker, t, ctx.api_version) for t in store.topics.values() if may_describe(t.name)]
    else:
        # Kafka's auto-creation needs Create on the cluster or on the topic.
        may_create = topic_gate(ctx, TopicOperation.CREATE)
        allow_create = req.get("allow_auto_topic_creation", True) and broker.config.auto_create_topics
        topics = []
        for entry in requested:
            name = entry.get("name")
            # By id when a non-zero id comes without a name: the Java client (MetadataRequest by
            # topic ids, as its consumer resolves the ids of a broker-side regex's assignment)
            # leaves the name "" (the schema's default), not null; Kafka looks these up by id.
            topic_id = entry.get("topic_id")
            if not name and topic_id is not None and topic_id.int != 0:
                topic = store.by_id(entry["topic_id"])
                if topic is None:
                    topics.append({"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None,
                                   "topic_id": entry["topic_id"], "partitions": []})
                    continue
                if not may_describe(topic.name):
                    topics.append({"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": None,
                                   "topic_id": topic.topic_id, "partitions": []})
                    continue
            else:
                topic = store.get(name)
                if not may_describe(name):
                    # Not even whether it exists is told.
                    topics.append({"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": name,
                                   "partitions": []})
                    continue
            if topic is None and allow_create and not may_create(name):
                topics.append({"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": name, "partitions": []})
                continue
            if topic is None and allow_create:
                try:
                    topic = store.create(name)
                except TopicError as err:
                    topics.append({"error_code": ErrorCode[err.code_name], "name": name, "partitions": []})
                    continue
            if topic is None:
                topics.append({"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []})
            else:
                topics.append(_topic_entry(broker, topic, ctx.api_version))
    return {
        "throttle_time_ms": 0,
        "brokers": broker.brokers(),
        "cluster_id": broker.config.cluster_id,
        "controller_id": broker.controller_id,
        "topics": topics,
        "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


DESCRIPTOR = ApiDescriptor(
    ApiKey.METADATA, 0, 13, metadata,
    "every broker the controller counts in; leaders, replicas, ISR; topic ids; auto-create",
    topic_acl=TopicAcl(TopicOperation.DESCRIBE),
    version_notes={1: "a null topic list asks for every topic (an empty one did in v0)",
                   4: "auto-creation can be declined", 10: "topic ids", 12: "topics asked for by id alone"})
