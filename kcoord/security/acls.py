"""Simple group ACLs: which principals may use which group ids.

Off unless `--group-acls FILE` is given; then anything not allowed is denied (Kafka's
`allow.everyone.if.no.acl.found=false`). A file holds one rule per line:

    # principal      operation   group id (exact, a prefix ending in *, or * for all)
    User:alice       Read        orders
    User:alice       Read        reports-*
    User:*           Describe    *

Principals are Kafka's: `User:<SASL name>`, or `User:ANONYMOUS` on a listener without
SASL; `User:*` matches every principal. Operations are those of Kafka's authorizer on
the GROUP resource: Read, Describe, Delete, and All for every operation. Which one an
API needs is its descriptor's `group_acl` (kcoord.api); ListGroups, needing Describe,
shows only the groups the principal may describe.

Read and Delete imply Describe, as in Kafka. A denied request gets
GROUP_AUTHORIZATION_FAILED (30) for that group: batched requests answer each group on
its own. Topic ACLs are not modelled.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

from kcoord.api import GroupBatch, GroupOperation, registry
from wire.errors import ErrorCode
from wire.types import Message

log = logging.getLogger("kcoord.security")

READ, DESCRIBE, DELETE, ALL = GroupOperation
OPERATIONS = tuple(GroupOperation)
# What a granted operation also allows (Kafka: READ, WRITE, DELETE and ALTER imply DESCRIBE).
_IMPLIES = {READ: {READ, DESCRIBE}, DESCRIBE: {DESCRIBE}, DELETE: {DELETE, DESCRIBE}, ALL: set(OPERATIONS)}
DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
ANONYMOUS = "User:ANONYMOUS"


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
    name = connection.principal
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
        descriptor = registry()[api_key]
        acl = descriptor.group_acl
        if acl is None:
            return await handle(body)
        principal = principal_of(connection)
        if acl.filters is not None:
            response = await handle(body)
            response[acl.filters] = [g for g in response[acl.filters]
                                     if self.allowed(principal, acl.operation, g["group_id"])]
            return response
        named = descriptor.groups(api_version, body)
        if named is None:
            return await handle(body)
        if not isinstance(named, GroupBatch):
            if self.allowed(principal, acl.operation, named):
                return await handle(body)
            return descriptor.failure(api_version, body, DENIED)
        items = body[named.request_field]
        denied = {named.group_of(i) for i in items if not self.allowed(principal, acl.operation, named.group_of(i))}
        if not denied:
            return await handle(body)
        if len(denied) == len(items):
            return descriptor.failure(api_version, body, DENIED)
        allowed_body = Message(body)
        allowed_body[named.request_field] = [i for i in items if named.group_of(i) not in denied]
        response = await handle(allowed_body)
        message = {} if acl.denied_message is None else {"error_message": acl.denied_message}
        response[named.response_field] = (list(response[named.response_field])
                                          + [{**named.entry(g, DENIED), **message} for g in sorted(denied)])
        return response
