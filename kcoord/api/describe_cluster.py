"""DescribeCluster: this one node is the whole cluster and its controller."""
from kcoord.api import NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey
from wire.errors import ErrorCode


async def describe_cluster(ctx, req):
    node = ctx.broker.node()
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": req.get("endpoint_type", 1),
            "cluster_id": ctx.broker.config.cluster_id, "controller_id": ctx.broker.node_id,
            "brokers": [{"broker_id": node["node_id"], "host": node["host"], "port": node["port"],
                         "rack": node["rack"]}],
            "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_CLUSTER, 0, 1, describe_cluster,
    "this node, as broker and controller",
    version_notes={1: "the endpoint type asked for is echoed"})
