"""AlterConfigs: a topic's own configs, a broker resource's dynamic configs, a client-metrics
subscription's or a group's, replaced as a whole."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._topic_config_changes import change_configs
from kcoord.config_changes import replacing
from kcoord.log.configs import replaced


def _pairs(res) -> list[tuple[str, str | None]]:
    return [(c.name, c.value) for c in res.configs]


async def alter_configs(ctx, req):
    def broker(dynamic, res):
        dynamic.check_resource(res.resource_name, ctx.broker.node_id)
        configs = {c.name: c.value for c in res.configs}
        dynamic.validate(res.resource_name, configs)
        return configs

    return change_configs(ctx, req, lambda current, res: replaced(_pairs(res)), broker,
                          lambda current, res: replacing(current, _pairs(res)))


DESCRIPTOR = ApiDescriptor(
    ApiKey.ALTER_CONFIGS, 0, 2, alter_configs,
    "a topic's configs, a broker's (its node id, or \"\" for the cluster default) dynamic ones, a client-metrics "
    "subscription's or a group's (GROUP, 32), replaced as a whole, checked as Kafka checks them",
    version_notes={2: "flexible versions"}, topic_acl=TopicAcl(TopicOperation.ALTER_CONFIGS))
