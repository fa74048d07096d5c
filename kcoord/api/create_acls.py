"""CreateAcls: ACLs added at run time (kafka-acls --add), checked as Kafka checks them and
kept in the data dir (kcoord.security.acls)."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.api._acls import acl_of, refusal
from kcoord.security.acls import InvalidAcl, validate_new
from wire.errors import ErrorCode


def _failed(version, body, code, message=None) -> dict:
    return {"throttle_time_ms": 0, "results": [{"error_code": code, "error_message": message}
                                               for _ in body.creations]}


async def create_acls(ctx, req):
    refused = refusal(ctx, "Alter")
    if refused is not None:
        return _failed(ctx.api_version, req, *refused)
    results, valid = [], []
    for creation in req.creations:
        acl = acl_of(creation)
        try:
            validate_new(acl)
        except InvalidAcl as err:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(err)})
            continue
        valid.append(acl)
        results.append({"error_code": ErrorCode.NONE, "error_message": None})
    ctx.broker.authorizer.create(valid)
    return {"throttle_time_ms": 0, "results": results}


DESCRIPTOR = ApiDescriptor(
    ApiKey.CREATE_ACLS, 1, 3, create_acls,
    "ACLs on groups, topics and the cluster, kept in the data dir (SECURITY_DISABLED without `--acls`; "
    "needs Alter on the cluster)",
    version_notes={2: "flexible versions"})
