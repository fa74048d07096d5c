"""Broker-neutral helpers for the consumer group protocol (KIP-848), over the wire only, so a
test that uses them runs unchanged against kcoord and against the reference Apache Kafka.

    with Connection.to(bootstrap) as conn:
        answer = heartbeat(conn, "g", member_id=str(uuid.uuid4()), member_epoch=0, topics=["t"])
    view = describe(bootstrap, "g")            # ConsumerGroupDescribe: a ConsumerGroupView
    wait_consumer_group(bootstrap, "g", state="Stable", members=4, settled=True)
    list_groups(bootstrap, types=["consumer"]) # ListGroups v5 with a TypesFilter

Kafka config names that give a broker short consumer-protocol timeouts, for both brokers (a
ReferenceKafka's config, kcoord's start_server(kafka_config=...)): CONSUMER_PROTOCOL_CONFIG.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE, LIST_GROUPS, DESCRIBE_GROUPS = 68, 69, 16, 15

# What a broker under the consumer-protocol scenarios runs with (Kafka's names). Kafka's
# defaults are 45 s sessions (and a 45 s minimum) and 5 s heartbeats: a killed member's
# partitions would move only after 45 s. The regex refresh interval (default 10 min) bounds
# how soon a new topic matching a subscribed regex is picked up (Kafka refuses below 10 s).
CONSUMER_PROTOCOL_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",  # the classic member of the mixed-group scenario
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.regex.refresh.interval.ms": "10000",  # Kafka's minimum
}


def heartbeat(conn, group_id: str, *, member_id: str = "", member_epoch: int = 0, instance_id: str | None = None,
              rack_id: str | None = None, rebalance_timeout_ms: int = -1, topics: list[str] | None = None,
              regex: str | None = None, server_assignor: str | None = None,
              owned: list | None | str = "default", version: int | None = None):
    """One ConsumerGroupHeartbeat on `conn` (a kcoord.protocol_client.Connection to the group's
    coordinator), at the highest version both speak unless `version`; the decoded answer.
    `owned`: the TopicPartitions field, [{"topic_id": UUID, "partitions": [...]}] or None; by
    default [] with epoch 0 (Kafka refuses a null one there: "TopicPartitions must be empty
    when (re-)joining.") and None (unchanged) otherwise."""
    if owned == "default":
        owned = [] if member_epoch == 0 else None
    v = conn.version(CONSUMER_GROUP_HEARTBEAT, 1) if version is None else version
    body = {"group_id": group_id, "member_id": member_id, "member_epoch": member_epoch, "instance_id": instance_id,
            "rack_id": rack_id, "rebalance_timeout_ms": rebalance_timeout_ms, "subscribed_topic_names": topics,
            "server_assignor": server_assignor, "topic_partitions": owned}
    if v >= 1:
        body["subscribed_topic_regex"] = regex
    elif regex is not None:
        raise ValueError("SubscribedTopicRegex needs ConsumerGroupHeartbeat v1+")
    return conn.call(CONSUMER_GROUP_HEARTBEAT, v, body)


def new_member_id() -> str:
    """A member id as the Java 4.x client makes one (Uuid.randomUuid().toString(): base64url, 22 chars)."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def owned_partitions(assignment) -> list:
    """A heartbeat answer's Assignment as the TopicPartitions a member sends back (acknowledging it)."""
    if assignment is None:
        return []
    return [{"topic_id": tp.topic_id, "partitions": list(tp.partitions)} for tp in assignment.topic_partitions]


@dataclass
class ConsumerGroupView:
    """A group as ConsumerGroupDescribe shows it."""
    group_id: str
    error_code: int
    error_message: str | None = None
    state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor: str = ""
    members: list[dict] = field(default_factory=list)  # member_id, instance_id, member_epoch, topics, regex,
                                                        # assignment [(topic, p)], target [(topic, p)], type

    @property
    def size(self) -> int:
        return len(self.members)

    def assignments(self) -> dict[str, list[tuple[str, int]]]:
        return {m["member_id"]: m["assignment"] for m in self.members}

    def settled(self) -> bool:
        """Stable, every member at the group's epoch and holding its whole target assignment."""
        return (self.state == "Stable" and self.assignment_epoch == self.group_epoch
                and all(m["member_epoch"] == self.group_epoch and m["assignment"] == m["target"]
                        for m in self.members))


def _pairs(assignment) -> list[tuple[str, int]]:
    return sorted((tp.topic_name, p) for tp in (assignment.topic_partitions if assignment else []) for p in tp.partitions)


def describe(bootstrap: str, group: str, timeout: float = 10.0) -> ConsumerGroupView:
    """ConsumerGroupDescribe of one group (an error is in the view's error_code/error_message)."""
    from kcoord.protocol_client import Admin

    with Admin(bootstrap, timeout) as admin:
        conn = admin.coordinator(group)
        v = conn.version(CONSUMER_GROUP_DESCRIBE, 1)
        [g] = conn.call(CONSUMER_GROUP_DESCRIBE, v, {"group_ids": [group], "include_authorized_operations": False}).groups
    members = [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                "topics": sorted(m.subscribed_topic_names or []), "regex": m.subscribed_topic_regex,
                "assignment": _pairs(m.assignment), "target": _pairs(m.target_assignment),
                "type": m.get("member_type", None)} for m in g.members]
    return ConsumerGroupView(g.group_id, g.error_code, g.error_message, g.group_state, g.group_epoch,
                             g.assignment_epoch, g.assignor_name, members)


