"""AlterConfigs: a topic's own configs, or a broker resource's dynamic configs, replaced as a whole."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._topic_config_changes import change_configs
from kcoord.log.configs import replaced


async def alter_configs(ctx, req):
    def broker(dynamic, res):
        dynamic.check_resource(res.resource_name)
        configs = {c.name: c.value for c in res.configs}
        dynamic.validate(res.resource_name, configs)
        return configs

    return change_configs(ctx, req, lambda current, res: replaced([(c.name, c.value) for c in res.configs]), broker)


DESCRIPTOR = ApiDescriptor(
    ApiKey.ALTER_CONFIGS, 0, 2, alter_configs,
    "a topic's configs, or a broker's (its node id, or \"\" for the cluster default) dynamic ones, replaced "
    "as a whole, checked as Kafka checks them",
    version_notes={2: "flexible versions"}, topic_acl=TopicAcl(TopicOperation.ALTER_CONFIGS))
