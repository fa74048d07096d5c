"""Metadata: one broker (this node) leads every partition."""
from kcoord.api import NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.log.topics import TopicError
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

def _topic_entry(broker, topic, version):
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": [
            {"error_code": ErrorCode.NONE, "partition_index": p.index, "leader_id": broker.node_id,
             "leader_epoch": p.leader_epoch, "replica_nodes": [broker.node_id], "isr_nodes": [broker.node_id],
             "offline_replicas": []}
            for p in topic.partitions
        ],
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
        "brokers": [broker.node()],
        "cluster_id": broker.config.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


DESCRIPTOR = ApiDescriptor(
    ApiKey.METADATA, 0, 13, metadata,
    "one broker (node 0) leads every partition; topic ids; auto-create",
    topic_acl=TopicAcl(TopicOperation.DESCRIBE),
    version_notes={1: "a null topic list asks for every topic (an empty one did in v0)",
                   4: "auto-creation can be declined", 10: "topic ids", 12: "topics asked for by id alone"})
