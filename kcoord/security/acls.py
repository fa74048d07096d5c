"""ACLs: which principals may do what on groups, topics and the cluster, as Kafka's
StandardAuthorizer decides it.

Off unless `--group-acls FILE` or `--acls` is given; then anything not allowed is denied
(Kafka's `allow.everyone.if.no.acl.found=false`), except for the super users
(`--super-users`), who may do everything. ACLs come from two places:

* the rules file of `--group-acls`, one group or topic rule per line:

      # principal      operation   group id, or Topic:name (exact, a prefix ending in *, or * for all)
      User:alice       Read        orders
      User:alice       Read        reports-*
      User:*           Describe    *
      User:alice       Read        Topic:orders-*

* CreateAcls and DeleteAcls at run time (Kafka's `kafka-acls`), on groups, topics and the
  cluster, literal or prefixed, ALLOW or DENY, for a principal and a host. With a data dir
  they are kept in `acls.json` there, as an overlay on the file: the ACLs created, and the
  file's ACLs deleted; a restart applies it again to whatever the file then holds.

Principals are Kafka's: `User:<SASL name>`, or `User:ANONYMOUS` on a listener without
SASL; `User:*` matches every principal, host `*` every host. As in Kafka, a DENY wins over
any ALLOW; an ALLOW for Read, Write, Delete or Alter also allows Describe, and one for
AlterConfigs allows DescribeConfigs (never so for DENY); All is every operation. Which
group operation an API needs is its descriptor's `group_acl` (kcoord.api); ListGroups,
needing Describe, shows only the groups the principal may describe. A denied group gets
GROUP_AUTHORIZATION_FAILED (30): batched requests answer each group on its own. Which topic
operation an API needs is its descriptor's `topic_acl`; the handlers ask `topic_gate` per topic
and answer a denied one TOPIC_AUTHORIZATION_FAILED (29) where Kafka does (see docs/security.md).
"""
from __future__ import annotations

import enum
import json
import logging
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Awaitable, Callable

from kcoord.security.acl_needs import GroupOperation, TopicOperation
from wire.errors import ErrorCode
from wire.types import Message

log = logging.getLogger("kcoord.security")

DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
ANONYMOUS = "User:ANONYMOUS"
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
ACLS_FILE = "acls.json"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15

    @classmethod
    def named(cls, name: str) -> "Operation":
        """From Kafka's CamelCase name (Read, DescribeConfigs) or the enum's."""
        return cls[name.upper()] if name.upper() in cls.__members__ else cls[
            "".join("_" + c if c.isupper() else c.upper() for c in name).lstrip("_")]


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Kafka's StandardAuthorizerData: what an ALLOW for another operation implies.
_IMPLIES = {Operation.DESCRIBE: {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE,
                                 Operation.ALTER},
            Operation.DESCRIBE_CONFIGS: {Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}}
GROUP_OPERATIONS = tuple(GroupOperation)
TOPIC_OPERATIONS = tuple(TopicOperation) + ("All",)
TOPIC_PREFIX = "Topic:"


class AclFileError(ValueError):
    pass


class InvalidAcl(ValueError):
    """INVALID_REQUEST, with Kafka's message."""


@dataclass(frozen=True)
class Acl:
    """One ACL binding: a resource pattern and an access control entry."""

    resource_type: int
    name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def on(self, resource_type: int, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)

    def decides(self, principal: str, host: str, operation: int) -> Permission | None:
        """ALLOW or DENY if this ACL (already on the resource) speaks for the action, else None."""
        if self.principal not in (principal, "User:*") or self.host not in (host, WILDCARD):
            return None
        if self.operation != Operation.ALL:
            if self.permission == Permission.ALLOW:
                if self.operation not in _IMPLIES.get(operation, {operation}):
                    return None
            elif self.operation != operation:
                return None
        return Permission(self.permission)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class AclFilter:
    """Kafka's AclBindingFilter: None or ANY matches anything; pattern MATCH matches the
    ACLs that would apply to the named resource."""

    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def unknown(self) -> str | None:
        if PatternType.UNKNOWN in (self.pattern_type,) or self.resource_type == ResourceType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == Operation.UNKNOWN or self.permission == Permission.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, acl: Acl) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.name != acl.name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:
                if acl.name not in (self.name, WILDCARD):
                    return False
            elif not self.name.startswith(acl.name):
                return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (Operation.ANY, acl.operation)
                and self.permission in (Permission.ANY, acl.permission))


