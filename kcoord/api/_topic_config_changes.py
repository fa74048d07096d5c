"""What AlterConfigs and IncrementalAlterConfigs share: one answer per resource, topics
changed through the topic store (recorded before they take effect), broker resources
through the dynamic broker configs (kcoord.dynamic_broker_config), client-metrics
subscriptions and groups through their stores (kcoord.client_metrics, kcoord.group_configs)."""
from typing import Callable

from kcoord import client_metrics, group_configs
from kcoord.config_changes import ConfigChangeError, check_request
from kcoord.dynamic_broker_config import BrokerConfigChangeError
from kcoord.log.configs import TopicConfigError
from kcoord.security.acls import allowed_on_group, cluster_allowed, topic_gate
from wire.errors import ErrorCode

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
CLUSTER_DENIED = {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed."}
GROUP_DENIED = {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": "Group authorization failed."}


def change_configs(ctx, req, new_configs: Callable[[dict[str, str], object], dict[str, str]],
                   new_broker_configs: Callable[[object, object], dict[str, str]],
                   change_ops: Callable[[dict[str, str], object], list]) -> dict:
    """`new_configs(current, resource)` gives a topic's configs after the request's change to it,
    `new_broker_configs(dynamic, resource)` a broker resource's dynamic configs (validated),
    `change_ops(current, resource)` the change to a subscription's or a group's configs as
    operations (kcoord.config_changes: name, SET/DELETE/APPEND/SUBTRACT, value)."""
    store = ctx.broker.topics
    responses = []
    may_alter = topic_gate(ctx)  # AlterConfigs on each topic, the descriptor's topic_acl
    for res in req.resources:
        r = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": res.resource_type,
             "resource_name": res.resource_name}
        if res.resource_type == TOPIC_RESOURCE and not may_alter(res.resource_name):
            r["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # without a message, as Kafka
        elif res.resource_type == BROKER_RESOURCE and not cluster_allowed(ctx, "AlterConfigs"):
            r["error_code"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        elif res.resource_type == TOPIC_RESOURCE:
            topic = store.get(res.resource_name)
            if topic is None:
                r["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                r["error_message"] = f"The topic '{res.resource_name}' does not exist."
            else:
                try:
                    configs = new_configs(topic.configs, res)
                except TopicConfigError as err:
                    r["error_code"], r["error_message"] = ErrorCode[err.code_name], str(err)
                else:
                    if not req.validate_only:
                        store.set_configs(topic.name, configs)
        elif res.resource_type == BROKER_RESOURCE:
            dynamic = ctx.broker.dynamic_configs
            try:
                configs = new_broker_configs(dynamic, res)
            except BrokerConfigChangeError as err:
                r["error_code"], r["error_message"] = ErrorCode[err.code_name], str(err)
            else:
                if not req.validate_only:
                    try:
                        dynamic.replace(res.resource_name, configs)
                    except OSError as err:
                        r["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                        r["error_message"] = f"writing the broker configs to the data dir failed: {err}"
        elif res.resource_type == client_metrics.RESOURCE_TYPE:
            r.update(_change_schemaless(req, res, ctx.broker.client_metrics, change_ops,
                                        lambda: cluster_allowed(ctx, "AlterConfigs"),
                                        CLUSTER_DENIED, "client-metrics subscription"))
        elif res.resource_type == group_configs.RESOURCE_TYPE:
            r.update(_change_schemaless(req, res, ctx.broker.group_configs, change_ops,
                                        lambda: allowed_on_group(ctx, res.resource_name, "AlterConfigs"),
                                        GROUP_DENIED, "group configs"))
        else:
            r["error_code"] = ErrorCode.INVALID_REQUEST
            r["error_message"] = f"resource type {res.resource_type} is not supported"
        responses.append(r)
    return {"throttle_time_ms": 0, "responses": responses}


def _change_schemaless(req, res, store, change_ops, allowed: Callable[[], bool], denied: dict, what: str) -> dict:
    """The answer for a CLIENT_METRICS or GROUP resource (`store`: kcoord.client_metrics or
    kcoord.group_configs), its checks in Kafka's order: the broker's own (before it forwards the
    request), authorization, then the controller's validation."""
    ops = change_ops(store.configs(res.resource_name), res)
    try:
        check_request(ops)
        if not allowed():
            return denied
        configs = store.altered(res.resource_name, ops)
        if not req.validate_only:
            store.replace(res.resource_name, configs)
    except ConfigChangeError as err:
        return {"error_code": ErrorCode[err.code_name], "error_message": str(err)}
    except OSError as err:
        return {"error_code": ErrorCode.KAFKA_STORAGE_ERROR,
                "error_message": f"writing the {what} to the data dir failed: {err}"}
    return {}
