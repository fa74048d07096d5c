"""ListConfigResources (KIP-1142; v0 was ListClientMetricsResources): the config resources
there are, of the types asked for."""
from kcoord import client_metrics
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
# The types each version lists (all of them when a v1 request names none), as Kafka's
# ListConfigResourcesRequest.supportedResourceTypes.
SUPPORTED = {0: {client_metrics.RESOURCE_TYPE},
             1: {TOPIC, BROKER, BROKER_LOGGER, client_metrics.RESOURCE_TYPE, GROUP}}


def _resources(broker, resource_type: int) -> list[str]:
    # Kafka lists a broker's loggers (BROKER_LOGGER) for each broker; kcoord has none to
    # configure (docs/deviations.md).
    if resource_type == GROUP:
        return broker.group_configs.names()
    if resource_type == client_metrics.RESOURCE_TYPE:
        return broker.client_metrics.names()
    if resource_type == BROKER:
        return [str(n["node_id"]) for n in broker.brokers()]
    if resource_type == TOPIC:
        return list(broker.topics.topics)
    return []


async def list_config_resources(ctx, req):
    if not cluster_allowed(ctx, "DescribeConfigs"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "config_resources": []}
    supported = SUPPORTED[min(ctx.api_version, 1)]
    asked = set(req.get("resource_types") or supported)
    if not asked <= supported:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION, "config_resources": []}
    # In Kafka's order: groups, client-metrics subscriptions, broker loggers, brokers, topics.
    listed = [{"resource_name": name, "resource_type": t}
              for t in (GROUP, client_metrics.RESOURCE_TYPE, BROKER_LOGGER, BROKER, TOPIC) if t in asked
              for name in _resources(ctx.broker, t)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "config_resources": listed}


DESCRIPTOR = ApiDescriptor(
    ApiKey.LIST_CONFIG_RESOURCES, 0, 1, list_config_resources,
    "client-metrics subscriptions (`kafka-client-metrics --list`); needs DescribeConfigs on the cluster with ACLs on",
    version_notes={1: "of the types asked for (all when none): topics, this broker, client-metrics subscriptions, "
                      "groups with configs of their own; no broker loggers; another type gets UNSUPPORTED_VERSION"})
