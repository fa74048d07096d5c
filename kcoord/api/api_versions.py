"""ApiVersions (key 18), v0-4.

Advertises exactly the handlers registered in `kcoord.api`: the Java client
switches to newer APIs (ConsumerGroupDescribe, DescribeTopicPartitions,
GetTelemetrySubscriptions) as soon as they are advertised, so nothing is
advertised that is not implemented completely.
"""
from kcoord.api import HANDLERS, handles
from wire.errors import ErrorCode


def advertised_versions() -> list[dict]:
    return [{"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
            for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)]


@handles(18, "ApiVersions", 0, 4)
async def api_versions(ctx, req):
    if ctx.api_version >= 3:
        ctx.connection.client_software = (req.client_software_name, req.client_software_version)
    return {"error_code": ErrorCode.NONE, "api_keys": advertised_versions(), "throttle_time_ms": 0}
