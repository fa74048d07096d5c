"""StreamsGroupHeartbeat (KIP-1071): join, stay in, reconcile with and leave a streams group, and
have the group's missing internal topics created.

Translation only: every rule lives in kcoord.coordinator.streams.protocol. What KafkaApis does
around the coordinator is here: the streams.version gate, the topology's topics checked
(internal or invalid names, DESCRIBE on each), and the internal topics the coordinator asks
for created (CREATE on the cluster or on each topic, else a status saying which were not).
"""
import logging

from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.coordinator.streams.protocol import MISSING_INTERNAL_TOPICS, StreamsHeartbeatRequest
from kcoord.log.topics import INTERNAL_TOPICS, TopicError, validate_topic_name
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.api")


def _topology_topics(topology: dict) -> list[str]:
    names: dict[str, None] = {}
    for sub in topology["subtopologies"]:
        names.update(dict.fromkeys(sub["source_topics"]))
        names.update(dict.fromkeys(sub["repartition_sink_topics"]))
        names.update(dict.fromkeys(t["name"] for t in sub["repartition_source_topics"]))
        names.update(dict.fromkeys(t["name"] for t in sub["state_changelog_topics"]))
    return list(names)


def _valid(name: str) -> bool:
    try:
        validate_topic_name(name)
    except TopicError:
        return False
    return True


async def streams_group_heartbeat(ctx, req):
    if ctx.broker.features.level("streams.version") < 1:
        return _failed(ctx.api_version, req, ErrorCode.UNSUPPORTED_VERSION)
    topology = req.get("topology")
    if topology is not None:
        required = _topology_topics(topology)
        internal = [n for n in required if n in INTERNAL_TOPICS]
        if internal:
            return _failed(ctx.api_version, req, ErrorCode.STREAMS_INVALID_TOPOLOGY,
                           f"Use of Kafka internal topics {','.join(internal)} in a Kafka Streams topology is "
                           "prohibited.")
        invalid = [n for n in required if not _valid(n)]
        if invalid:
            return _failed(ctx.api_version, req, ErrorCode.STREAMS_INVALID_TOPOLOGY,
                           f"Topic names {','.join(invalid)} are not valid topic names.")
        may_describe = topic_gate(ctx)
        if not all(may_describe(n) for n in required):
            return _failed(ctx.api_version, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    result = ctx.broker.coordinator.for_group(req.group_id).streams_group_heartbeat(StreamsHeartbeatRequest(
        req.group_id, req.member_id, req.member_epoch, req.endpoint_information_epoch,
        instance_id=req.get("instance_id"), rack_id=req.get("rack_id"),
        rebalance_timeout_ms=req.get("rebalance_timeout_ms", -1), topology=topology,
        active_tasks=req.get("active_tasks"), standby_tasks=req.get("standby_tasks"),
        warmup_tasks=req.get("warmup_tasks"), process_id=req.get("process_id"),
        user_endpoint=req.get("user_endpoint"), client_tags=req.get("client_tags"),
        task_offsets=req.get("task_offsets"), task_end_offsets=req.get("task_end_offsets"),
        shutdown_application=req.get("shutdown_application", False),
        # As Kafka prints an InetAddress: "/127.0.0.1".
        client_id=ctx.client_id or "", client_host="/" + ctx.client_host))
    # Kafka's answers always carry a status list (the schema's default is empty, not null).
    status = [list(s) for s in result.status or []]
    if result.topics_to_create:
        status = _create_internal_topics(ctx, result.topics_to_create, status)
    return {"throttle_time_ms": 0, "error_code": result.error, "error_message": result.message,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms, "acceptable_recovery_lag": 0,
            "task_offset_interval_ms": 0,
            "status": [{"status_code": c, "status_detail": d} for c, d in status],
            "active_tasks": result.active_tasks, "standby_tasks": result.standby_tasks,
            "warmup_tasks": result.warmup_tasks, "endpoint_information_epoch": result.endpoint_information_epoch,
            "partitions_by_user_endpoint": result.partitions_by_user_endpoint}


def _create_internal_topics(ctx, topics: dict, status: list) -> list:
    """Kafka's autoTopicCreationManager for streams groups: the topics the coordinator found
    missing are created (the next heartbeat sees them), unless the principal may not."""
    may_create = topic_gate(ctx, TopicOperation.CREATE)
    refused = [n for n in topics if not may_create(n)]
    if refused:
        words = f"Unauthorized to CREATE on topics {', '.join(refused)}."
        for entry in status:
            if entry[0] == MISSING_INTERNAL_TOPICS:
                entry[1] = f"{entry[1]}; {words}"
                break
        else:
            status.append([MISSING_INTERNAL_TOPICS, words])
        return status
    store = ctx.broker.topics
    for name, info in topics.items():
        if name in store.topics:
            continue
        try:
            store.create(name, info.partitions, dict(info.configs),
                         replication_factor=info.replication_factor if info.replication_factor > 0 else None)
        except TopicError as err:   # created meanwhile, or refused: the next heartbeat says so again
            log.info("streams internal topic %s not created: %s", name, err)
    return status


def _failed(version, body, code, message=None):
    # As Kafka's error answers: the error and nothing of the member's (not even its id).
    return {"error_code": code, "error_message": message, "member_id": "",
            "member_epoch": 0, "heartbeat_interval_ms": 0, "acceptable_recovery_lag": 0,
            "task_offset_interval_ms": 0, "status": [], "active_tasks": None, "standby_tasks": None,
            "warmup_tasks": None, "endpoint_information_epoch": 0, "partitions_by_user_endpoint": None}


DESCRIPTOR = ApiDescriptor(
    ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 0, streams_group_heartbeat,
    "streams groups (KIP-1071), see docs/streams-groups.md: the sticky task assignor with standby "
    "replicas, internal topics created, endpoint information; as Kafka 4.3.1, no static members, "
    "warm-up tasks or source topic regexes",
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.DESCRIBE),
    error_response=_failed)
