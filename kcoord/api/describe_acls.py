"""DescribeAcls: the ACLs matching a filter, grouped by resource pattern (kafka-acls --list)."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._acls import acl_filter, entry, refusal
from wire.errors import ErrorCode


async def describe_acls(ctx, req):
    refused = refusal(ctx, "Describe")
    if refused is not None:
        return {"throttle_time_ms": 0, "error_code": refused[0], "error_message": refused[1], "resources": []}
    flt = acl_filter(req)
    problem = flt.unknown()
    if problem is not None:
        # Kafka's request parser refuses a filter with UNKNOWN elements.
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "error_message": problem,
                "resources": []}
    resources: dict[tuple, list] = {}
    for acl in ctx.broker.authorizer.describe(flt):
        resources.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(entry(acl))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "resources": [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
        for (t, n, p), acls in resources.items()]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_ACLS, 1, 3, describe_acls,
    "the ACLs matching a filter (SECURITY_DISABLED without `--acls`; needs Describe on the cluster)",
    version_notes={2: "flexible versions"})
