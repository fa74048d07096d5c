"""DeleteTopics: drop topics and their records."""
from kcoord.api import ApiDescriptor, ApiKey, TopicAcl, TopicOperation
from kcoord.security.acls import topic_gate
from wire.errors import ErrorCode

TOPIC_IDS_SINCE = 6


async def delete_topics(ctx, req):
    store = ctx.broker.topics
    wanted = ([(t.name, t.topic_id) for t in req.topics] if ctx.api_version >= TOPIC_IDS_SINCE
              else [(name, None) for name in req.topic_names])
    responses = []
    may_delete = topic_gate(ctx)
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            topic = store.by_id(topic_id)
            name = topic.name if topic else None
        r = {"name": name, "topic_id": topic_id, "error_code": ErrorCode.NONE, "error_message": None}
        if name is not None and not may_delete(name):
            # Decided before the topic is looked up: a denied name is not told whether it exists.
            r["error_code"], r["error_message"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
        elif name is None or name not in store.topics:
            r["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            r["topic_id"] = store.delete(name).topic_id
        responses.append(r)
    return {"throttle_time_ms": 0, "responses": responses}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DELETE_TOPICS, 1, 6, delete_topics,
    "an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION",
    topic_acl=TopicAcl(TopicOperation.DELETE),
    version_notes={TOPIC_IDS_SINCE: "topics by name or id"})
