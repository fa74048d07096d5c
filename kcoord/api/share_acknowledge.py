"""ShareAcknowledge: a share group member's acknowledgements without a fetch (KIP-932), as
Kafka 4.3.1's KafkaApis.handleShareAcknowledgeRequest serves them. It needs the member's share
session (it never opens one: epoch 0 is INVALID_SHARE_SESSION_EPOCH), moves its epoch on, and at
epoch -1 closes it after the acknowledgements, releasing the member's other acquired records.
"""
from __future__ import annotations

from kcoord.api import ApiDescriptor, ApiKey, GroupAcl, GroupOperation, TopicAcl, TopicOperation, named_group
from kcoord.api._leadership import node_endpoints
from kcoord.api._share_requests import acknowledge, by_topic, close_session, failed, name_leader, refusal
from kcoord.share.sessions import FINAL_EPOCH, SessionError
from wire.errors import ErrorCode


async def share_acknowledge(ctx, req):
    version = ctx.api_version
    if (refused := refusal(ctx, req)) is not None:
        return failed(version, req, refused)
    group_id, member_id, epoch = req.group_id, req.member_id, req.share_session_epoch
    try:
        ctx.broker.share_sessions.acknowledge_update(group_id, member_id, epoch)
    except SessionError as err:
        return failed(version, req, err.code)
    acks = await acknowledge(ctx, group_id, member_id, req.topics, version >= 2 and req.is_renew_ack)
    if epoch == FINAL_EPOCH:
        close_session(ctx, group_id, member_id)
    leaders: list[int] = []
    answered = {}
    for pid, (code, message) in acks.items():
        data = answered[pid] = {"error_code": int(code), "error_message": message}
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            name_leader(ctx, pid, data, leaders)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "acquisition_lock_timeout_ms": ctx.broker.shares.lock_duration_ms(group_id),
            "responses": by_topic(answered), "node_endpoints": node_endpoints(ctx.broker, leaders)}


DESCRIPTOR = ApiDescriptor(
    ApiKey.SHARE_ACKNOWLEDGE, 1, 2, share_acknowledge,
    "share groups (KIP-932): acknowledgements in the member's share session; epoch -1 closes it",
    groups=named_group, group_acl=GroupAcl(GroupOperation.READ), topic_acl=TopicAcl(TopicOperation.READ),
    error_response=failed,
    version_notes={2: "renew acknowledgements (KIP-1222); the acquisition lock timeout in the answer"})
