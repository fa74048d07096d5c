"""DescribeCluster: the brokers the controller counts in, and a controller id."""
from kcoord.api import NO_AUTHORIZED_OPERATIONS, ApiDescriptor, ApiKey
from wire.errors import ErrorCode


async def describe_cluster(ctx, req):
    broker = ctx.broker
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": req.get("endpoint_type", 1),
            "cluster_id": broker.config.cluster_id, "controller_id": broker.controller_id,
            "brokers": [{"broker_id": n["node_id"], "host": n["host"], "port": n["port"], "rack": n["rack"]}
                        for n in broker.brokers()],
            "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_CLUSTER, 0, 1, describe_cluster,
    "every broker the controller counts in; the controller id is the lowest of them",
    version_notes={1: "the endpoint type asked for is echoed"})
