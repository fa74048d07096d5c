"""Read a group's state from outside, over the Kafka protocol (raw frames via wire.codec).

DescribeGroups gives state and members; it carries no generation, so `generation()`
asks the coordinator with Heartbeats on behalf of an existing static member: only
the current generation is answered with NONE (others: ILLEGAL_GENERATION), exactly
as Kafka's coordinator validates a heartbeat. A heartbeat only refreshes that
member's session, so probing does not disturb the group.
"""
from __future__ import annotations

import itertools
import socket
import struct

from wire import codec
from wire.errors import ErrorCode

DESCRIBE_GROUPS, HEARTBEAT = 15, 12
_correlation = itertools.count(1)


def _call(address: tuple[str, int], api_key: int, version: int, body: dict) -> dict:
    cid = next(_correlation)
    request = codec.encode_request(api_key, version, {"correlation_id": cid, "client_id": "kcoord-compose-test"}, body)
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _recv(sock, 4))[0]
        header, response = codec.decode_response(api_key, version, _recv(sock, size))
    assert header["correlation_id"] == cid
    return response


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed mid-response")
        buf += chunk
    return buf


def describe(address, group: str) -> dict:
    """{"state": ..., "members": {instance_id: member_id}, "error_code": ...}"""
    resp = _call(address, DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
    g = resp["groups"][0]
    return {"error_code": g["error_code"], "state": g["group_state"],
            "members": {m["group_instance_id"]: m["member_id"] for m in g["members"]}}


def generation(address, group: str, instance_id: str, member_id: str, highest: int = 100) -> int | None:
    """The group's current generation, or None while it rebalances / the member is unknown."""
    for gen in range(1, highest + 1):
        resp = _call(address, HEARTBEAT, 4, {"group_id": group, "generation_id": gen, "member_id": member_id,
                                             "group_instance_id": instance_id})
        if resp["error_code"] == ErrorCode.NONE:
            return gen
        if resp["error_code"] != ErrorCode.ILLEGAL_GENERATION:
            return None
    return None
