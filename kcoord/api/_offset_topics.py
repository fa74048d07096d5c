"""How OffsetCommit and OffsetFetch name topics: by name, or by id from v10.

The coordinator keeps offsets by name, so ids are resolved here, and an id no
topic has gets UNKNOWN_TOPIC_ID per partition, as in Kafka.
"""

TOPIC_IDS_SINCE = 10


def topic_name(ctx, t) -> str | None:
    """The topic's name; None for a topic id that names no topic."""
    if ctx.api_version < TOPIC_IDS_SINCE:
        return t.name
    topic = ctx.broker.topics.by_id(t.topic_id)
    return None if topic is None else topic.name


def topic_key(ctx, name: str) -> dict:
    """How a response names a topic at this version."""
    if ctx.api_version < TOPIC_IDS_SINCE:
        return {"name": name}
    topic = ctx.broker.topics.get(name)
    return {"topic_id": topic.topic_id if topic is not None else None}
