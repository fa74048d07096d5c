"""CreatePartitions: a topic grows; consumers notice through their metadata refresh and
rebalance, as on Kafka (the coordinator itself is not told)."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.log.topics import TopicError
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode


def _grow(ctx, t, validate_only: bool) -> dict:
    store = ctx.broker.topics
    result = {"name": t.name, "error_code": ErrorCode.NONE, "error_message": None}
    try:
        assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        store.add_partitions(t.name, t.count, assignment, validate_only=validate_only)
    except TopicError as err:
        return {**result, "error_code": ErrorCode[err.code_name], "error_message": err.message}
    return result


async def create_partitions(ctx, req):
    # As Kafka's controller answers: a name given twice gets one error entry, first; the
    # other topics follow in request order.
    names = [t.name for t in req.topics]
    duplicated = list(dict.fromkeys(n for n in names if names.count(n) > 1))
    results = [{"name": n, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Duplicate topic name."}
               for n in duplicated]
    may_alter = topic_gate(ctx)
    results += [_grow(ctx, t, req.validate_only) if may_alter(t.name) else
                {"name": t.name, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 "error_message": "Topic authorization failed."}
                for t in req.topics if t.name not in duplicated]
    return {"throttle_time_ms": 0, "results": results}


DESCRIPTOR = ApiDescriptor(
    ApiKey.CREATE_PARTITIONS, 0, 3, create_partitions,
    "a topic grows (validate-only too), placed on the brokers or as the assignments say",
    version_notes={2: "flexible versions"}, topic_acl=TopicAcl(TopicOperation.ALTER))
