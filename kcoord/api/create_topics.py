"""CreateTopics: in-memory topics on this one broker."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.log.configs import TOPIC_DEFAULTS
from kcoord.log.topics import TopicError
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode


def _create_one(ctx, t, validate_only):
    store = ctx.broker.topics
    result = {"name": t.name, "error_code": ErrorCode.NONE, "error_message": None,
              "num_partitions": -1, "replication_factor": -1, "configs": None}
    if t.assignments:
        return {**result, "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": "manual replica assignments are not supported by a single-node kcoord"}
    if t.replication_factor not in (-1, 1):
        return {**result, "error_code": ErrorCode.INVALID_REPLICATION_FACTOR,
                "error_message": f"replication factor {t.replication_factor} is larger than the 1 available broker"}
    configs = {c.name: c.value for c in t.configs}
    unknown = sorted(set(configs) - set(TOPIC_DEFAULTS))
    if unknown:
        return {**result, "error_code": ErrorCode.INVALID_CONFIG,
                "error_message": f"unknown topic config(s): {', '.join(unknown)}"}
    if t.name in store.topics:
        return {**result, "error_code": ErrorCode.TOPIC_ALREADY_EXISTS,
                "error_message": f"Topic '{t.name}' already exists."}
    try:
        if validate_only:
            from kcoord.log.topics import validate_topic_name

            validate_topic_name(t.name)
            n = store.default_partitions if t.num_partitions == -1 else t.num_partitions
            if n <= 0:
                raise TopicError("INVALID_PARTITIONS", "number of partitions must be positive")
            topic_id, partitions = None, n
        else:
            topic = store.create(t.name, t.num_partitions, configs)
            topic_id, partitions = topic.topic_id, len(topic.partitions)
    except TopicError as err:
        return {**result, "error_code": ErrorCode[err.code_name], "error_message": str(err)}
    merged = {**TOPIC_DEFAULTS, **configs}
    return {**result, "topic_id": topic_id, "num_partitions": partitions, "replication_factor": 1,
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
    "one broker: replication factor 1; no manual assignments",
    topic_acl=TopicAcl(TopicOperation.CREATE, cluster_wide=True),
    version_notes={5: "the created topic's configs in the response", 7: "topic ids in the response"})
