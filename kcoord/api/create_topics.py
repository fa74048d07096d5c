"""CreateTopics: topics placed on the cluster's brokers (kcoord.cluster.placement), or where
the request's manual assignment says."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.log.configs import TOPIC_DEFAULTS
from kcoord.log.topics import TopicError
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode


def _assignment(t) -> dict[int, list[int]] | None:
    """The request's manual assignment (partition -> replicas), checked as Kafka's controller
    checks its form before the brokers named (kcoord.log.topics does those)."""
    if not t.assignments:
        return None
    if t.replication_factor != -1:
        raise TopicError("INVALID_REQUEST", "A manual partition assignment was specified, but replication "
                                            "factor was not set to -1.")
    if t.num_partitions != -1:
        raise TopicError("INVALID_REQUEST", "A manual partition assignment was specified, but numPartitions "
                                            "was not set to -1.")
    out: dict[int, list[int]] = {}
    for a in t.assignments:
        if a.partition_index in out:
            raise TopicError("INVALID_REPLICA_ASSIGNMENT",
                             f"Found multiple manual partition assignments for partition {a.partition_index}")
        out[a.partition_index] = list(a.broker_ids)
    return out


def _create_one(ctx, t, validate_only):
    store = ctx.broker.topics
    result = {"name": t.name, "error_code": ErrorCode.NONE, "error_message": None,
              "num_partitions": -1, "replication_factor": -1, "configs": None}
    configs = {c.name: c.value for c in t.configs}
    unknown = sorted(set(configs) - set(TOPIC_DEFAULTS))
    if unknown:
        return {**result, "error_code": ErrorCode.INVALID_CONFIG,
                "error_message": f"unknown topic config(s): {', '.join(unknown)}"}
    if t.name in store.topics:
        return {**result, "error_code": ErrorCode.TOPIC_ALREADY_EXISTS,
                "error_message": f"Topic '{t.name}' already exists."}
    try:
        assignment = _assignment(t)
        if assignment is None and (t.replication_factor < -1 or t.replication_factor == 0):
            raise TopicError("INVALID_REPLICATION_FACTOR",
                             "Replication factor must be larger than 0, or -1 to use the default value.")
        if assignment is None and (t.num_partitions < -1 or t.num_partitions == 0):
            raise TopicError("INVALID_PARTITIONS", "Number of partitions was set to an invalid non-positive value.")
        if validate_only:
            replicas, _ = store.plan(t.name, t.num_partitions, configs, t.replication_factor, assignment)
            topic_id = None
        else:
            topic = store.create(t.name, t.num_partitions, configs, replication_factor=t.replication_factor,
                                 assignment=assignment)
            topic_id, replicas = topic.topic_id, [p.replicas for p in topic.partitions]
    except TopicError as err:
        return {**result, "error_code": ErrorCode[err.code_name], "error_message": str(err)}
    merged = {**TOPIC_DEFAULTS, **configs}
    return {**result, "topic_id": topic_id, "num_partitions": len(replicas), "replication_factor": len(replicas[0]),
            "configs": [{"name": k, "value": v, "read_only": False, "config_source": 1 if k in configs else 5,
                         "is_sensitive": False} for k, v in sorted(merged.items())]}


async def create_topics(ctx, req):
    may_create = topic_gate(ctx)
    may_describe_configs = topic_gate(ctx, TopicOperation.DESCRIBE_CONFIGS)
    topics = []
    for t in req.topics:
        if not may_create(t.name):
            continue
        created = _create_one(ctx, t, req.validate_only)
        if created["error_code"] == ErrorCode.NONE and not may_describe_configs(t.name):
            # As Kafka's controller: the configs are shown only with DescribeConfigs on the topic.
            created = {**created, "configs": [], "topic_config_error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        topics.append(created)
    # Kafka's ControllerApis answers the topics it may not create after the others.
    topics += [{"name": t.name, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                "error_message": "Authorization failed."} for t in req.topics if not may_create(t.name)]
    return {"throttle_time_ms": 0, "topics": topics}


DESCRIPTOR = ApiDescriptor(
    ApiKey.CREATE_TOPICS, 2, 7, create_topics,
    "placed rack-aware over the brokers (docs/cluster.md), or as the manual assignment says",
    topic_acl=TopicAcl(TopicOperation.CREATE, cluster_wide=True),
    version_notes={5: "the created topic's configs in the response", 7: "topic ids in the response"})