def _name(value) -> str:
    return value.name if hasattr(value, "name") else str(value)


def validate_new(acl: Acl) -> None:
    """Kafka's AclApis and AclControlManager.validateNewAcl checks; InvalidAcl if one fails."""
    if acl.resource_type == ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if acl.name == "":
        raise InvalidAcl("Invalid empty resource name")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY) or acl.resource_type not in ResourceType.__members__.values():
        raise InvalidAcl(f"Invalid resourceType {_enum_name(ResourceType, acl.resource_type)}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {_enum_name(PatternType, acl.pattern_type)}")
    if acl.operation in (Operation.UNKNOWN, Operation.ANY) or acl.operation not in Operation.__members__.values():
        raise InvalidAcl(f"Invalid operation {_enum_name(Operation, acl.operation)}")
    if acl.permission not in (Permission.DENY, Permission.ALLOW):
        raise InvalidAcl(f"Invalid permissionType {_enum_name(Permission, acl.permission)}")
    if ":" not in acl.principal:
        raise InvalidAcl(f"Could not parse principal from `{acl.principal}` (no colon is present separating "
                         "the principal type from the principal name)")


def _enum_name(kind, code: int) -> str:
    try:
        return kind(code).name
    except ValueError:
        return "UNKNOWN"  # Kafka reads a code it does not know as UNKNOWN


def principal_of(connection) -> str:
    name = connection.principal
    return f"User:{name}" if name else ANONYMOUS


def _file_acl(principal: str, operation: str, group: str, resource: int = ResourceType.GROUP) -> Acl:
    if group == WILDCARD:
        name, pattern = WILDCARD, PatternType.LITERAL
    elif group.endswith("*"):
        name, pattern = group[:-1], PatternType.PREFIXED
    else:
        name, pattern = group, PatternType.LITERAL
    return Acl(resource, name, pattern, principal, WILDCARD, Operation.named(operation), Permission.ALLOW)


