"""DescribeClientQuotas: kcoord applies no client quotas, so every filter matches none, as
a Kafka without quotas answers. `kafka-configs --describe --entity-type users` asks it
before it asks for the users' SCRAM credentials."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode


async def describe_client_quotas(ctx, req):
    if not cluster_allowed(ctx, "DescribeConfigs"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": None, "entries": None}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "entries": []}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, describe_client_quotas,
    "no quotas (kcoord applies none), so that kafka-configs can describe users",
    version_notes={1: "flexible versions"})
