"""Kafka Connect's group protocol: what distributed workers put in JoinGroup metadata and
what the leader hands each worker in SyncGroup, for groups of protocol type "connect".

Written from the layouts in Kafka's connect-runtime (ConnectProtocol,
IncrementalCooperativeConnectProtocol, ExtendedAssignment); all big-endian, strings as an
int16 length then UTF-8, arrays as an int32 count (-1: null), bytes as an int32 length:

* eager, protocol "default", version 0:
  metadata   = version:int16 url:string config_offset:int64
  assignment = version:int16 error:int16 leader:string leader_url:string config_offset:int64
               [connector:string [task:int32]]
* incremental cooperative, protocols "compatible" (version 1) and "sessioned" (version 2):
  metadata   = version:int16 url:string config_offset:int64 allocation:nullable bytes
               (allocation: the worker's previous assignment, itself a v1/v2 assignment)
  assignment = the v0 fields, then revoked:[connector:string [task:int32]] delay:int32;
               fields past the end of the bytes take their defaults (none revoked, delay 0)

In the per-connector task lists, task -1 stands for the connector itself. Tasks are named
"connector-N", as Connect's logs and REST API name them.

`decode_metadata` / `decode_assignment` return None for bytes that are not Connect's (an
empty assignment, a consumer's); `encode_*` are their inverses, for tests.
"""
from __future__ import annotations

import struct
from dataclasses import asdict, dataclass, field

PROTOCOLS = {"default": 0, "compatible": 1, "sessioned": 2}  # protocol name -> version it speaks
CONNECTOR_TASK = -1
ERRORS = {0: "NONE", 1: "CONFIG_MISMATCH"}


@dataclass
class ConnectAssignment:
    version: int
    error: int
    leader: str | None
    leader_url: str | None
    config_offset: int
    connectors: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    revoked_connectors: list[str] = field(default_factory=list)
    revoked_tasks: list[str] = field(default_factory=list)
    delay: int = 0

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class WorkerMetadata:
    version: int
    url: str | None
    config_offset: int
    allocation: ConnectAssignment | None = None  # v1/v2: what the worker held before this join

    def to_json(self) -> dict:
        return {"version": self.version, "url": self.url, "config_offset": self.config_offset,
                "allocation": self.allocation.to_json() if self.allocation else None}


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    @property
    def done(self) -> bool:
        return self.pos >= len(self.data)

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("truncated")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def string(self) -> str | None:
        n = self.take(">h")
        return None if n < 0 else self.raw(n).decode("utf-8")

    def nullable_bytes(self) -> bytes | None:
        n = self.take(">i")
        return None if n < 0 else self.raw(n)

    def connector_tasks(self) -> tuple[list[str], list[str]] | None:
        n = self.take(">i")
        if n < 0:
            return None
        connectors, tasks = [], []
        for _ in range(n):
            connector = self.string()
            count = self.take(">i")
            for _ in range(max(count, 0)):
                task = self.take(">i")
                if task == CONNECTOR_TASK:
                    connectors.append(connector)
                else:
                    tasks.append(f"{connector}-{task}")
        return connectors, tasks


def _assignment(r: _Reader) -> ConnectAssignment:
    version = r.take(">h")
    if version < 0:
        raise ValueError(f"unsupported Connect protocol version {version}")
    a = ConnectAssignment(version, r.take(">h"), r.string(), r.string(), r.take(">q"))
    assigned = r.connector_tasks()
    if assigned:
        a.connectors, a.tasks = assigned
    if version >= 1:
        # IncrementalCooperativeConnectProtocol tolerates missing trailing fields.
        if not r.done:
            revoked = r.connector_tasks()
            if revoked:
                a.revoked_connectors, a.revoked_tasks = revoked
        if not r.done:
            a.delay = r.take(">i")
    return a


