"""Request handlers and the registry of served APIs.

Every served Kafka API has one module here, named after its `ApiKey` (JOIN_GROUP
-> join_group.py), defining `DESCRIPTOR`: the one place that says which versions
kcoord serves, what changes between them, which groups a request names, what the
group and topic ACLs check, and the response that fails a whole request. The server,
ApiVersions, fault rules, ACLs and the README's served-API table
(`python -m kcoord.api.table`) all read `registry()`, so a client never sees an
API advertised that is not implemented, and no fact about an API is kept twice.
"""
from __future__ import annotations

import enum
import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Awaitable, Callable

# Descriptors declare their ACL needs in security's own terms: kcoord.security reads them
# without importing this package.
from kcoord.security.acl_needs import GroupAcl, GroupOperation, TopicAcl, TopicOperation  # noqa: F401
from wire import codec
from wire.types import Message


class ApiKey(enum.IntEnum):
    """Kafka's API keys, named as in Kafka's ApiKeys: every key wire/ has a spec for."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_QUORUM = 55
    UPDATE_FEATURES = 57
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92

    @property
    def api_name(self) -> str:
        """Kafka's CamelCase name (JOIN_GROUP -> JoinGroup), as in the message specs."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @property
    def module_name(self) -> str:
        return self.name.lower()


@dataclass
class RequestContext:
    broker: object            # kcoord.broker.Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    connection: object        # kcoord.server.Connection
    api: "ApiDescriptor"      # the request's API: what its topic ACL checks (kcoord.security.acls.topic_gate)


HandlerFn = Callable[[RequestContext, Message], Awaitable[dict | None]]


@dataclass(frozen=True)
class GroupBatch:
    """A request naming groups in a list, answered with one entry per item."""

    request_field: str
    group_of: Callable[[object], str]       # the group id an item of the request list names
    response_field: str
    entry: Callable[[str, int], dict]       # the answer for a group that failed with an error code

    def group_ids(self, body: Message) -> list[str]:
        return [self.group_of(item) for item in body[self.request_field]]

    def failed(self, body: Message, code: int) -> dict:
        """Every item of `body` answered with `code`."""
        return {self.response_field: [self.entry(g, code) for g in self.group_ids(body)]}


# What a request says about groups at a version: one group id, a GroupBatch, or None.
GroupsFn = Callable[[int, Message], "str | GroupBatch | None"]


def named_group(version: int, body: Message) -> str:
    """For requests about the one group in their `group_id`."""
    return body.group_id


# The served-API table's note for the four APIs of the classic group protocol, which the
# README describes once, below the table.
CLASSIC_PROTOCOL = "Kafka's classic protocol, see below"

# Kafka's Integer.MIN_VALUE: authorized operations were not asked for.
NO_AUTHORIZED_OPERATIONS = -(2**31)


class NoErrorResponse(ValueError):
    """An API version whose response cannot fail a request as a whole."""


ErrorResponseFn = Callable[[int, Message, int], dict]


@dataclass(frozen=True)
class ApiDescriptor:
    key: ApiKey
    min_version: int
    max_version: int
    handler: HandlerFn
    summary: str                                  # what kcoord does with it, for the served-API table
    # version -> what changes from that version on, where it matters to kcoord.
    version_notes: dict[int, str] = field(default_factory=dict)
    groups: GroupsFn | None = None                # None: the API names no group
    group_acl: GroupAcl | None = None             # None: no group ACL applies
    topic_acl: TopicAcl | None = None             # None: no topic ACL applies
    # The body Kafka sends when a request fails as a whole, unless it names a GroupBatch
    # (then every group gets the error); None: a top-level error code.
    error_response: ErrorResponseFn | None = None
    # The handler answers without waiting on anything (no parked request, no long poll, no
    # asyncio.timeout): the server may run it inside the connection's read callback rather
    # than in a task of its own. Should it wait after all, it carries on in a task.
    inline: bool = False

    @functools.cached_property
    def name(self) -> str:
        return self.key.api_name   # built from the enum's name: once, not per request

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def group_ids(self, version: int, body: Message) -> list[str]:
        named = None if self.groups is None else self.groups(version, body)
        if named is None:
            return []
        if isinstance(named, GroupBatch):
            return named.group_ids(body)
        return [named]

    def failure(self, version: int, body: Message, code: int) -> dict:
        """The response to `body` failed as a whole with error `code`."""
        named = None if self.groups is None else self.groups(version, body)
        if isinstance(named, GroupBatch):
            # As Kafka answers a batch: each group on its own, all with the same error.
            return named.failed(body, int(code))
        if self.error_response is not None:
            return self.error_response(version, body, int(code))
        layout = codec.message(self.key, version, "response")
        if not any(name == "error_code" for name, _ in layout.tree.fields):
            raise NoErrorResponse(f"api {int(self.key)} v{version} has no top-level error code")
        return {"error_code": int(code)}


_REGISTRY: dict[ApiKey, ApiDescriptor] = {}


def registry() -> dict[ApiKey, ApiDescriptor]:
    """Every served API's descriptor, by key (in key order)."""
    if not _REGISTRY:
        modules = {m.name for m in pkgutil.iter_modules(__path__)}
        found = {}
        for key in ApiKey:
            if key.module_name not in modules:
                continue
            descriptor = importlib.import_module(f"{__name__}.{key.module_name}").DESCRIPTOR
            if descriptor.key != key:
                raise RuntimeError(f"{key.module_name}.py describes {descriptor.key.name}, not {key.name}")
            found[key] = descriptor
        _REGISTRY.update(found)
    return _REGISTRY