class Authorizer:
    def __init__(self, static: list[Acl], super_users=(), data_dir: str | None = None):
        self.static = list(dict.fromkeys(static))       # from the rules file
        self.super_users = set(super_users)
        self.path = None if data_dir is None else os.path.join(data_dir, ACLS_FILE)
        self.created: list[Acl] = []
        self.deleted_static: list[Acl] = []
        if self.path is not None and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                saved = json.load(f)
            self.created = [Acl(**a) for a in saved.get("created", [])]
            self.deleted_static = [Acl(**a) for a in saved.get("deleted_from_file", [])]
        self._rebuild()
        self._logged: set[tuple] = set()

    def _rebuild(self) -> None:
        gone = set(self.deleted_static)
        self.acls: list[Acl] = list(dict.fromkeys([a for a in self.static if a not in gone] + self.created))

    @classmethod
    def load(cls, path: str | Path | None, super_users=(), data_dir: str | None = None) -> "Authorizer":
        rules = []
        for number, line in enumerate(Path(path).read_text().splitlines() if path else [], 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            fields = text.split()
            if len(fields) != 3:
                raise AclFileError(f"{path}:{number}: expected 'principal operation group', got {line!r}")
            principal, operation, group = fields
            if not principal.startswith("User:") or principal == "User:":
                raise AclFileError(f"{path}:{number}: a principal is User:<name> or User:*, not {principal!r}")
            # A topic rule names its resource `Topic:<name>`; anything else is a group.
            resource, operations = ResourceType.GROUP, GROUP_OPERATIONS
            if group.startswith(TOPIC_PREFIX) and group != TOPIC_PREFIX:
                resource, operations, group = ResourceType.TOPIC, TOPIC_OPERATIONS, group[len(TOPIC_PREFIX):]
            canonical = {o.lower(): o for o in operations}.get(operation.lower())
            if canonical is None:
                raise AclFileError(f"{path}:{number}: operation {operation!r} is not one of "
                                   f"{', '.join(operations)}")
            rules.append(_file_acl(principal, canonical, group, resource))
        return cls(rules, super_users, data_dir)

    # --- deciding -------------------------------------------------------------------------

    def decide(self, resource_type: int, name: str, principal: str, operation: int, host: str = "*") -> bool:
        if principal in self.super_users:
            return True
        allowed = False
        for acl in self.acls:
            if not acl.on(resource_type, name):
                continue
            verdict = acl.decides(principal, host, operation)
            if verdict == Permission.DENY:
                return False
            allowed = allowed or verdict == Permission.ALLOW
        return allowed

    def allowed_on(self, resource: str, name: str, principal: str, operation: str, host: str = "*") -> bool:
        # Kafka's names ("Topic", "TransactionalId") to the enum's (TOPIC, TRANSACTIONAL_ID).
        resource_type = ResourceType[re.sub(r"(?<=[a-z])(?=[A-Z])", "_", resource).upper()]
        ok = self.decide(resource_type, name, principal, Operation.named(operation), host)
        if not ok:
            key = (principal, operation, resource, name)
            if key not in self._logged and len(self._logged) < 10000:
                self._logged.add(key)  # once per offender, not per heartbeat
                log.warning("denied %s %s on %s %r: no ACL allows it", principal, operation,
                            resource.lower(), name)
        return ok

    def allowed(self, principal: str, operation: str, group: str, host: str = "*") -> bool:
        return self.allowed_on("Group", group, principal, operation, host)

    def allowed_by_type(self, resource_type: int, principal: str, operation: int, host: str = "*") -> bool:
        """Kafka's authorizeByResourceType: whether some ALLOW for `operation` (or All) on a
        resource of the type speaks for the principal without a DENY covering it."""
        if principal in self.super_users:
            return True
        def mine(acl, permission):
            return (acl.resource_type == resource_type and acl.permission == permission
                    and acl.principal in (principal, "User:*") and acl.host in (host, WILDCARD)
                    and acl.operation in (operation, Operation.ALL))
        denies = [a for a in self.acls if mine(a, Permission.DENY)]
        if any(d.pattern_type == PatternType.LITERAL and d.name == WILDCARD for d in denies):
            return False
        for allow in (a for a in self.acls if mine(a, Permission.ALLOW)):
            covered = any(d.pattern_type == PatternType.PREFIXED and allow.name.startswith(d.name)
                          or (d.pattern_type == allow.pattern_type == PatternType.LITERAL and d.name == allow.name)
                          for d in denies)
            if not covered:
                return True
        return False

    # --- CreateAcls, DescribeAcls, DeleteAcls ---------------------------------------------

    def describe(self, flt: AclFilter) -> list[Acl]:
        return [a for a in self.acls if flt.matches(a)]

    def create(self, acls: list[Acl]) -> None:
        """Adds valid ACLs (already checked with validate_new); one already there stays once."""
        deleted_static = [a for a in self.deleted_static if a not in acls]
        created = list(dict.fromkeys(self.created + [a for a in acls if a not in self.acls
                                                     and a not in self.static]))
        self._save(created, deleted_static)

    def delete(self, filters: list[AclFilter]) -> list[list[Acl]]:
        """The ACLs each filter matched, all of them deleted."""
        matched = [self.describe(f) for f in filters]
        gone = {a for m in matched for a in m}
        created = [a for a in self.created if a not in gone]
        deleted_static = list(dict.fromkeys(self.deleted_static + [a for a in self.static if a in gone]))
        self._save(created, deleted_static)
        return matched

    def _save(self, created: list[Acl], deleted_static: list[Acl]) -> None:
        # Disk first: an ACL change a client was told succeeded survives a restart.
        if self.path is not None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"created": [a.to_json() for a in created],
                           "deleted_from_file": [a.to_json() for a in deleted_static]}, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        self.created, self.deleted_static = created, deleted_static
        self._rebuild()

    async def authorize(self, connection, descriptor, api_version: int, body,
                        handle: Callable[[Message], Awaitable[dict | None]]) -> dict | None:
        """The response to `body`: from `handle` for what the principal may do, with
        GROUP_AUTHORIZATION_FAILED for each group it may not.

        `descriptor` is the request's kcoord.api.ApiDescriptor, handed in by the server: its
        `group_acl`, the groups it names at a version (one id, or a batch with its request and
        response fields) and its whole-request failure."""
        acl = descriptor.group_acl
        if acl is None:
            return await handle(body)
        principal = principal_of(connection)
        host = connection.host
        if acl.filters is not None:
            response = await handle(body)
            response[acl.filters] = [g for g in response[acl.filters]
                                     if self.allowed(principal, acl.operation, g["group_id"], host)]
            return response
        named = descriptor.groups(api_version, body)
        if named is None:
            return await handle(body)
        if isinstance(named, str):
            if self.allowed(principal, acl.operation, named, host):
                return await handle(body)
            return descriptor.failure(api_version, body, DENIED)
        items = body[named.request_field]
        denied = {named.group_of(i) for i in items if not self.allowed(principal, acl.operation, named.group_of(i), host)}
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



