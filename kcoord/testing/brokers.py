"""Broker-neutral test helpers: they speak only the Kafka protocol, so a test that uses
them runs unchanged against kcoord and against the reference Apache Kafka.

    wait_group(bootstrap, "g", state="Stable", members=2)   # polls DescribeGroups
    create_topic(bootstrap, "t", 12)                        # CreateTopics
    committed(bootstrap, "g") / end_offsets(bootstrap, "t") # OffsetFetch / ListOffsets
    produce_batch(bootstrap, "t", 0, batch)                 # Produce: the base offset
    read_partition(bootstrap, "t", 0)                       # Fetch: every record, in offset order
    read_batches(bootstrap, "t", 0)                         # Fetch: every batch (control ones too)
    wait_subscription(bootstrap, "sub", {"interval.ms": "1000"})  # DescribeConfigs of a client-metrics one

`KafkaHandle` gives a Kafka (reference or external) the surface of the kcoord_server
fixture's handle that does not need kcoord's insides: `bootstrap`, `wait_for`, `committed`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

DEAD = "Dead"
GROUP_ID_NOT_FOUND = 69
TOPIC_ALREADY_EXISTS = 36


@dataclass
class GroupView:
    """A group as DescribeGroups shows it (what kcoord's GroupDescription holds, from the wire)."""
    group_id: str
    state: str
    protocol_type: str = ""
    protocol: str = ""
    members: list[dict] = field(default_factory=list)  # member_id, group_instance_id, client_id, assignment

    @property
    def size(self) -> int:
        return len(self.members)

    def assignments(self) -> dict[str, list[int]]:
        """Member id -> partitions assigned (empty unless the group is Stable)."""
        return {m["member_id"]: sorted(p for _, p in m["assignment"]) for m in self.members}


def describe(bootstrap: str, group: str, timeout: float = 10.0) -> GroupView:
    from kcoord.protocol_client import Admin, ProtocolError, consumer_assignment

    with Admin(bootstrap, timeout) as admin:
        try:
            g = admin.describe_group(group)
        except ProtocolError as err:
            if "GROUP_ID_NOT_FOUND" in str(err):
                return GroupView(group, DEAD)
            raise
        members = [{"member_id": m.member_id, "group_instance_id": m.get("group_instance_id"),
                    "client_id": m.client_id, "client_host": m.client_host,
                    "assignment": consumer_assignment(m.member_assignment or b"")} for m in g.members]
        return GroupView(group, g.group_state, g.protocol_type, g.protocol_data, members)


def wait_group(bootstrap: str, group: str, timeout: float = 30.0, state: str | None = None,
               members: int | None = None) -> GroupView:
    """Poll DescribeGroups until the group is in `state` with `members` members; TimeoutError
    says what it looked like instead."""
    from kcoord.protocol_client import ProtocolError

    deadline = time.monotonic() + timeout
    seen = "nothing yet"
    while True:
        try:
            view = describe(bootstrap, group)
            if (state is None or view.state == state) and (members is None or view.size == members):
                return view
            seen = f"{view.state}, {view.size} members"
        except (OSError, ProtocolError) as err:  # COORDINATOR_LOAD_IN_PROGRESS and the like pass
            seen = f"{type(err).__name__}: {err}"
        if time.monotonic() >= deadline:
            raise TimeoutError(f"group {group} did not reach state={state} members={members} "
                               f"within {timeout:g}s (it is {seen})")
        time.sleep(0.1)


def create_topic(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 30.0, *,
                 replication_factor: int = 1, wait: bool = True, assignment: list[list[int]] | None = None) -> None:
    """CreateTopics (replication factor 1 unless given; `assignment`: each partition's replicas,
    instead of `partitions` and the factor); an existing topic is an error. With `wait`, until
    `bootstrap` leads every partition, as a single broker does (a cluster's partitions are led by
    several: ReferenceKafkaCluster.create_topic waits on each leader)."""
    from kcoord.protocol_client import Connection, ProtocolError
    from wire.errors import ErrorCode

    with Connection.to(bootstrap, timeout) as conn:
        v = conn.version(19, 5, 2)
        assignments = [{"partition_index": i, "broker_ids": rs} for i, rs in enumerate(assignment or ())]
        answer = conn.call(19, v, {"topics": [{"name": topic, "num_partitions": -1 if assignment else partitions,
                                               "replication_factor": -1 if assignment else replication_factor,
                                               "assignments": assignments, "configs": []}],
                                   "timeout_ms": int(timeout * 1000), "validate_only": False})
        [result] = answer.topics
        if result.error_code:
            raise ProtocolError(f"CreateTopics {topic}: {ErrorCode(result.error_code).name}")
    if wait:
        _wait_leaders(bootstrap, topic, partitions, timeout)


def partitions(bootstrap: str, topic: str, timeout: float = 10.0) -> list[int]:
    """The topic's partitions that have a leader, from Metadata (no auto-creation)."""
    from kcoord.protocol_client import Connection

    with Connection.to(bootstrap, timeout) as conn:
        v = conn.version(3, 4, 1)
        answer = conn.call(3, v, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
        return sorted(p.partition_index for t in answer.topics if t.name == topic and t.error_code == 0
                      for p in t.partitions if p.error_code == 0 and p.leader_id >= 0)


def _wait_leaders(bootstrap: str, topic: str, count: int, timeout: float) -> None:
    # Kafka answers CreateTopics before every partition's leader is known to Metadata, and
    # Metadata lists a leader a moment before that broker leads the partition: a Produce then
    # gets NOT_LEADER_OR_FOLLOWER (2 of 60 new topics on 4.3.1). ListOffsets asks the partition
    # itself (an error until it leads, and until the topic exists), and appends nothing.
    deadline = time.monotonic() + timeout
    while unled_partitions(bootstrap, topic, count):
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic}: {count} partitions without leaders after {timeout:g}s")
        time.sleep(0.05)


def unled_partitions(bootstrap: str, topic: str, count: int) -> list[int]:
    """The partitions of `topic`'s first `count` whose ListOffsets (latest) at `bootstrap` answers an error."""
    from kcoord.protocol_client import Connection

    with Connection.to(bootstrap, 10.0) as conn:
        answer = conn.call(2, conn.version(2, 7, 1), {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in range(count)]}]})
    return [p.partition_index for t in answer.topics for p in t.partitions if p.error_code]