def wait_consumer_group(bootstrap: str, group: str, timeout: float = 60.0, state: str | None = None,
                        members: int | None = None, settled: bool = False, predicate=None) -> ConsumerGroupView:
    """Poll ConsumerGroupDescribe until the group matches; TimeoutError says what it looked like."""
    from kcoord.protocol_client import ProtocolError

    deadline = time.monotonic() + timeout
    seen = "nothing yet"
    while True:
        try:
            view = describe(bootstrap, group)
            if (view.error_code == 0 and (state is None or view.state == state)
                    and (members is None or view.size == members) and (not settled or view.settled())
                    and (predicate is None or predicate(view))):
                return view
            seen = (f"error {view.error_code} {view.error_message!r}" if view.error_code else
                    f"{view.state}, epoch {view.group_epoch}/{view.assignment_epoch}, {view.size} members "
                    f"{[(m['member_epoch'], m['assignment'], m['target']) for m in view.members]}")
        except (OSError, ProtocolError) as err:
            seen = f"{type(err).__name__}: {err}"
        if time.monotonic() >= deadline:
            raise TimeoutError(f"consumer group {group} did not reach state={state} members={members} "
                               f"settled={settled} within {timeout:g}s (it is {seen})")
        time.sleep(0.1)


def list_groups(bootstrap: str, types: list[str] | None = None, states: list[str] | None = None,
                timeout: float = 10.0) -> dict[str, dict]:
    """ListGroups (v5: TypesFilter, Kafka's names "classic"/"consumer"/...): group id ->
    {"protocol_type", "state", "type"}."""
    from kcoord.protocol_client import Connection, ProtocolError
    from wire.errors import ErrorCode

    with Connection.to(bootstrap, timeout) as conn:
        v = conn.version(LIST_GROUPS, 5)
        body = {}
        if v >= 4:
            body["states_filter"] = states or []
        if v >= 5:
            body["types_filter"] = types or []
        elif types:
            raise ProtocolError(f"ListGroups v{v}: no TypesFilter before v5")
        answer = conn.call(LIST_GROUPS, v, body)
    if answer.error_code:
        raise ProtocolError(f"ListGroups: {ErrorCode(answer.error_code).name}")
    return {g.group_id: {"protocol_type": g.protocol_type, "state": g.get("group_state", None),
                         "type": g.get("group_type", None)} for g in answer.groups}


def describe_groups(bootstrap: str, group: str, timeout: float = 10.0):
    """DescribeGroups (the classic API) of one group, raw: error code and message included."""
    from kcoord.protocol_client import Admin

    with Admin(bootstrap, timeout) as admin:
        conn = admin.coordinator(group)
        v = conn.version(DESCRIBE_GROUPS, 6)
        return conn.call(DESCRIBE_GROUPS, v, {"groups": [group], "include_authorized_operations": False}).groups[0]


def create_topic(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 30.0) -> None:
    """kcoord.testing.brokers.create_topic, then until the group coordinator assigns the topic.

    Kafka answers CreateTopics, and Metadata lists the leaders, before its group coordinator's
    metadata image has the topic: a member joining then gets nothing at its first epoch, and the
    group epoch moves again once the image catches up, which tests of epochs must not see. A
    scratch member (group "kcoord-topic-ready-<topic>") joins until it is given every partition,
    then leaves."""
    from kcoord.protocol_client import Admin
    from kcoord.testing import brokers

    brokers.create_topic(bootstrap, topic, partitions, timeout)
    group = f"kcoord-topic-ready-{topic}"
    deadline = time.monotonic() + timeout
    with Admin(bootstrap, timeout) as admin:
        conn = admin.coordinator(group)
        while True:
            member = new_member_id()
            answer = heartbeat(conn, group, member_id=member, member_epoch=0, rebalance_timeout_ms=1000, topics=[topic])
            got = sum(len(tp.partitions) for tp in answer.assignment.topic_partitions) if answer.assignment else 0
            if answer.error_code == 0:
                heartbeat(conn, group, member_id=member, member_epoch=-1)
            if got == partitions:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic}: the group coordinator assigns {got} of {partitions} partitions "
                                   f"after {timeout:g}s")
            time.sleep(0.05)