class TopicGate:
    """Which topics a request may act on: `gate(name)` is true where the principal has the
    operation on the topic (always without an authorizer). Decisions are kept for the
    request, so a topic named with many partitions is decided once."""

    def __init__(self, ctx, operation: str, cluster_wide: bool = False):
        self.authorizer = ctx.broker.authorizer
        self.operation = operation
        self.principal = principal_of(ctx.connection) if self.authorizer is not None else None
        self.host = ctx.connection.host
        # Kafka's CreateTopics and auto-creation: Create on the cluster allows every topic.
        self.everything = self.authorizer is None or (cluster_wide and cluster_allowed(ctx, "Create"))
        self._decided: dict[str, bool] = {}

    def __call__(self, name: str | None) -> bool:
        if self.everything:
            return True
        if name is None:
            return False
        if name not in self._decided:
            self._decided[name] = self.authorizer.allowed_on("Topic", name, self.principal, self.operation,
                                                             self.host)
        return self._decided[name]


def topic_gate(ctx, operation: TopicOperation | str | None = None) -> TopicGate:
    """The gate for the request's topics: the operation of its API's descriptor (`topic_acl`),
    or the one given."""
    acl = ctx.api.topic_acl
    if operation is None:
        if acl is None:
            raise ValueError(f"api {ctx.api_key} has no topic ACL")
        return TopicGate(ctx, acl.operation, acl.cluster_wide)
    return TopicGate(ctx, str(operation), str(operation) == TopicOperation.CREATE)


def cluster_allowed(ctx, operation: str) -> bool:
    """Whether the request's principal may `operation` on the CLUSTER resource: always
    without an authorizer."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    return authorizer.allowed_on("Cluster", "kafka-cluster", principal_of(ctx.connection), operation,
                                 ctx.connection.host)


def allowed_on_group(ctx, group_id: str, operation: str) -> bool:
    """Whether the request's principal may `operation` on group `group_id` (DescribeConfigs and
    AlterConfigs of its configs): always without an authorizer."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    return authorizer.allowed_on("Group", group_id, principal_of(ctx.connection), operation, ctx.connection.host)
