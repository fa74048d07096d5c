"""Read a group's state from outside, over the Kafka protocol (kcoord.protocol_client).

DescribeGroups gives state and members; it carries no generation, so `generation()`
asks the coordinator with Heartbeats on behalf of an existing static member: only
the current generation is answered with NONE (others: ILLEGAL_GENERATION), exactly
as Kafka's coordinator validates a heartbeat. A heartbeat only refreshes that
member's session, so probing does not disturb the group.
"""
from __future__ import annotations

from kcoord.protocol_client import Connection
from wire.errors import ErrorCode

DESCRIBE_GROUPS, HEARTBEAT = 15, 12


def _call(address: tuple[str, int], api_key: int, version: int, body: dict) -> dict:
    with Connection(*address, client_id="kcoord-compose-test") as conn:
        return conn.call(api_key, version, body)


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
