"""ConsumerGroupHeartbeat (KIP-848): join, stay in, reconcile with and leave a consumer group.

Translation only: every rule lives in kcoord.coordinator.consumer.protocol.
"""
import uuid

from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.coordinator.requests import ConsumerHeartbeatRequest
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

REGEX_SINCE = 1


async def consumer_group_heartbeat(ctx, req):
    names = req.get("subscribed_topic_names")
    if names:
        # As Kafka: a member may not subscribe by name to a topic it may not Describe.
        may_describe = topic_gate(ctx)
        if not all(may_describe(name) for name in set(names)):
            return {**_failed(ctx.api_version, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED), "throttle_time_ms": 0}
    owned = req.get("topic_partitions")
    result = ctx.broker.coordinator.for_group(req.group_id).consumer_group_heartbeat(ConsumerHeartbeatRequest(
        req.group_id, req.member_id, req.member_epoch, instance_id=req.get("instance_id"),
        rack_id=req.get("rack_id"), rebalance_timeout_ms=req.get("rebalance_timeout_ms", -1),
        subscribed_topic_names=(None if req.get("subscribed_topic_names") is None
                                else list(req.subscribed_topic_names)),
        subscribed_topic_regex=req.get("subscribed_topic_regex") if ctx.api_version >= REGEX_SINCE else None,
        server_assignor=req.get("server_assignor"),
        topic_partitions=None if owned is None else [(str(t.topic_id), list(t.partitions)) for t in owned],
        # As Kafka prints an InetAddress: "/127.0.0.1".
        client_id=ctx.client_id or "", client_host="/" + ctx.client_host, version=ctx.api_version))
    return heartbeat_answer(result)


def heartbeat_answer(result) -> dict:
    """A consumer or share group heartbeat's answer: the member's epoch and, when sent, its
    assignment (topic id text -> partitions)."""
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": [{"topic_id": uuid.UUID(t), "partitions": ps}
                                           for t, ps in result.assignment.items()]}
    return {"throttle_time_ms": 0, "error_code": result.error, "error_message": result.message,
            "member_id": result.member_id, "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms, "assignment": assignment}


def _failed(version, body, code):
    return {"error_code": code, "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0,
            "assignment": None}


DESCRIPTOR = ApiDescriptor(
    ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, consumer_group_heartbeat,
    "the consumer group protocol (KIP-848), see docs/consumer-protocol.md; server assignors; static "
    "members; online migration from and to classic groups (group.consumer.migration.policy)",
    version_notes={REGEX_SINCE: "the client makes its member id; SubscribedTopicRegex (RE2 subset)"},
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.DESCRIBE),
    error_response=_failed)
