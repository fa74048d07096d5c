"""A small blocking Kafka-protocol client over `wire/`, for kcoord's own commands.

`kcoord groups`, `kcoord wait` and `kcoord partition` use it to look at any Kafka-compatible
cluster (kcoord, Apache Kafka, ...): versions are negotiated with ApiVersions, group requests
go to the group's coordinator found with FindCoordinator, ListGroups to every broker Metadata
lists and ListOffsets to each partition's leader.
"""
from __future__ import annotations

import socket
import struct

from kcoord.config import parse_host_port
from wire import codec
from wire.errors import ErrorCode
from wire.framing import encode_frame


class ProtocolError(Exception):
    pass


class Connection:
    def __init__(self, host: str, port: int, timeout: float = 10.0, client_id: str = "kcoord-cli"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self.correlation = 0
        self.versions: dict[int, tuple[int, int]] = {}
        answer = self.call(18, 0, {})
        if answer.error_code:
            raise ProtocolError(f"ApiVersions failed: {ErrorCode(answer.error_code).name}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}

    @classmethod
    def to(cls, address: str, timeout: float = 10.0, client_id: str = "kcoord-cli") -> "Connection":
        """A connection to `address`, or to the first of a bootstrap list (HOST:PORT,...) that
        accepts one, as a client's bootstrap.servers is tried."""
        addresses = [a.strip() for a in address.split(",") if a.strip()]
        for i, each in enumerate(addresses):
            host, port = parse_host_port(each)
            try:
                return cls(host, port, timeout, client_id)
            except OSError:
                if i == len(addresses) - 1:
                    raise
        raise ValueError(f"no address in {address!r}")

    def version(self, api_key: int, highest_known: int, lowest_known: int = 0) -> int:
        """The highest version both this client (up to `highest_known`) and the broker speak."""
        low, high = self.versions.get(api_key, (0, -1))
        chosen = min(high, highest_known)
        if chosen < max(low, lowest_known):
            raise ProtocolError(f"the broker serves api {api_key} versions {low}-{high}, "
                                f"none of {lowest_known}-{highest_known} that this command speaks")
        return chosen

    def call(self, api_key: int, version: int, body: dict):
        """Send one request and return its decoded response body."""
        correlation = self.send(api_key, version, body)
        header, response = self.receive(api_key, version)
        if header["correlation_id"] != correlation:
            raise ProtocolError(f"response correlation id {header['correlation_id']}, expected {correlation}")
        return response

    def send(self, api_key: int, version: int, body: dict) -> int:
        """Send one request without waiting (Produce with acks=0 gets no answer); its correlation id."""
        self.correlation += 1
        header = {"correlation_id": self.correlation, "client_id": self.client_id}
        self.sock.sendall(encode_frame(codec.encode_request(api_key, version, header, body)))
        return self.correlation

    def receive(self, api_key: int, version: int):
        """The next response on the connection, as (header, body)."""
        (size,) = struct.unpack(">i", self._exact(4))
        return codec.decode_response(api_key, version, self._exact(size))

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ProtocolError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Admin:
    """Group, offset and leadership look-ups against a cluster reached through `bootstrap`
    (one HOST:PORT, or several comma-separated: the first that answers is used)."""

    def __init__(self, bootstrap: str, timeout: float = 10.0):
        self.timeout = timeout
        self.bootstrap = Connection.to(bootstrap, timeout)
        peer = self.bootstrap.sock.getpeername()
        self._connections: dict[tuple[str, int], Connection] = {(peer[0], peer[1]): self.bootstrap}
        self._coordinators: dict[str, tuple[int, Connection]] = {}

    def close(self) -> None:
        for conn in {id(c): c for c in self._connections.values()}.values():
            conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def connect(self, host: str, port: int) -> Connection:
        """A connection to the broker at host:port, opened once and kept. An address this machine
        cannot reach on the bootstrap connection's port is taken to be the bootstrap broker's
        advertised one (a broker in a container advertising its own host name)."""
        conn = self._connections.get((host, port))
        if conn is None:
            try:
                conn = Connection(host, port, self.timeout)
            except OSError:
                if port != self.bootstrap.sock.getpeername()[1]:
                    raise
                conn = self.bootstrap
            self._connections[(host, port)] = conn
        return conn

    def metadata(self, topics: list[str] | None = None):
        """Metadata for `topics` (None: every topic, internal ones too), without creating any:
        its `brokers`, `controller_id` and `topics` (each partition's leader, replicas, ISR)."""
        b = self.bootstrap
        v = b.version(3, 12, 1)  # v1+: null asks for every topic
        return b.call(3, v, {"topics": None if topics is None else [{"name": t} for t in topics],
                             "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
                             "include_topic_authorized_operations": False})

    def brokers(self) -> dict[int, tuple[str, int]]:
        """Node id -> (host, port) of every broker Metadata lists."""
        return {n.node_id: (n.host, n.port) for n in self.metadata([]).brokers}

    def coordinator_id(self, group_id: str) -> int:
        """The node id FindCoordinator names for the group."""
        self.coordinator(group_id)
        return self._coordinators[group_id][0]

    def coordinator(self, group_id: str) -> Connection:
        found = self._coordinators.get(group_id)
        if found is not None:
            return found[1]
        b = self.bootstrap
        v = b.version(10, 3)
        answer = b.call(10, v, {"key": group_id, "key_type": 0})
        if answer.error_code:
            raise ProtocolError(f"FindCoordinator for {group_id}: {ErrorCode(answer.error_code).name}")
        conn = self.connect(answer.host, answer.port)
        self._coordinators[group_id] = (answer.node_id, conn)
        return conn

    def groups_by_coordinator(self) -> tuple[list[tuple[str, str, str, int]], list[str]]:
        """(group id, protocol type, state, coordinator's node id) of every group, from ListGroups
        on every broker (each lists the groups it coordinates), and what kept a broker from
        answering (one line each)."""
        groups, problems = [], []
        for node_id, (host, port) in sorted(self.brokers().items()):
            try:
                listed = self._list_groups(self.connect(host, port))
            except (OSError, ProtocolError) as err:
                problems.append(f"broker {node_id} ({host}:{port}): {getattr(err, 'strerror', None) or err}")
                continue
            groups += [(*g, node_id) for g in listed]
        return sorted(groups), problems

    def _list_groups(self, conn: Connection) -> list[tuple[str, str, str]]:
        v = conn.version(16, 4)
        body = {"states_filter": []} if v >= 4 else {}
        answer = conn.call(16, v, body)
        if answer.error_code:
            raise ProtocolError(f"ListGroups: {ErrorCode(answer.error_code).name}")
        return [(g.group_id, g.protocol_type, g.get("group_state", "")) for g in answer.groups]

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every group, from every broker; ProtocolError if a
        broker does not answer."""
        groups, problems = self.groups_by_coordinator()
        if problems:
            raise ProtocolError(f"ListGroups on {problems[0]}")
        return [g[:3] for g in groups]

    def describe_group(self, group_id: str):
        """The group as DescribeGroups describes it; a consumer group (KIP-848), which
        DescribeGroups does not describe, as ConsumerGroupDescribe does, in the same shape
        (`protocol_data`: its assignor; each member's `partitions`: (topic, partition) pairs)."""
        conn = self.coordinator(group_id)
        v = conn.version(15, 5)
        body = {"groups": [group_id], "include_authorized_operations": False}
        group = conn.call(15, v, body).groups[0]
        if (group.error_code == ErrorCode.GROUP_ID_NOT_FOUND or group.group_state == "Dead") \
                and conn.versions.get(69) is not None:
            consumer = self._describe_consumer_group(conn, group_id)
            if consumer is not None:
                return consumer
        if group.error_code:
            raise ProtocolError(f"DescribeGroups {group_id}: {ErrorCode(group.error_code).name}")
        return group

    @staticmethod
    def _describe_consumer_group(conn, group_id: str):
        from types import SimpleNamespace

        d = conn.call(69, conn.version(69, 1), {"group_ids": [group_id],
                                                "include_authorized_operations": False}).groups[0]
        if d.error_code:
            return None
        members = [SimpleNamespace(
            member_id=m.member_id, client_id=m.client_id, client_host=m.client_host, member_assignment=b"",
            partitions=[(t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions],
            get=lambda key, default=None, m=m: m.instance_id if key == "group_instance_id" else default)
            for m in d.members]
        return SimpleNamespace(error_code=0, group_id=group_id, group_state=d.group_state, protocol_type="consumer",
                               protocol_data=d.assignor_name, members=members, group_epoch=d.group_epoch)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        conn = self.coordinator(group_id)
        v = conn.version(9, 7, 1)
        answer = conn.call(9, v, {"group_id": group_id, "topics": None, "require_stable": False})
        if answer.error_code:
            raise ProtocolError(f"OffsetFetch {group_id}: {ErrorCode(answer.error_code).name}")
        return {(t.name, p.partition_index): p.committed_offset
                for t in answer.topics for p in t.partitions if p.committed_offset >= 0}

    def topic_partitions(self, topic: str) -> list[int] | None:
        """The topic's partition indexes, or None if the broker does not know it (never auto-created)."""
        b = self.bootstrap
        v = b.version(3, 9, 4)  # v4+: auto-creation can be declined; up to v9: topics by name alone
        answer = b.call(3, v, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                               "include_cluster_authorized_operations": False,
                               "include_topic_authorized_operations": False})
        (t,) = answer.topics
        if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return None
        if t.error_code:
            raise ProtocolError(f"Metadata for topic {topic}: {ErrorCode(t.error_code).name}")
        return sorted(p.partition_index for p in t.partitions)

    def log_end_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Latest offsets, each asked of the partition's leader (a partition without one, or
        whose leader does not answer, is left out)."""
        if not partitions:
            return {}
        meta = self.metadata(sorted({t for t, _ in partitions}))
        nodes = {n.node_id: (n.host, n.port) for n in meta.brokers}
        leaders = {(t.name, p.partition_index): p.leader_id for t in meta.topics for p in t.partitions}
        by_leader: dict[int, dict[str, list[int]]] = {}
        for topic, partition in partitions:
            leader = leaders.get((topic, partition), -1)
            if leader in nodes:
                by_leader.setdefault(leader, {}).setdefault(topic, []).append(partition)
        ends = {}
        for leader, topics in by_leader.items():
            try:
                conn = self.connect(*nodes[leader])
                v = conn.version(2, 5, 1)
                answer = conn.call(2, v, {"replica_id": -1, "isolation_level": 0, "topics": [
                    {"name": t, "partitions": [{"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                                               for p in ps]} for t, ps in topics.items()]})
            except (OSError, ProtocolError):
                continue
            ends.update({(t.name, p.partition_index): p.offset for t in answer.topics for p in t.partitions
                         if p.error_code == 0})
        return ends

    def elect_leaders(self, partitions: dict[str, list[int]] | None, unclean: bool = False
                      ) -> list[tuple[str, int, int, str | None]]:
        """ElectLeaders (preferred, or `unclean`) for topic -> partitions, or every partition
        (None); (topic, partition, error code, message) per partition the answer names."""
        b = self.bootstrap
        v = b.version(43, 2, 1 if unclean else 0)
        body = {"election_type": 1 if unclean else 0, "timeout_ms": int(self.timeout * 1000),
                "topic_partitions": None if partitions is None else
                [{"topic": t, "partitions": ps} for t, ps in partitions.items()]}
        answer = b.call(43, v, body)
        if answer.get("error_code", 0):
            raise ProtocolError(f"ElectLeaders: {ErrorCode(answer.error_code).name}")
        return [(t.topic, p.partition_id, p.error_code, p.error_message)
                for t in answer.replica_election_results for p in t.partition_result]


def consumer_assignment(assignment: bytes) -> list[tuple[str, int]]:
    """The partitions in a consumer-protocol assignment (empty for other protocols)."""
    if len(assignment) < 2:
        return []
    try:
        version = struct.unpack(">h", assignment[:2])[0]
        layout = codec.compiled_message("ConsumerProtocolAssignment", min(max(version, 0), 3))
        decoded = layout.decode(assignment[2:])
    except Exception:
        return []
    return [(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]
