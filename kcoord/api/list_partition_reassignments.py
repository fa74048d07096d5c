"""ListPartitionReassignments: the partitions being moved, each with its replicas (the target
followed by those being removed) and the replicas being added and removed, as Kafka's
controller lists them; partitions and topics not being moved (or unknown) are left out."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode


def _ongoing(partition) -> dict:
    return {"partition_index": partition.index, "replicas": list(partition.replicas),
            "adding_replicas": list(partition.adding), "removing_replicas": list(partition.removing)}


def _failed(version, body, code):
    message = "Cluster authorization failed." if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else None
    topics = [{"name": t.name, "partitions": [{"partition_index": i, "replicas": [], "adding_replicas": [],
                                               "removing_replicas": []} for i in t.partition_indexes]}
              for t in body.topics or ()]
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "topics": topics}


async def list_partition_reassignments(ctx, req):
    if not cluster_allowed(ctx, "Describe"):
        return _failed(ctx.api_version, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    store = ctx.broker.cluster.topics
    if req.topics is None:
        wanted = [(t.name, [p.index for p in t.partitions]) for t in store.topics.values()]
    else:
        wanted = [(t.name, list(t.partition_indexes)) for t in req.topics]
    topics = []
    for name, indexes in wanted:
        found = [store.partition(name, i) for i in indexes] if store.get(name) is not None else []
        ongoing = [_ongoing(p) for p in found if p is not None and (p.adding or p.removing)]
        if ongoing:
            topics.append({"name": name, "partitions": ongoing})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "topics": topics}


DESCRIPTOR = ApiDescriptor(
    ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, list_partition_reassignments,
    "the reassignments in progress (docs/cluster.md); needs Describe on the cluster with ACLs on",
    error_response=_failed)
