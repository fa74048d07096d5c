"""AlterPartitionReassignments: move a partition's replicas, or cancel a move (null replicas),
as Kafka's controller does (kcoord.cluster.cluster: the state; kcoord.cluster.reassignment: the
copying). Each partition succeeds or fails on its own, with Kafka's codes and messages."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.cluster.cluster import ReassignmentError
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode

CLUSTER_DENIED = "Cluster authorization failed."


def _failed(version, body, code):
    """Every partition named fails with `code`, as Kafka's getErrorResponse answers."""
    message = CLUSTER_DENIED if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else None
    answer = {"throttle_time_ms": 0, "error_code": code, "error_message": message, "responses": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": code,
                                         "error_message": message} for p in t.partitions]}
        for t in body.topics]}
    if version >= 1:
        answer["allow_replication_factor_change"] = body.get("allow_replication_factor_change", True)
    return answer


async def alter_partition_reassignments(ctx, req):
    if not cluster_allowed(ctx, "Alter"):
        return _failed(ctx.api_version, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    cluster = ctx.broker.cluster
    allow_rf_change = req.get("allow_replication_factor_change", True)
    responses = []
    for t in req.topics:
        partitions = []
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            try:
                if p.replicas is None:
                    cluster.cancel_reassignment(t.name, p.partition_index)
                else:
                    cluster.reassign(t.name, p.partition_index, list(p.replicas), allow_rf_change)
            except ReassignmentError as err:
                code, message = ErrorCode[err.code_name], str(err)
            partitions.append({"partition_index": p.partition_index, "error_code": code, "error_message": message})
        responses.append({"name": t.name, "partitions": partitions})
    ctx.broker.replica_copier.start()
    answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}
    if ctx.api_version >= 1:
        answer["allow_replication_factor_change"] = allow_rf_change
    return answer


DESCRIPTOR = ApiDescriptor(
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, alter_partition_reassignments,
    "moves replicas between brokers over time, at --reassignment-copy-rate and the replication throttles "
    "(docs/cluster.md); null replicas cancel; needs Alter on the cluster with ACLs on",
    version_notes={1: "allow_replication_factor_change (KIP-860): false refuses a target of another size"},
    error_response=_failed)
