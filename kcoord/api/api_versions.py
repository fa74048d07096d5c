"""ApiVersions: what this broker serves.

Advertises exactly the registry of `kcoord.api`: the Java client
switches to newer APIs (ConsumerGroupDescribe, DescribeTopicPartitions,
GetTelemetrySubscriptions) as soon as they are advertised, so nothing is
advertised that is not implemented completely. From v3 on the answer carries the
feature levels of kcoord.features.
"""
from kcoord import features
from kcoord.api import ApiDescriptor, ApiKey, registry
from wire.errors import ErrorCode

# The supported ranges never change while kcoord runs: built once per version, not per connection.
_SUPPORTED = {version: features.supported(version) for version in (3, 4)}


def advertised_versions() -> list[dict]:
    return [{"api_key": d.key, "min_version": d.min_version, "max_version": d.max_version}
            for d in registry().values()]


async def api_versions(ctx, req):
    body = {"error_code": ErrorCode.NONE, "api_keys": advertised_versions(), "throttle_time_ms": 0}
    if ctx.api_version >= 3:
        levels = ctx.broker.features
        body.update(supported_features=_SUPPORTED[ctx.api_version], finalized_features_epoch=levels.epoch,
                    finalized_features=levels.finalized())
    return body


DESCRIPTOR = ApiDescriptor(
    ApiKey.API_VERSIONS, 0, 4, api_versions,
    "advertises exactly this table; an unknown version gets a v0 answer with UNSUPPORTED_VERSION",
    version_notes={3: "the feature levels kcoord serves (docs/operations.md#feature-levels)",
                   4: "also the supported features whose minimum level is 0"},
    inline=True)
