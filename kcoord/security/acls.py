"""Simple group ACLs: which principals may use which group ids.

Off unless `--group-acls FILE` is given; then anything not allowed is denied (Kafka's
`allow.everyone.if.no.acl.found=false`). A file holds one rule per line:

    # principal      operation   group id (exact, a prefix ending in *, or * for all)
    User:alice       Read        orders
    User:alice       Read        reports-*
    User:*           Describe    *

Principals are Kafka's: `User:<SASL name>`, or `User:ANONYMOUS` on a listener without
SASL; `User:*` matches every principal. Operations and the APIs that need them, as
Kafka's authorizer checks the GROUP resource:

    Read      JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch
    Describe  FindCoordinator (group keys), DescribeGroups, ListGroups (filters the list)
    Delete    DeleteGroups, OffsetDelete
    All       every operation

Read and Delete imply Describe, as in Kafka. A denied request gets
GROUP_AUTHORIZATION_FAILED (30) for that group: batched requests answer each group on
its own. Topic ACLs are not modelled.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

from wire.errors import ErrorCode
from wire.types import Message

log = logging.getLogger("kcoord.security")

READ, DESCRIBE, DELETE, ALL = "Read", "Describe", "Delete", "All"
OPERATIONS = (READ, DESCRIBE, DELETE, ALL)
# What a granted operation also allows (Kafka: READ, WRITE, DELETE and ALTER imply DESCRIBE).
_IMPLIES = {READ: {READ, DESCRIBE}, DESCRIBE: {DESCRIBE}, DELETE: {DELETE, DESCRIBE}, ALL: set(OPERATIONS)}
DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
ANONYMOUS = "User:ANONYMOUS"

# api key -> operation, for requests about one group (`group_id`).
_ONE_GROUP = {11: READ, 14: READ, 12: READ, 13: READ, 8: READ, 47: DELETE}


class AclFileError(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    principal: str
    operation: str
    group: str

    def matches(self, principal: str, operation: str, group: str) -> bool:
        if self.principal not in ("User:*", principal) or operation not in _IMPLIES[self.operation]:
            return False
        if self.group.endswith("*"):
            return group.startswith(self.group[:-1])
        return group == self.group


def principal_of(connection) -> str:
    name = getattr(connection, "principal", None)
    return f"User:{name}" if name else ANONYMOUS


class GroupAcls:
    def __init__(self, rules: list[Rule]):
        self.rules = rules
        self._logged: set[tuple[str, str, str]] = set()

    @classmethod
    def load(cls, path: str | Path) -> "GroupAcls":
        rules = []
        for number, line in enumerate(Path(path).read_text().splitlines(), 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            fields = text.split()
            if len(fields) != 3:
                raise AclFileError(f"{path}:{number}: expected 'principal operation group', got {line!r}")
            principal, operation, group = fields
            if not principal.startswith("User:") or principal == "User:":
                raise AclFileError(f"{path}:{number}: a principal is User:<name> or User:*, not {principal!r}")
            canonical = {o.lower(): o for o in OPERATIONS}.get(operation.lower())
            if canonical is None:
                raise AclFileError(f"{path}:{number}: operation {operation!r} is not one of {', '.join(OPERATIONS)}")
            rules.append(Rule(principal, canonical, group))
        return cls(rules)

    def allowed(self, principal: str, operation: str, group: str) -> bool:
        if any(r.matches(principal, operation, group) for r in self.rules):
            return True
        if (principal, operation, group) not in self._logged and len(self._logged) < 10000:
            self._logged.add((principal, operation, group))  # once per offender, not per heartbeat
            log.warning("denied %s %s on group %r: no ACL allows it", principal, operation, group)
        return False

    async def authorize(self, connection, api_key: int, api_version: int, body,
                        handle: Callable[[Message], Awaitable[dict | None]]) -> dict | None:
        """The response to `body`: from `handle` for what the principal may do, with
        GROUP_AUTHORIZATION_FAILED for each group it may not."""
        from kcoord.faults import error_body

        principal = principal_of(connection)
        if api_key in _ONE_GROUP:
            if self.allowed(principal, _ONE_GROUP[api_key], body.group_id):
                return await handle(body)
            return error_body(api_key, api_version, body, DENIED)
        if api_key == 16:  # ListGroups shows only the groups the principal may describe
            response = await handle(body)
            response["groups"] = [g for g in response["groups"] if self.allowed(principal, DESCRIBE, g["group_id"])]
            return response
        batch = _batched(api_key, api_version, body)
        if batch is None:
            return await handle(body)
        field, key, operation, answer_field, denied_answer = batch
        items = body[field] if field else [body]
        denied = {key(i) for i in items if not self.allowed(principal, operation, key(i))}
        if not denied:
            return await handle(body)
        if field is None or len(denied) == len(items):
            return error_body(api_key, api_version, body, DENIED)
        allowed_body = Message(body)
        allowed_body[field] = [i for i in items if key(i) not in denied]
        response = await handle(allowed_body)
        response[answer_field] = list(response[answer_field]) + [denied_answer(g) for g in sorted(denied)]
        return response


def _batched(api_key: int, api_version: int, body):
    """(request list field or None, key of an item, operation, response list field, denied entry)."""
    if api_key == 9:  # OffsetFetch: one group before v8, a batch after
        if api_version < 8:
            return None, lambda b: b.group_id, READ, None, None
        return ("groups", lambda g: g.group_id, READ, "groups",
                lambda g: {"group_id": g, "topics": [], "error_code": DENIED})
    if api_key == 10:  # FindCoordinator: group keys only
        if body.get("key_type", 0) != 0:
            return None
        if api_version < 4:
            return None, lambda b: b.key, DESCRIBE, None, None
        return ("coordinator_keys", lambda k: k, DESCRIBE, "coordinators",
                lambda k: {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": DENIED,
                           "error_message": "Not authorized to access group"})
    if api_key == 15:  # DescribeGroups
        return ("groups", lambda g: g, DESCRIBE, "groups",
                lambda g: {"group_id": g, "error_code": DENIED, "group_state": "", "protocol_type": "",
                           "protocol_data": "", "members": [], "authorized_operations": -2147483648})
    if api_key == 42:  # DeleteGroups
        return ("groups_names", lambda g: g, DELETE, "results", lambda g: {"group_id": g, "error_code": DENIED})
    return None
