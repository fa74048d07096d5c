"""ShareGroupHeartbeat (KIP-932): join, stay in and leave a share group, and learn one's partitions.

Translation only: every rule lives in kcoord.coordinator.share.protocol. What KafkaApis does
around the coordinator is here: the share.version gate, the member id's check, and DESCRIBE on
every subscribed topic.
"""
from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.api.consumer_group_heartbeat import heartbeat_answer
from kcoord.coordinator.share.protocol import ShareHeartbeatRequest
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

# KafkaApis.isMemberIdValid: the client makes its id (a UUID's 22 or 36 characters).
MAX_MEMBER_ID_LENGTH = 36


async def share_group_heartbeat(ctx, req):
    if not ctx.broker.features.share_enabled():
        return _failed(ctx.api_version, req, ErrorCode.UNSUPPORTED_VERSION)
    if not req.member_id or len(req.member_id) > MAX_MEMBER_ID_LENGTH:
        # Kafka's answer carries no message here (ShareGroupHeartbeatRequest.getErrorResponse drops it).
        return _failed(ctx.api_version, req, ErrorCode.INVALID_REQUEST)
    names = req.get("subscribed_topic_names")
    if names:
        # As Kafka: a member may not subscribe to a topic it may not Describe.
        may_describe = topic_gate(ctx)
        if not all(may_describe(name) for name in set(names)):
            return _failed(ctx.api_version, req, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    result = ctx.broker.coordinator.for_group(req.group_id).share_group_heartbeat(ShareHeartbeatRequest(
        req.group_id, req.member_id, req.member_epoch, rack_id=req.get("rack_id"),
        subscribed_topic_names=None if names is None else list(names),
        # As Kafka prints an InetAddress: "/127.0.0.1".
        client_id=ctx.client_id or "", client_host="/" + ctx.client_host))
    return heartbeat_answer(result)


def _failed(version, body, code, message=None):
    # As Kafka's getErrorResponse: the error, its message, nothing of the member's.
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


DESCRIPTOR = ApiDescriptor(
    ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, share_group_heartbeat,
    "share groups (KIP-932): membership and the simple assignor; partitions become assignable on the "
    "heartbeat after the one that subscribed to them, as on Kafka",
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.DESCRIBE),
    error_response=_failed)
