"""What CreateAcls, DescribeAcls and DeleteAcls share: Kafka's answers while no authorizer
is configured, the cluster permission they need, and the wire form of an ACL."""
from kcoord.security.acls import Acl, AclFilter, cluster_allowed
from wire.errors import ErrorCode

NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"
NO_AUTHORIZER = "No Authorizer is configured."


def refusal(ctx, operation: str):
    """(error code, message) for a request refused whole, or None: Kafka checks the cluster
    permission first (an exception, a whole-request error), then whether there is an
    authorizer at all."""
    if ctx.broker.authorizer is None:
        return ErrorCode.SECURITY_DISABLED, (NO_AUTHORIZER_DESCRIBE if operation == "Describe" else NO_AUTHORIZER)
    if not cluster_allowed(ctx, operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    return None


def acl_filter(f) -> AclFilter:
    return AclFilter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                     f.host_filter, f.operation, f.permission_type)


def acl_of(c) -> Acl:
    return Acl(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
               c.permission_type)


def entry(acl: Acl) -> dict:
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
            "permission_type": acl.permission}
