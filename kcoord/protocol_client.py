"""A small blocking Kafka-protocol client over `wire/`, for kcoord's own commands.

`kcoord groups` and `kcoord wait` use it to look at any Kafka-compatible broker
(kcoord, Apache Kafka, ...): versions are negotiated with ApiVersions, and
group requests go to the group's coordinator found with FindCoordinator.
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
    """Group and offset look-ups against a cluster reached through `bootstrap`."""

    def __init__(self, bootstrap: str, timeout: float = 10.0):
        self.timeout = timeout
        self.bootstrap = Connection.to(bootstrap, timeout)
        self._coordinators: dict[str, Connection] = {}

    def close(self) -> None:
        for conn in {id(c): c for c in self._coordinators.values()}.values():
            if conn is not self.bootstrap:
                conn.close()
        self.bootstrap.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def coordinator(self, group_id: str) -> Connection:
        conn = self._coordinators.get(group_id)
        if conn is not None:
            return conn
        b = self.bootstrap
        v = b.version(10, 3)
        answer = b.call(10, v, {"key": group_id, "key_type": 0})
        if answer.error_code:
            raise ProtocolError(f"FindCoordinator for {group_id}: {ErrorCode(answer.error_code).name}")
        peer = b.sock.getpeername()
        same = (answer.host, answer.port) == (peer[0], peer[1]) or answer.port == peer[1]
        conn = b if same else Connection(answer.host, answer.port, self.timeout)
        self._coordinators[group_id] = conn
        return conn

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every group."""
        b = self.bootstrap
        v = b.version(16, 4)
        body = {"states_filter": []} if v >= 4 else {}
        answer = b.call(16, v, body)
        if answer.error_code:
            raise ProtocolError(f"ListGroups: {ErrorCode(answer.error_code).name}")
        return sorted((g.group_id, g.protocol_type, g.get("group_state", "")) for g in answer.groups)

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
        """Latest offsets, asked of the bootstrap broker (kcoord leads every partition)."""
        if not partitions:
            return {}
        b = self.bootstrap
        v = b.version(2, 5, 1)
        topics: dict[str, list[int]] = {}
        for topic, partition in partitions:
            topics.setdefault(topic, []).append(partition)
        answer = b.call(2, v, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": t, "partitions": [{"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                                       for p in ps]} for t, ps in topics.items()]})
        return {(t.name, p.partition_index): p.offset for t in answer.topics for p in t.partitions
                if p.error_code == 0}


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
