"""Encode and decode Kafka requests and responses, every API and version.

Each (api key, version, direction) becomes a construct tree generated from
Kafka's JSON spec (`wire.specs`), compiled once with construct's `compile()`
and cached. Payloads here are frames *without* their 4-byte size prefix
(`wire.framing` adds and strips it).

Headers follow Kafka's rules: request header v2 for flexible versions of an
API, v1 otherwise (v0 only for ControlledShutdown v0); response header v1 for
flexible versions, v0 otherwise — except ApiVersions responses, which always
use v0 so that a client can parse them before versions are negotiated.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from io import BytesIO

from wire import specs as S
from wire.types import (
    Array, Bool, Bytes, DecodeError, EncodeError, Int, KType, Message, String, Struct, Uuid,
)

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7

_INT_TYPES = {"int8", "int16", "uint16", "int32", "uint32", "int64", "float64"}


class UnsupportedVersionError(DecodeError):
    """An api key or version the specs do not define."""

    def __init__(self, api_key: int, api_version: int, reason: str | None = None):
        self.api_key = api_key
        self.api_version = api_version
        super().__init__(reason or f"unsupported api key {api_key} version {api_version}")


def _int_default(raw, kind):
    if raw is None:
        return 0.0 if kind == "float64" else 0
    if kind == "float64":
        return float(raw)
    return int(str(raw), 0)


def _primitive(spec: S.MessageSpec, f: S.FieldSpec, type_name: str, version: int, flexible: bool,
               nullable: bool, element: bool = False) -> KType:
    if element:
        # An array's default describes the array, not its elements.
        f = S.FieldSpec(**{**f.__dict__, "default": None})
    if f.flexible_versions is not None:
        flexible = flexible and version in f.flexible_versions
    if type_name in _INT_TYPES:
        t = Int(type_name)
        t.default = _int_default(f.default, type_name)
        return t
    if type_name == "bool":
        t = Bool()
        t.default = str(f.default).lower() == "true" if f.default is not None else False
        return t
    if type_name == "uuid":
        return Uuid()
    if type_name == "string":
        if f.default == "null" and nullable:
            default = None
        else:
            default = "" if f.default in (None, "null") else str(f.default)
        return String(flexible, nullable, default)
    if type_name in ("bytes", "records"):
        default = None if (nullable and f.default == "null") or (type_name == "records" and nullable) else b""
        return Bytes(flexible, nullable, default)
    raise S.SpecError(f"{spec.name}: unknown type {type_name}")


def _field_type(spec: S.MessageSpec, f: S.FieldSpec, version: int, flexible: bool) -> KType:
    nullable = version in f.nullable_versions
    if f.is_array:
        if f.is_struct:
            elem = _struct(spec, f.element_type, spec.struct_fields(f), version, flexible, nullable=False)
        else:
            elem = _primitive(spec, f, f.element_type, version, flexible, nullable=False, element=True)
        return Array(elem, compact=flexible, nullable=nullable,
                     default_null=nullable and f.default == "null")
    if f.is_struct:
        return _struct(spec, f.type, spec.struct_fields(f), version, flexible, nullable=nullable)
    return _primitive(spec, f, f.type, version, flexible, nullable)


def _struct(spec: S.MessageSpec, name: str, fields: list[S.FieldSpec], version: int, flexible: bool,
            nullable: bool = False) -> Struct:
    regular, tagged = [], []
    for f in fields:
        if version not in f.versions:
            continue
        t = _field_type(spec, f, version, flexible)
        if f.tag is not None and version in f.tagged_versions:
            if flexible:
                tagged.append((f.tag, f.attr, t))
        else:
            regular.append((f.attr, t))
    return Struct(name, regular, tagged if flexible else None, nullable=nullable)


@dataclass(frozen=True)
class CompiledMessage:
    """One message layout, with the compiled fast path and the diagnosing slow path."""

    name: str
    version: int
    tree: Struct
    parsefunc: object
    buildfunc: object

    def decode(self, data: bytes, offset_base: int = 0) -> Message:
        return self.decode_from(BytesIO(data), offset_base, require_end=True)

    def decode_from(self, io: BytesIO, offset_base: int = 0, require_end: bool = False) -> Message:
        start = io.tell()
        try:
            value = self.parsefunc(io, None)
        except Exception:
            io.seek(start)
            value = self._diagnose(io, offset_base)
        if require_end:
            rest = io.read()
            if rest:
                raise DecodeError(f"{len(rest)} unexpected trailing bytes after {self.name} v{self.version}",
                                  self.name, offset_base + io.tell() - len(rest))
        return value

    def _diagnose(self, io: BytesIO, shift: int) -> Message:
        try:
            return self.tree._parse(io, None, f"{self.name} v{self.version}")
        except DecodeError as err:
            raise DecodeError(err.reason, err.field,
                              None if err.offset is None else err.offset + shift) from None

    def encode_into(self, value, io: BytesIO) -> None:
        start = io.tell()
        try:
            self.buildfunc(value, io, None)
        except Exception as exc:
            io.seek(start)
            io.truncate()
            self.tree._build(value, io, None, f"{self.name} v{self.version}")
            raise EncodeError(f"could not encode ({exc})", f"{self.name} v{self.version}") from exc

    def encode(self, value) -> bytes:
        io = BytesIO()
        self.encode_into(value, io)
        return io.getvalue()


@lru_cache(maxsize=None)
def compiled_message(spec_name: str, version: int) -> CompiledMessage:
    spec = S.spec_named(spec_name)
    if version not in spec.valid_versions:
        raise UnsupportedVersionError(spec.api_key if spec.api_key is not None else -1, version,
                                      f"{spec_name} has no version {version} "
                                      f"(valid {spec.valid_versions.low}-{spec.valid_versions.high})")
    flexible = version in spec.flexible_versions
    tree = _struct(spec, spec.name, spec.fields, version, flexible)
    compiled = tree.compile()
    return CompiledMessage(spec.name, version, tree, compiled.parsefunc, compiled.buildfunc)


def message(api_key: int, api_version: int, kind: str) -> CompiledMessage:
    """The compiled layout of a request or response body ("request" / "response")."""
    try:
        spec = S.spec_for(api_key, kind)
    except KeyError:
        raise UnsupportedVersionError(api_key, api_version, f"unknown api key {api_key}") from None
    if api_version not in spec.valid_versions:
        raise UnsupportedVersionError(api_key, api_version)
    return compiled_message(spec.name, api_version)


def is_flexible(api_key: int, api_version: int) -> bool:
    return api_version in S.spec_for(api_key, "request").flexible_versions


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def _request_header(version: int) -> CompiledMessage:
    if version == 0:
        return _REQUEST_HEADER_V0
    return compiled_message("RequestHeader", version)


def _response_header(version: int) -> CompiledMessage:
    return compiled_message("ResponseHeader", version)


class _HeaderV0:
    """Request header v0 (no client id); not in Kafka's header spec's valid range."""

    name, version = "RequestHeader", 0
    _st = struct.Struct(">hhi")

    def decode_from(self, io, offset_base=0, require_end=False):
        b = io.read(8)
        if len(b) != 8:
            raise DecodeError("truncated request header", "RequestHeader v0", offset_base)
        k, v, c = self._st.unpack(b)
        return Message(request_api_key=k, request_api_version=v, correlation_id=c)

    def encode_into(self, value, io):
        io.write(self._st.pack(value["request_api_key"], value["request_api_version"], value["correlation_id"]))


_REQUEST_HEADER_V0 = _HeaderV0()

_API_KEY_VERSION = struct.Struct(">hh")


@dataclass
class Request:
    api_key: int
    api_version: int
    header: Message
    body: Message
    trailing_bytes: int = 0  # bytes after the body, ignored as Kafka ignores them

    @property
    def correlation_id(self) -> int:
        return self.header["correlation_id"]

    @property
    def client_id(self) -> str | None:
        return self.header.get("client_id")


def peek_request_header(payload: bytes) -> Message:
    """Decode just the header of a request (to answer even when the body is bad).

    Raises UnsupportedVersionError (with api key/version set) when the API or
    version is unknown, after the header itself was decoded: the caller then
    still knows the correlation id to answer with.
    """
    if len(payload) < 4:
        raise DecodeError("request shorter than its api key and version", "RequestHeader", 0)
    api_key, api_version = _API_KEY_VERSION.unpack_from(payload, 0)
    try:
        hv = request_header_version(api_key, api_version)
    except KeyError:
        hv = 1
    return _request_header(hv).decode_from(BytesIO(payload))


_HEADER_FIXED = struct.Struct(">hhih")  # api key, api version, correlation id, client id length
# (api key, api version) -> (request header version, body layout): looked up once per pair.
_REQUEST_LAYOUTS: dict[tuple[int, int], tuple[int, CompiledMessage]] = {}


def _request_layout(api_key: int, api_version: int) -> tuple[int, CompiledMessage]:
    found = _REQUEST_LAYOUTS.get((api_key, api_version))
    if found is None:
        body_layout = message(api_key, api_version, "request")
        found = _REQUEST_LAYOUTS[(api_key, api_version)] = (request_header_version(api_key, api_version), body_layout)
    return found


def _fast_header(payload: bytes, header_version: int) -> tuple[Message, int] | None:
    """Header v1/v2 read straight from the bytes (the common case: a short client id and, in
    v2, no tagged fields); None sends the frame down the general path, which also diagnoses."""
    if len(payload) < 10:
        return None
    api_key, api_version, correlation_id, n = _HEADER_FIXED.unpack_from(payload, 0)
    end = 10 + n if n >= 0 else 10
    if n < -1 or end > len(payload):
        return None
    try:
        client_id = payload[10:end].decode("utf-8") if n >= 0 else None
    except UnicodeDecodeError:
        return None
    header = Message(request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id,
                     client_id=client_id)
    if header_version == 2:
        if end >= len(payload) or payload[end] != 0:
            return None
        end += 1
    return header, end


def decode_request(payload: bytes) -> Request:
    """Decode a request frame (without size prefix) into header and body; trailing bytes are ignored."""
    if len(payload) < 4:
        raise DecodeError("request shorter than its api key and version", "RequestHeader", 0)
    api_key, api_version = _API_KEY_VERSION.unpack_from(payload, 0)
    header_version, body_layout = _request_layout(api_key, api_version)
    io = BytesIO(payload)
    fast = _fast_header(payload, header_version) if header_version else None
    if fast is not None:
        header, end = fast
        io.seek(end)
    else:
        header = _request_header(header_version).decode_from(io)
    body = body_layout.decode_from(io)
    # Kafka's request parser ignores bytes after the body, and librdkafka 2.16 sends
    # some (e.g. 3 extra bytes in Metadata v13), so they are counted, not refused.
    return Request(api_key, api_version, header, body, len(payload) - io.tell())


def encode_request(api_key: int, api_version: int, header: dict, body: dict) -> bytes:
    """Encode header + body; `header` needs correlation_id (and client_id)."""
    layout = message(api_key, api_version, "request")
    io = BytesIO()
    h = dict(header)
    h["request_api_key"] = api_key
    h["request_api_version"] = api_version
    h.setdefault("client_id", None)
    _request_header(request_header_version(api_key, api_version)).encode_into(h, io)
    layout.encode_into(body, io)
    return io.getvalue()


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[Message, Message]:
    layout = message(api_key, api_version, "response")
    io = BytesIO(payload)
    header = _response_header(response_header_version(api_key, api_version)).decode_from(io)
    body = layout.decode_from(io, require_end=True)
    return header, body


class EncodedBody(bytes):
    """A response body already encoded for the version being answered: `encode_response`
    puts it after the header as it is (a handler's memo of an answer it gives often)."""

    __slots__ = ()


# (api key, api version) -> (whether the response header has tagged fields, body layout).
_RESPONSE_LAYOUTS: dict[tuple[int, int], tuple[bool, CompiledMessage]] = {}
_CORRELATION = struct.Struct(">i")


def encode_response(api_key: int, api_version: int, header: dict, body: dict) -> bytes:
    """Encode a response; `header` needs correlation_id."""
    found = _RESPONSE_LAYOUTS.get((api_key, api_version))
    if found is None:
        found = _RESPONSE_LAYOUTS[(api_key, api_version)] = (
            response_header_version(api_key, api_version) == 1, message(api_key, api_version, "response"))
    tagged, layout = found
    io = BytesIO()
    if len(header) == 1:
        # Header v0 is the correlation id; v1 adds tagged fields, of which there are none here.
        io.write(_CORRELATION.pack(header["correlation_id"]))
        if tagged:
            io.write(b"\x00")
    else:
        _response_header(1 if tagged else 0).encode_into(header, io)
    if type(body) is EncodedBody:
        io.write(body)
    else:
        layout.encode_into(body, io)
    return io.getvalue()


def all_message_versions():
    """Every (api_key, version, kind) the specs define for requests and responses."""
    out = []
    for spec in S.all_specs().values():
        if spec.kind not in ("request", "response") or spec.api_key is None:
            continue
        for v in spec.valid_versions:
            out.append((spec.api_key, v, spec.kind))
    return sorted(out)
