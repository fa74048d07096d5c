"""DescribeCluster (key 60, v0-1), DescribeConfigs (key 32, v1-4), InitProducerId (key 22, v0-5)."""
import itertools

from kcoord import broker_config
from kcoord.api import handles
from kcoord.log.configs import TOPIC_DEFAULTS, config_type
from wire.errors import ErrorCode

_NO_OPS = -(2**31)
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
# ConfigSource codes: DYNAMIC_TOPIC_CONFIG=1, STATIC_BROKER_CONFIG=4, DEFAULT_CONFIG=5.
_DYNAMIC_TOPIC, _STATIC_BROKER, _DEFAULT = 1, 4, 5


@handles(60, "DescribeCluster", 0, 1)
async def describe_cluster(ctx, req):
    node = ctx.broker.node()
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": req.get("endpoint_type", 1),
            "cluster_id": ctx.broker.config.cluster_id, "controller_id": ctx.broker.node_id,
            "brokers": [{"broker_id": node["node_id"], "host": node["host"], "port": node["port"],
                         "rack": node["rack"]}],
            "cluster_authorized_operations": _NO_OPS}


def _entries(values: dict[str, str], sources: dict[str, int], keys):
    names = sorted(values) if keys is None else [k for k in keys if k in values]
    return [{"name": k, "value": values[k], "read_only": sources[k] != _DYNAMIC_TOPIC,
             "config_source": sources[k], "is_default": sources[k] == _DEFAULT, "is_sensitive": False,
             "synonyms": [], "config_type": config_type(k), "documentation": None} for k in names]


@handles(32, "DescribeConfigs", 1, 4)
async def describe_configs(ctx, req):
    results = []
    for res in req.resources:
        r = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": res.resource_type,
             "resource_name": res.resource_name, "configs": []}
        if res.resource_type == TOPIC_RESOURCE:
            topic = ctx.broker.topics.get(res.resource_name)
            if topic is None:
                r["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                r["error_message"] = f"Topic {res.resource_name} does not exist"
            else:
                values = {**TOPIC_DEFAULTS, **topic.configs}
                sources = {k: _DYNAMIC_TOPIC if k in topic.configs else _DEFAULT for k in values}
                r["configs"] = _entries(values, sources, res.configuration_keys)
        elif res.resource_type == BROKER_RESOURCE:
            if res.resource_name == "":
                # The cluster-wide default resource: Kafka lists only dynamic defaults there, and kcoord has none.
                pass
            elif res.resource_name != str(ctx.broker.node_id):
                r["error_code"] = ErrorCode.INVALID_REQUEST
                r["error_message"] = f"unexpected broker id {res.resource_name}"
            else:
                r["configs"] = broker_config.describe(
                    ctx.broker.config, res.configuration_keys, include_synonyms=req.get("include_synonyms", False),
                    include_documentation=req.get("include_documentation", False))
        else:
            r["error_code"] = ErrorCode.INVALID_REQUEST
            r["error_message"] = f"resource type {res.resource_type} is not supported"
        results.append(r)
    return {"throttle_time_ms": 0, "results": results}


_producer_ids = itertools.count(1000)


@handles(22, "InitProducerId", 0, 5)
async def init_producer_id(ctx, req):
    if req.transactional_id is not None:
        # Transactions are outside kcoord's scope; say so instead of pretending.
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    pid, epoch = req.get("producer_id", -1), req.get("producer_epoch", -1)
    if pid >= 0 and epoch >= 0:
        # A producer bumping its epoch after a failure keeps its id (KIP-360).
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": pid,
                "producer_epoch": (epoch + 1) & 0x7FFF}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": next(_producer_ids),
            "producer_epoch": 0}
