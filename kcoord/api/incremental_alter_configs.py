"""IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's configs, a broker's dynamic
ones, a client-metrics subscription's or a group's."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._topic_config_changes import change_configs
from kcoord.log.configs import altered


def _ops(res) -> list[tuple[str, int, str | None]]:
    return [(c.name, c.config_operation, c.value) for c in res.configs]


async def incremental_alter_configs(ctx, req):
    return change_configs(ctx, req, lambda current, res: altered(current, _ops(res)),
                          lambda dynamic, res: dynamic.incremental(res.resource_name, _ops(res), ctx.broker.node_id),
                          lambda current, res: _ops(res))


DESCRIPTOR = ApiDescriptor(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs,
    "topic configs, a broker's dynamic configs (its node id, or \"\" for the cluster default), client-metrics "
    "subscriptions (KIP-714) and per-group configs (GROUP, 32), checked as Kafka checks them",
    version_notes={1: "flexible versions"}, topic_acl=TopicAcl(TopicOperation.ALTER_CONFIGS))
