"""DeleteAcls: the ACLs matching each filter are deleted (kafka-acls --remove) and listed in
the answer; kept in the data dir (kcoord.security.acls)."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._acls import acl_filter, refusal
from wire.errors import ErrorCode


def _failed(version, body, code, message=None) -> dict:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": message, "matching_acls": []} for _ in body.filters]}


def _matching(acl) -> dict:
    return {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": acl.resource_type,
            "resource_name": acl.name, "pattern_type": acl.pattern_type, "principal": acl.principal,
            "host": acl.host, "operation": acl.operation, "permission_type": acl.permission}


async def delete_acls(ctx, req):
    refused = refusal(ctx, "Alter")
    if refused is not None:
        return _failed(ctx.api_version, req, *refused)
    filters = [acl_filter(f) for f in req.filters]
    problems = [f.unknown() for f in filters]
    deleted = iter(ctx.broker.authorizer.delete([f for f, p in zip(filters, problems) if p is None]))
    results = []
    for problem in problems:
        if problem is not None:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": problem, "matching_acls": []})
        else:
            results.append({"error_code": ErrorCode.NONE, "error_message": None,
                            "matching_acls": [_matching(a) for a in next(deleted)]})
    return {"throttle_time_ms": 0, "filter_results": results}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DELETE_ACLS, 1, 3, delete_acls,
    "the ACLs matching each filter, kept deleted in the data dir (SECURITY_DISABLED without `--acls`; "
    "needs Alter on the cluster)",
    version_notes={2: "flexible versions"})
