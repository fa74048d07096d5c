"""DescribeUserScramCredentials: which SCRAM mechanisms (and iteration counts) each SASL user
has, as Kafka's ScramImage.describe answers it."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import cluster_allowed
from kcoord.security.users import MECHANISM_CODES
from wire.errors import ErrorCode


async def describe_user_scram_credentials(ctx, req):
    if not cluster_allowed(ctx, "Describe"):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": None, "results": []}
    users = ctx.broker.users.users
    if not req.users:
        # No list (or an empty one): every user with a credential.
        asked = {name: False for name in sorted(users) if users[name].scram}
    else:
        asked = {}
        for u in req.users:
            asked[u.name] = u.name in asked  # True: named twice
    results = []
    for name, twice in asked.items():
        result = {"user": name, "error_code": ErrorCode.NONE, "error_message": None, "credential_infos": []}
        user = users.get(name)
        if twice:
            result.update(error_code=ErrorCode.DUPLICATE_RESOURCE, error_message=(
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"))
        elif user is None or not user.scram:
            result.update(error_code=ErrorCode.RESOURCE_NOT_FOUND,
                          error_message=f"Attempt to describe a user credential that does not exist: {name}")
        else:
            result["credential_infos"] = [{"mechanism": MECHANISM_CODES[m], "iterations": c.iterations}
                                          for m, c in sorted(user.scram.items(), key=lambda i: MECHANISM_CODES[i[0]])]
        results.append(result)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "results": results}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, describe_user_scram_credentials,
    "the SASL users' SCRAM mechanisms and iterations (needs Describe on the cluster with ACLs on)")
