"""IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's configs or a broker's dynamic ones."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.api._topic_config_changes import change_configs
from kcoord.log.configs import altered


async def incremental_alter_configs(ctx, req):
    return change_configs(ctx, req, lambda current, res: altered(
        current, [(c.name, c.config_operation, c.value) for c in res.configs]),
        lambda dynamic, res: dynamic.incremental(res.resource_name,
                                                 [(c.name, c.config_operation, c.value) for c in res.configs]))


DESCRIPTOR = ApiDescriptor(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, incremental_alter_configs,
    "topic configs and a broker's dynamic configs (its node id, or \"\" for the cluster default), checked as "
    "Kafka checks them",
    version_notes={1: "flexible versions"}, topic_acl=TopicAcl(TopicOperation.ALTER_CONFIGS))
