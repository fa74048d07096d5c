"""ApiVersions: what this broker serves.

Advertises exactly the registry of `kcoord.api`: the Java client
switches to newer APIs (ConsumerGroupDescribe, DescribeTopicPartitions,
GetTelemetrySubscriptions) as soon as they are advertised, so nothing is
advertised that is not implemented completely.
"""
from kcoord.api import ApiDescriptor, ApiKey, registry
from wire.errors import ErrorCode


def advertised_versions() -> list[dict]:
    return [{"api_key": d.key, "min_version": d.min_version, "max_version": d.max_version}
            for d in registry().values()]


async def api_versions(ctx, req):
    return {"error_code": ErrorCode.NONE, "api_keys": advertised_versions(), "throttle_time_ms": 0}


DESCRIPTOR = ApiDescriptor(
    ApiKey.API_VERSIONS, 0, 4, api_versions,
    "advertises exactly this table; an unknown version gets a v0 answer with UNSUPPORTED_VERSION",
    inline=True)
