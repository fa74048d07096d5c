"""AlterConfigs: a topic's own configs replaced as a whole."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._topic_config_changes import change_configs
from kcoord.log.configs import replaced


async def alter_configs(ctx, req):
    return change_configs(ctx, req, lambda current, res: replaced([(c.name, c.value) for c in res.configs]))


DESCRIPTOR = ApiDescriptor(
    ApiKey.ALTER_CONFIGS, 0, 2, alter_configs,
    "a topic's configs replaced as a whole, checked as Kafka checks them; broker configs are fixed at start",
    version_notes={2: "flexible versions"}, topic_acl=TopicAcl(TopicOperation.ALTER_CONFIGS))