def produce_batch(bootstrap: str, topic: str, partition: int, batch: bytes, timeout: float = 30.0) -> int:
    """Produce one record batch (acks=-1) and return its base offset; an error raises."""
    from kcoord.protocol_client import Connection, ProtocolError
    from wire.errors import ErrorCode

    with Connection.to(bootstrap, timeout) as conn:
        answer = conn.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": int(timeout * 1000),
                                  "topic_data": [{"name": topic, "partition_data": [
                                      {"index": partition, "records": batch}]}]})
    p = answer.responses[0].partition_responses[0]
    if p.error_code:
        raise ProtocolError(f"Produce {topic}-{partition}: {ErrorCode(p.error_code).name}")
    return p.base_offset


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> log end offset (high watermark)."""
    from kcoord.protocol_client import Admin

    with Admin(bootstrap) as admin:
        ends = admin.log_end_offsets([(topic, p) for p in partitions(bootstrap, topic)])
    return {p: off for (_, p), off in ends.items()}


def read_partition(bootstrap: str, topic: str, partition: int = 0, timeout: float = 10.0) -> list:
    """Every record of the partition up to its high watermark, in offset order, from Fetch
    (wire.records.Record: offset, key, value, ...)."""
    return [r for batch in read_batches(bootstrap, topic, partition, timeout) for r in batch.records()]


def read_batches(bootstrap: str, topic: str, partition: int = 0, timeout: float = 10.0) -> list:
    """Every record batch of the partition up to its high watermark, in offset order, from Fetch
    (wire.records.RecordBatch: a reader that must tell control batches apart needs these)."""
    from kcoord.protocol_client import Connection, ProtocolError
    from wire import records as R
    from wire.errors import ErrorCode

    got: list = []
    offset = 0
    with Connection.to(bootstrap, timeout) as conn:
        while True:
            answer = conn.call(1, 11, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 22,
                                       "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                           {"topic": topic, "partitions": [{
                                               "partition": partition, "fetch_offset": offset, "log_start_offset": -1,
                                               "partition_max_bytes": 1 << 22, "current_leader_epoch": -1}]}],
                                       "forgotten_topics_data": [], "rack_id": ""})
            part = answer.responses[0].partitions[0]
            if part.error_code:
                raise ProtocolError(f"Fetch {topic}-{partition} at {offset}: {ErrorCode(part.error_code).name}")
            # A fetch may start inside a batch the previous one ended with: keep each batch once.
            got += [b for b in R.iter_batches(part.records or b"") if b.last_offset >= offset]
            if got:
                offset = got[-1].last_offset + 1
            if offset >= part.high_watermark:
                return got
            if not part.records:
                raise ProtocolError(f"Fetch {topic}-{partition} at {offset}: no records below the high "
                                    f"watermark {part.high_watermark}")


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset, from OffsetFetch."""
    from kcoord.protocol_client import Admin

    with Admin(bootstrap) as admin:
        return admin.committed_offsets(group)


