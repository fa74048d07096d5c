"""UpdateFeatures: `kafka-features upgrade / downgrade / disable` (KIP-584, KIP-778).

Only `transaction.version` and `streams.version` have more than one level kcoord serves; the
others can be "moved" to the level they are at. Refusals are Kafka's controller's: INVALID_UPDATE_VERSION with its
message, for the whole request (nothing is applied when one update is refused).
"""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.features import UPGRADE, FeatureUpdateError
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode


def _answer(ctx, req, code, message):
    body = {"throttle_time_ms": 0, "error_code": code, "error_message": message}
    if ctx.api_version < 2:
        # Before v2 each feature has a result of its own, but only in a success: Kafka's
        # controller answers a refusal with the top-level error alone.
        body["results"] = ([{"feature": u.feature, "error_code": code, "error_message": message}
                            for u in req.feature_updates] if code == ErrorCode.NONE else [])
    return body


async def update_features(ctx, req):
    if not cluster_allowed(ctx, "Alter"):
        return _answer(ctx, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    levels = ctx.broker.features
    changes = {}
    for update in req.feature_updates:
        if ctx.api_version == 0:
            upgrade_type = 2 if update.get("allow_downgrade") else UPGRADE
        else:
            upgrade_type = update.get("upgrade_type", UPGRADE)
        level = max(update.max_version_level, 0)   # below 1: delete the feature (level 0)
        # A feature named twice: the last update counts, as in the controller's map of them.
        try:
            levels.check(update.feature, level, upgrade_type, ctx.broker.controller_id)
        except FeatureUpdateError as err:
            return _answer(ctx, req, ErrorCode.INVALID_UPDATE_VERSION,
                           f"The update failed for all features since the following feature had an error: {err}")
        changes[update.feature] = level
    if not req.get("validate_only", False):
        levels.update(changes)
    return _answer(ctx, req, ErrorCode.NONE, None)


DESCRIPTOR = ApiDescriptor(
    ApiKey.UPDATE_FEATURES, 0, 2, update_features,
    "transaction.version moved between 0 and 2, streams.version between 0 and 1; the other features stay at "
    "the one level served")
