"""DescribeConfigs: topic configs, this broker's, client-metrics subscriptions' and groups'."""
from kcoord import broker_config, client_metrics, group_configs
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.config_changes import ConfigChangeError
from kcoord.log.configs import TOPIC_DEFAULTS, config_type
from kcoord.security.acls import allowed_on_group, cluster_allowed, topic_gate
from wire.errors import ErrorCode

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
# ConfigSource codes: DYNAMIC_TOPIC_CONFIG=1, STATIC_BROKER_CONFIG=4, DEFAULT_CONFIG=5.
_DYNAMIC_TOPIC, _STATIC_BROKER, _DEFAULT = 1, 4, 5


def _entries(values: dict[str, str], sources: dict[str, int], keys):
    names = sorted(values) if keys is None else [k for k in keys if k in values]
    return [{"name": k, "value": values[k], "read_only": sources[k] != _DYNAMIC_TOPIC,
             "config_source": sources[k], "is_default": sources[k] == _DEFAULT, "is_sensitive": False,
             "synonyms": [], "config_type": config_type(k), "documentation": None} for k in names]


async def describe_configs(ctx, req):
    results = []
    may_describe = topic_gate(ctx)
    for res in req.resources:
        # Kafka answers "" where it gives no message (every success included), not null.
        r = {"error_code": ErrorCode.NONE, "error_message": "", "resource_type": res.resource_type,
             "resource_name": res.resource_name, "configs": []}
        if res.resource_type == TOPIC_RESOURCE and not may_describe(res.resource_name):
            r["error_code"], r["error_message"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
        elif (res.resource_type in (BROKER_RESOURCE, client_metrics.RESOURCE_TYPE)
              and not cluster_allowed(ctx, "DescribeConfigs")):
            r["error_code"], r["error_message"] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                   "Cluster authorization failed.")
        elif (res.resource_type == group_configs.RESOURCE_TYPE
              and not allowed_on_group(ctx, res.resource_name, "DescribeConfigs")):
            r["error_code"], r["error_message"] = ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."
        elif res.resource_type == TOPIC_RESOURCE:
            topic = ctx.broker.topics.get(res.resource_name)
            if topic is None:
                r["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                r["error_message"] = f"Topic {res.resource_name} does not exist"
            else:
                values = {**TOPIC_DEFAULTS, **topic.configs}
                sources = {k: _DYNAMIC_TOPIC if k in topic.configs else _DEFAULT for k in values}
                r["configs"] = _entries(values, sources, res.configuration_keys)
        elif res.resource_type == BROKER_RESOURCE:
            dynamic = getattr(ctx.broker, "dynamic_configs", None)
            if res.resource_name == "":
                # The cluster-wide default resource: Kafka lists only the dynamic defaults there.
                r["configs"] = broker_config.describe_default(
                    dynamic, res.configuration_keys, include_synonyms=req.get("include_synonyms", False),
                    include_documentation=req.get("include_documentation", False))
            elif res.resource_name != str(ctx.broker.node_id):
                r["error_code"] = ErrorCode.INVALID_REQUEST
                r["error_message"] = f"unexpected broker id {res.resource_name}"
            else:
                r["configs"] = broker_config.describe(
                    ctx.broker.config, res.configuration_keys, include_synonyms=req.get("include_synonyms", False),
                    include_documentation=req.get("include_documentation", False), dynamic=dynamic,
                    node_id=ctx.broker.node_id)
        elif res.resource_type == client_metrics.RESOURCE_TYPE:
            try:
                r["configs"] = ctx.broker.client_metrics.describe(
                    res.resource_name, res.configuration_keys, include_synonyms=req.get("include_synonyms", False),
                    include_documentation=req.get("include_documentation", False))
            except ConfigChangeError as err:
                r["error_code"], r["error_message"] = ErrorCode[err.code_name], str(err)
        elif res.resource_type == group_configs.RESOURCE_TYPE:
            try:
                r["configs"] = ctx.broker.group_configs.describe(
                    res.resource_name, res.configuration_keys, include_synonyms=req.get("include_synonyms", False),
                    include_documentation=req.get("include_documentation", False), dynamic=ctx.broker.dynamic_configs)
            except ConfigChangeError as err:
                r["error_code"], r["error_message"] = ErrorCode[err.code_name], str(err)
        else:
            r["error_code"] = ErrorCode.INVALID_REQUEST
            r["error_message"] = f"resource type {res.resource_type} is not supported"
        results.append(r)
    return {"throttle_time_ms": 0, "results": results}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_CONFIGS, 1, 4, describe_configs,
    "topics (their own and default configs), this broker, client-metrics subscriptions (KIP-714) and groups "
    "(their own configs and the broker's defaults); other resources get INVALID_REQUEST",
    version_notes={3: "documentation on request"}, topic_acl=TopicAcl(TopicOperation.DESCRIBE_CONFIGS))