def alter_resource_configs(bootstrap: str, resource_type: int, name: str, ops,
                           validate_only: bool = False) -> tuple[str, str | None]:
    """IncrementalAlterConfigs v1 of one config resource, `ops` as (name, operation, value): the
    answer's error name and message."""
    from kcoord.protocol_client import Connection
    from wire.errors import ErrorCode

    with Connection.to(bootstrap) as conn:
        answer = conn.call(44, 1, {"validate_only": validate_only, "resources": [
            {"resource_type": resource_type, "resource_name": name,
             "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}]})
    [r] = answer.responses
    return ErrorCode(r.error_code).name, r.error_message


def replace_resource_configs(bootstrap: str, resource_type: int, name: str, pairs) -> tuple[str, str | None]:
    """AlterConfigs v2 (the whole set replaced) of one config resource, `pairs` as (name, value):
    the answer's error name and message."""
    from kcoord.protocol_client import Connection
    from wire.errors import ErrorCode

    with Connection.to(bootstrap) as conn:
        answer = conn.call(33, 2, {"validate_only": False, "resources": [
            {"resource_type": resource_type, "resource_name": name,
             "configs": [{"name": k, "value": v} for k, v in pairs]}]})
    [r] = answer.responses
    return ErrorCode(r.error_code).name, r.error_message


def describe_resource(bootstrap: str, resource_type: int, name: str, keys=None, documentation: bool = False) -> list:
    """DescribeConfigs v4 of one config resource, with synonyms: [error name, message, entries], each
    entry (name, value, read_only, source, sensitive, type, [documentation,] [(synonym name, value,
    source)...])."""
    from kcoord.protocol_client import Connection
    from wire.errors import ErrorCode

    with Connection.to(bootstrap) as conn:
        answer = conn.call(32, 4, {"resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
            "include_synonyms": True, "include_documentation": documentation})
    [r] = answer.results
    return [ErrorCode(r.error_code).name, r.error_message, [
        (c.name, c.value, c.read_only, c.config_source, c.is_sensitive, c.config_type,
         *((c.documentation,) if documentation else ()), [(s.name, s.value, s.source) for s in c.synonyms])
        for c in r.configs]]


def own_configs(bootstrap: str, resource_type: int, name: str, timeout: float = 10.0) -> dict[str, str]:
    """A config resource's own configs, from DescribeConfigs: those whose source is the resource
    itself (a client-metrics subscription's CLIENT_METRICS_CONFIG, a group's GROUP_CONFIG); {}
    when it has none."""
    from kcoord.protocol_client import Connection

    with Connection.to(bootstrap, timeout) as conn:
        answer = conn.call(32, 4, {"resources": [{"resource_type": resource_type, "resource_name": name,
                                                  "configuration_keys": None}],
                                   "include_synonyms": False, "include_documentation": False})
    [result] = answer.results
    own_source = _OWN_SOURCE[resource_type]
    return {c.name: c.value for c in result.configs if c.config_source == own_source}


_OWN_SOURCE = {16: 7, 32: 8}   # CLIENT_METRICS -> CLIENT_METRICS_CONFIG, GROUP -> GROUP_CONFIG


def wait_own_configs(bootstrap: str, resource_type: int, name: str, configs: dict[str, str],
                     timeout: float = 10.0) -> None:
    """Until the resource's own configs are `configs`. Kafka's controller answers a change once
    it is committed, and its broker applies it a moment later."""
    deadline = time.monotonic() + timeout
    while (seen := own_configs(bootstrap, resource_type, name)) != configs:
        if time.monotonic() > deadline:
            raise AssertionError(f"config resource {resource_type}/{name!r} on {bootstrap}: {seen}, not {configs}")
        time.sleep(0.05)


def subscription(bootstrap: str, name: str, timeout: float = 10.0) -> dict[str, str]:
    """A client-metrics subscription's own configs (KIP-714): {} when it does not exist."""
    return own_configs(bootstrap, 16, name, timeout)


def wait_subscription(bootstrap: str, name: str, configs: dict[str, str], timeout: float = 10.0) -> None:
    wait_own_configs(bootstrap, 16, name, configs, timeout)


class KafkaHandle:
    """A Kafka broker under test, seen only over the protocol."""

    kind = "kafka"

    def __init__(self, kafka):
        self.kafka = kafka  # a ReferenceKafka, or an ExternalKafka the user runs

    @property
    def bootstrap(self) -> str:
        return self.kafka.bootstrap

    def wait_for(self, group: str, timeout: float = 30.0, **conditions) -> GroupView:
        """Like KcoordHandle.wait_for (state=..., members=...), by polling DescribeGroups."""
        unknown = set(conditions) - {"state", "members"}
        if unknown:
            raise TypeError(f"a Kafka broker can only be waited on for state= and members=, not {sorted(unknown)}")
        return wait_group(self.bootstrap, group, timeout, **conditions)

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        return committed(self.bootstrap, group)

    def __repr__(self) -> str:
        return f"KafkaHandle({self.bootstrap})"


class ExternalKafka:
    """A Kafka the user already runs (--kafka-bootstrap): started and stopped elsewhere."""

    def __init__(self, bootstrap: str):
        from kcoord.config import parse_host_port

        self.host, self.port = parse_host_port(bootstrap)
        self.config: dict[str, str] = {}
        self.log_path = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self) -> None:
        pass