def decode_assignment(data: bytes | None) -> ConnectAssignment | None:
    """A SyncGroup assignment of a Connect group, or None if `data` is empty or not one."""
    if not data or len(data) < 2:
        return None
    try:
        return _assignment(_Reader(bytes(data)))
    except (ValueError, UnicodeDecodeError, struct.error):
        return None


def decode_metadata(data: bytes | None) -> WorkerMetadata | None:
    """A worker's JoinGroup protocol metadata, or None if `data` is not one."""
    if not data or len(data) < 2:
        return None
    try:
        r = _Reader(bytes(data))
        version = r.take(">h")
        if version < 0:
            return None
        m = WorkerMetadata(version, r.string(), r.take(">q"))
        if version >= 1 and not r.done:
            allocation = r.nullable_bytes()
            if allocation:
                m.allocation = _assignment(_Reader(allocation))
        return m
    except (ValueError, UnicodeDecodeError, struct.error):
        return None


# ---------------------------------------------------------------- inverses (for tests and tools)

def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode("utf-8")
    return struct.pack(">h", len(b)) + b


def _split_task(task: str) -> tuple[str, int]:
    connector, _, n = task.rpartition("-")
    return connector, int(n)


def _connector_tasks(connectors: list[str], tasks: list[str]) -> bytes:
    by: dict[str, list[int]] = {}
    for c in connectors:
        by.setdefault(c, []).append(CONNECTOR_TASK)
    for t in tasks:
        c, n = _split_task(t)
        by.setdefault(c, []).append(n)
    out = struct.pack(">i", len(by))
    for c, ids in by.items():
        out += _str(c) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    return out


def encode_assignment(a: ConnectAssignment) -> bytes:
    out = (struct.pack(">hh", a.version, a.error) + _str(a.leader) + _str(a.leader_url)
           + struct.pack(">q", a.config_offset) + _connector_tasks(a.connectors, a.tasks))
    if a.version >= 1:
        out += _connector_tasks(a.revoked_connectors, a.revoked_tasks) + struct.pack(">i", a.delay)
    return out


def encode_metadata(m: WorkerMetadata) -> bytes:
    out = struct.pack(">h", m.version) + _str(m.url) + struct.pack(">q", m.config_offset)
    if m.version >= 1:
        if m.allocation is None:
            out += struct.pack(">i", -1)
        else:
            alloc = encode_assignment(m.allocation)
            out += struct.pack(">i", len(alloc)) + alloc
    return out


def held(meta: WorkerMetadata | None, a: ConnectAssignment | None) -> tuple[list[str], list[str]]:
    """(connectors, tasks) the worker runs once it has applied `a`. Eager (version 0): the
    assignment is the whole set. Incremental cooperative (1, 2): the assignment names only what
    this round adds and revokes, so the whole set is what the worker said it held when it
    joined (its metadata's allocation), less the revoked, plus the added."""
    if a is None:
        return [], []
    if a.version == 0:
        return sorted(a.connectors), sorted(a.tasks)
    before = meta.allocation if meta is not None and meta.allocation is not None else None
    connectors = set(before.connectors if before else ()) - set(a.revoked_connectors) | set(a.connectors)
    tasks = set(before.tasks if before else ()) - set(a.revoked_tasks) | set(a.tasks)
    return sorted(connectors), sorted(tasks)


def journal_summary(a: ConnectAssignment, meta: WorkerMetadata | None = None) -> dict:
    """What the journal keeps of a member's Connect assignment on sync: the assignment's own
    fields, and from the member's join metadata its url and what it holds after this round."""
    out = {"leader": a.leader, "connectors": a.connectors, "tasks": a.tasks,
           "revoked_connectors": a.revoked_connectors, "revoked_tasks": a.revoked_tasks, "delay": a.delay,
           "error": a.error, "config_offset": a.config_offset, "version": a.version}
    connectors, tasks = held(meta, a)
    out.update(url=meta.url if meta else None, held_connectors=connectors, held_tasks=tasks)
    return out
