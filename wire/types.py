"""Kafka's primitive types and composite types as construct classes.

Every class here is a `construct.Construct` with two paths:

* a compiled fast path (`_emitparse` / `_emitbuild`): construct's `compile()`
  turns a whole message into straight-line Python over small helper functions
  defined in this module;
* an interpreted path (`_parse` / `_build`) that tracks the field path and the
  byte offset. It is only taken after the fast path failed, to turn whatever
  went wrong into one `DecodeError` / `EncodeError` naming the field and offset.

Decoding never allocates in proportion to a length it has not checked against
the bytes actually present, so a 4-byte "array of 2^31 elements" costs nothing.
"""
from __future__ import annotations

import io as io_module
import struct
import uuid
from io import BytesIO

from construct import Construct


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the expected message."""

    def __init__(self, reason: str, field: str | None = None, offset: int | None = None):
        self.reason = reason
        self.field = field
        self.offset = offset
        where = ""
        if field is not None:
            where += f" in {field}"
        if offset is not None:
            where += f" at byte offset {offset}"
        super().__init__(f"{reason}{where}")


class EncodeError(ValueError):
    """A value that cannot be encoded as the message's field."""

    def __init__(self, reason: str, field: str | None = None):
        self.reason = reason
        self.field = field
        super().__init__(f"{reason} in {field}" if field else reason)


class Message(dict):
    """A decoded struct: a dict with attribute access (`body.group_id`)."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    def __repr__(self):
        return f"Message({dict.__repr__(self)})"


# --------------------------------------------------------------------------
# fast-path helpers (referenced by name from compiled code)
# --------------------------------------------------------------------------
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)


class _Short(Exception):
    pass


class _Missing:
    __slots__ = ()

    def __repr__(self):
        return "MISSING"


# Distinguishes "field not given" (use the spec default) from an explicit None.
MISSING = _Missing()


def _remaining(io) -> int:
    buf = io.getbuffer()
    try:
        return buf.nbytes - io.tell()
    finally:
        buf.release()


def r_exact(io, n):
    b = io.read(n)
    if len(b) != n:
        raise _Short(f"needed {n} bytes, only {len(b)} left")
    return b


def r_uvarint(io):
    b = io.read(1)
    if not b:
        raise _Short("needed a varint byte, none left")
    v = b[0]
    if v < 0x80:
        return v
    result = v & 0x7F
    shift = 7
    while True:
        b = io.read(1)
        if not b:
            raise _Short("varint truncated")
        v = b[0]
        result |= (v & 0x7F) << shift
        if v < 0x80:
            return result
        shift += 7
        if shift > 28:
            raise ValueError("unsigned varint longer than 5 bytes")


def w_uvarint(v, io):
    if v < 0 or v > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {v}")
    while v >= 0x80:
        io.write(bytes((v & 0x7F | 0x80,)))
        v >>= 7
    io.write(bytes((v,)))


def uvarint_bytes(v: int) -> bytes:
    """The unsigned varint of `v`, as bytes."""
    out = io_module.BytesIO()
    w_uvarint(v, out)
    return out.getvalue()


def r_bool(io):
    b = io.read(1)
    if not b:
        raise _Short("needed 1 byte for a bool, none left")
    return b[0] != 0


def w_bool(v, io):
    if not isinstance(v, bool):
        raise TypeError(f"expected bool, got {type(v).__name__}")
    io.write(b"\x01" if v else b"\x00")


def r_uuid(io):
    return uuid.UUID(bytes=r_exact(io, 16))


def w_uuid(v, io):
    if isinstance(v, uuid.UUID):
        io.write(v.bytes)
    elif isinstance(v, (bytes, bytearray)) and len(v) == 16:
        io.write(bytes(v))
    else:
        raise TypeError(f"expected a UUID, got {v!r}")


def _len_in(io, n, what):
    if n > 64 and n > _remaining(io):
        raise _Short(f"{what} length {n} exceeds the {_remaining(io)} bytes left")


def _decode_utf8(b):
    return b.decode("utf-8")


def _prefixed(io, n, nullable, what):
    """The n bytes after a length prefix; n == -1 is null where the field is nullable."""
    if n < 0:
        if nullable and n == -1:
            return None
        raise ValueError(f"invalid {what} length {n}" + ("" if nullable else f" in a non-nullable {what}"))
    _len_in(io, n, what)
    return r_exact(io, n)


def _text(b):
    return None if b is None else _decode_utf8(b)


# The string readers are the codec's hottest code (every request starts with a group id or
# two): each reads its prefix and its bytes itself, without the helper calls above, and
# fails exactly as those do.
def r_string(io):
    b = io.read(2)
    if len(b) != 2:
        raise _Short(f"needed 2 bytes, only {len(b)} left")
    n = (b[0] << 8) | b[1]
    if n >= 0x8000:
        raise ValueError(f"invalid string length {n - 0x10000} in a non-nullable string")
    if n > 64:
        _len_in(io, n, "string")
    t = io.read(n)
    if len(t) != n:
        raise _Short(f"needed {n} bytes, only {len(t)} left")
    return t.decode("utf-8")


def r_nstring(io):
    b = io.read(2)
    if len(b) != 2:
        raise _Short(f"needed 2 bytes, only {len(b)} left")
    n = (b[0] << 8) | b[1]
    if n >= 0x8000:
        if n == 0xFFFF:
            return None
        raise ValueError(f"invalid string length {n - 0x10000}")
    if n > 64:
        _len_in(io, n, "string")
    t = io.read(n)
    if len(t) != n:
        raise _Short(f"needed {n} bytes, only {len(t)} left")
    return t.decode("utf-8")


def r_cstring(io):
    b = io.read(1)
    if b and b[0] < 0x80:   # a length below 127: one varint byte
        n = b[0] - 1
        if n < 0:
            raise ValueError(f"invalid string length {n} in a non-nullable string")
        if n > 64:
            _len_in(io, n, "string")
        t = io.read(n)
        if len(t) != n:
            raise _Short(f"needed {n} bytes, only {len(t)} left")
        return t.decode("utf-8")
    io.seek(-len(b), 1)
    return _decode_utf8(_prefixed(io, r_uvarint(io) - 1, False, "string"))


def r_cnstring(io):
    b = io.read(1)
    if b and b[0] < 0x80:
        n = b[0] - 1
        if n < 0:
            return None
        if n > 64:
            _len_in(io, n, "string")
        t = io.read(n)
        if len(t) != n:
            raise _Short(f"needed {n} bytes, only {len(t)} left")
        return t.decode("utf-8")
    io.seek(-len(b), 1)
    return _text(_prefixed(io, r_uvarint(io) - 1, True, "string"))


def _utf8(v):
    if not isinstance(v, str):
        raise TypeError(f"expected str, got {type(v).__name__}")
    return v.encode("utf-8")


def w_string(v, io):
    b = _utf8(v)
    if len(b) > 0x7FFF:
        raise ValueError(f"string of {len(b)} bytes is longer than 32767")
    io.write(_I16.pack(len(b)))
    io.write(b)


def w_nstring(v, io):
    if v is None:
        io.write(b"\xff\xff")
    else:
        w_string(v, io)


def w_cstring(v, io):
    b = _utf8(v)
    if len(b) > 0x7FFF:
        raise ValueError(f"string of {len(b)} bytes is longer than 32767")
    w_uvarint(len(b) + 1, io)
    io.write(b)


def w_cnstring(v, io):
    if v is None:
        io.write(b"\x00")
    else:
        w_cstring(v, io)


def r_bytes(io):
    return _prefixed(io, _I32.unpack(r_exact(io, 4))[0], False, "bytes")


def r_nbytes(io):
    return _prefixed(io, _I32.unpack(r_exact(io, 4))[0], True, "bytes")


def r_cbytes(io):
    return _prefixed(io, r_uvarint(io) - 1, False, "bytes")


def r_cnbytes(io):
    return _prefixed(io, r_uvarint(io) - 1, True, "bytes")


def _bytes(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return v
    raise TypeError(f"expected bytes, got {type(v).__name__}")


def w_bytes(v, io):
    v = _bytes(v)
    io.write(_I32.pack(len(v)))
    io.write(v)


def w_nbytes(v, io):
    if v is None:
        io.write(b"\xff\xff\xff\xff")
    else:
        w_bytes(v, io)


def w_cbytes(v, io):
    v = _bytes(v)
    w_uvarint(len(v) + 1, io)
    io.write(v)


def w_cnbytes(v, io):
    if v is None:
        io.write(b"\x00")
    else:
        w_cbytes(v, io)


def r_array_len(io, compact, nullable):
    if compact:
        n = r_uvarint(io) - 1
    else:
        n = _I32.unpack(r_exact(io, 4))[0]
    if n < 0:
        if n == -1 and nullable:
            return -1
        raise ValueError(f"invalid array length {n}" + ("" if nullable else " in a non-nullable array"))
    # Every element takes at least one byte, so a length beyond what is left is
    # a lie; refusing it here bounds the loop and every allocation behind it.
    if n > _remaining(io):
        raise _Short(f"array length {n} exceeds the {_remaining(io)} bytes left")
    return n


def w_array_len(v, io, compact, nullable):
    if v is None:
        if not nullable:
            raise ValueError("None in a non-nullable array")
        io.write(b"\x00" if compact else b"\xff\xff\xff\xff")
        return False
    if compact:
        w_uvarint(len(v) + 1, io)
    else:
        io.write(_I32.pack(len(v)))
    return True


def r_tag_header(io):
    tag = r_uvarint(io)
    size = r_uvarint(io)
    _len_in(io, size, "tagged field")
    return tag, r_exact(io, size)


def build_to_bytes(fn, v):
    out = BytesIO()
    fn(v, out)
    return out.getvalue()


def write_tags(tags, io):
    tags.sort(key=lambda t: t[0])
    w_uvarint(len(tags), io)
    for tag, data in tags:
        w_uvarint(tag, io)
        w_uvarint(len(data), io)
        io.write(data)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, struct.error):
        return f"truncated or out-of-range fixed-size value ({exc})"
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid UTF-8 ({exc.reason} at string byte {exc.start})"
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------
# construct classes
# --------------------------------------------------------------------------
class KType(Construct):
    """Base of all Kafka types. Subclasses name their fast-path helpers."""

    reader: str = ""   # name of a module-level helper `f(io) -> value`
    writer: str = ""   # name of a module-level helper `f(value, io)`
    default: object = None

    def _import(self, code, *names):
        code.append("from wire.types import " + ", ".join(names))

    # Functions of io only, so arrays and tagged fields can call them.
    def emit_reader(self, code) -> str:
        self._import(code, self.reader)
        return self.reader

    def emit_writer(self, code) -> str:
        self._import(code, self.writer)
        return self.writer

    def _emitparse(self, code):
        return f"{self.emit_reader(code)}(io)"

    def _emitbuild(self, code):
        return f"{self.emit_writer(code)}(obj, io)"

    # Interpreted path: the same helpers, failures pinned to path and offset.
    def _parse(self, stream, context, path):
        offset = stream.tell()
        try:
            return globals()[self.reader](stream)
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError(_describe(exc), path, offset) from None

    def _build(self, obj, stream, context, path):
        try:
            globals()[self.writer](obj, stream)
        except EncodeError:
            raise
        except Exception as exc:
            raise EncodeError(_describe(exc), path) from None
        return obj

    def make_default(self):
        return self.default


class Int(KType):
    _FORMATS = {"int8": _I8, "int16": _I16, "uint16": _U16, "int32": _I32,
                "uint32": _U32, "int64": _I64, "float64": _F64}

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self.st = self._FORMATS[kind]
        self.default = 0.0 if kind == "float64" else 0
        self.reader = f"r_{kind}"
        self.writer = f"w_{kind}"

    # Inline struct calls: one helper call fewer per field on the hot path.
    def _emitparse(self, code):
        code.append(f"from wire.types import _{self._st_name()} as _{self._st_name()}_s")
        code.append(f"_{self._st_name()}_unpack = _{self._st_name()}_s.unpack")
        # A short read fails the unpack (struct.error): the slow path then says what was short.
        return f"_{self._st_name()}_unpack(io.read({self.st.size}))[0]"

    def _emitbuild(self, code):
        code.append(f"from wire.types import _{self._st_name()} as _{self._st_name()}_s")
        code.append(f"_{self._st_name()}_pack = _{self._st_name()}_s.pack")
        return f"io.write(_{self._st_name()}_pack(obj))"

    def _st_name(self):
        return {"int8": "I8", "int16": "I16", "uint16": "U16", "int32": "I32",
                "uint32": "U32", "int64": "I64", "float64": "F64"}[self.kind]


def _make_int_helpers():
    for kind, st in Int._FORMATS.items():
        size, unpack, pack = st.size, st.unpack, st.pack

        def reader(io, _size=size, _unpack=unpack):
            return _unpack(r_exact(io, _size))[0]

        def writer(v, io, _pack=pack, _kind=kind):
            if _kind == "float64":
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise TypeError(f"expected float, got {type(v).__name__}")
            elif not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"expected int, got {type(v).__name__}")
            io.write(_pack(v))

        globals()[f"r_{kind}"] = reader
        globals()[f"w_{kind}"] = writer


_make_int_helpers()


class Bool(KType):
    reader, writer, default = "r_bool", "w_bool", False


class Uuid(KType):
    reader, writer, default = "r_uuid", "w_uuid", ZERO_UUID


class String(KType):
    def __init__(self, compact: bool, nullable: bool, default=""):
        super().__init__()
        self.reader = "r_" + ("c" if compact else "") + ("n" if nullable else "") + "string"
        self.writer = "w_" + ("c" if compact else "") + ("n" if nullable else "") + "string"
        self.default = default


class Bytes(KType):
    def __init__(self, compact: bool, nullable: bool, default=b""):
        super().__init__()
        self.reader = "r_" + ("c" if compact else "") + ("n" if nullable else "") + "bytes"
        self.writer = "w_" + ("c" if compact else "") + ("n" if nullable else "") + "bytes"
        self.default = default


class Array(KType):
    """Kafka arrays: int32 or compact (uvarint N+1) length, optionally nullable."""

    def __init__(self, element: KType, compact: bool, nullable: bool, default_null: bool = False):
        super().__init__()
        self.element = element
        self.compact = compact
        self.nullable = nullable
        self.default_null = default_null

    def make_default(self):
        return None if self.default_null else []

    def emit_reader(self, code):
        name = f"read_array_{code.allocateId()}"
        elem = self.element.emit_reader(code)
        self._import(code, "r_array_len")
        code.append(
            f"def {name}(io):\n"
            f"    n = r_array_len(io, {self.compact}, {self.nullable})\n"
            f"    if n < 0:\n"
            f"        return None\n"
            f"    return [{elem}(io) for _ in range(n)]\n"
        )
        return name

    def emit_writer(self, code):
        name = f"write_array_{code.allocateId()}"
        elem = self.element.emit_writer(code)
        self._import(code, "w_array_len")
        code.append(
            f"def {name}(v, io):\n"
            f"    if w_array_len(v, io, {self.compact}, {self.nullable}):\n"
            f"        for e in v:\n"
            f"            {elem}(e, io)\n"
        )
        return name

    def _parse(self, stream, context, path):
        offset = stream.tell()
        try:
            n = r_array_len(stream, self.compact, self.nullable)
        except Exception as exc:
            raise DecodeError(_describe(exc), path, offset) from None
        if n < 0:
            return None
        return [self.element._parse(stream, context, f"{path}[{i}]") for i in range(n)]

    def _build(self, obj, stream, context, path):
        try:
            present = w_array_len(obj, stream, self.compact, self.nullable)
        except Exception as exc:
            raise EncodeError(_describe(exc), path) from None
        if present:
            for i, e in enumerate(obj):
                self.element._build(e, stream, context, f"{path}[{i}]")
        return obj


def _runs(fields):
    """The fields in order, grouped: each run of consecutive fixed-size integers together,
    every other field alone."""
    runs: list[list] = []
    for f in fields:
        if type(f[1]) is Int and runs and len(runs[-1]) and type(runs[-1][-1][1]) is Int:
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


def _emit_run_struct(code, run, method: str) -> tuple[str, int]:
    fmt = ">" + "".join(t.st.format.lstrip(">") for _, t in run)
    name = f"_run_{method}_{code.allocateId()}"
    code.append(f"import struct as _struct\n{name} = _struct.Struct({fmt!r}).{method}\n")
    return name, struct.calcsize(fmt)


class Struct(KType):
    """A Kafka struct: fields in order, then (flexible versions) tagged fields.

    `fields` is a list of (name, KType); `tagged` a list of (tag, name, KType).
    Unknown tags survive a decode/encode round trip under `_unknown_tags`.
    """

    def __init__(self, name: str, fields, tagged=None, nullable: bool = False):
        super().__init__()
        self.struct_name = name
        self.fields = list(fields)
        self.tagged = sorted(tagged, key=lambda t: t[0]) if tagged is not None else None
        self.nullable = nullable  # a nullable struct field carries an int8 marker

    def make_default(self):
        return None if self.nullable else self._default_value()

    def _default_value(self):
        m = Message()
        for name, t in self.fields:
            m[name] = t.make_default()
        for _, name, t in self.tagged or ():
            m[name] = t.make_default()
        return m

    # ---- compiled ----
    def emit_reader(self, code):
        fid = code.allocateId()
        name = f"read_{self.struct_name}_{fid}"
        self._import(code, "Message", "r_exact", "r_uvarint", "r_tag_header", "BytesIO")
        lines = [f"def {name}(io):"]
        if self.nullable:
            lines += ["    if r_exact(io, 1) == b'\\xff':", "        return None"]
        lines.append("    r = Message()")
        for run in _runs(self.fields):
            if len(run) > 1:
                # Consecutive fixed-size integers: one struct read for all of them.
                unpack, size = _emit_run_struct(code, run, "unpack")
                names = [f"_v{k}" for k in range(len(run))]
                lines.append(f"    {', '.join(names)}, = {unpack}(io.read({size}))")
                lines += [f"    r[{fname!r}] = {v}" for (fname, _), v in zip(run, names)]
            else:
                fname, t = run[0]
                lines.append(f"    r[{fname!r}] = {t._emitparse(code)}")
        if self.tagged is not None:
            defaults = []
            for tag, fname, t in self.tagged:
                dname = self._emit_default(code, t, f"{name}_default_{tag}")
                defaults.append(f"    r[{fname!r}] = {dname}")
            lines += defaults
            # Almost every struct has no tagged field: its single zero count byte is checked
            # inline; anything else is read back as a varint count.
            lines.append("    _t = io.read(1)")
            lines.append("    if _t != b'\\x00':")
            lines.append("      io.seek(-len(_t), 1)")
            lines.append("      for _ in range(r_uvarint(io)):")
            lines.append("        tag, data = r_tag_header(io)")
            first = True
            for tag, fname, t in self.tagged:
                reader = t.emit_reader(code)
                kw = "if" if first else "elif"
                first = False
                lines.append(f"        {kw} tag == {tag}:")
                lines.append(f"            r[{fname!r}] = {reader}(BytesIO(data))")
            if first:
                lines.append("        r.setdefault('_unknown_tags', {})[tag] = data")
            else:
                lines.append("        else:")
                lines.append("            r.setdefault('_unknown_tags', {})[tag] = data")
        lines.append("    return r")
        code.append("\n".join(lines) + "\n")
        return name

    @staticmethod
    def _emit_default(code, t, dname):
        # Mutable defaults are produced fresh for every decoded message.
        default = t.make_default()
        if default is None or isinstance(default, (int, float, str, bytes, bool)):
            return repr(default)
        code.linkedinstances[dname] = t
        code.append(f"def {dname}_make():\n    return linkedinstances[{dname!r}].make_default()\n")
        return f"{dname}_make()"

    def emit_writer(self, code):
        fid = code.allocateId()
        name = f"write_{self.struct_name}_{fid}"
        self._import(code, "write_tags", "build_to_bytes", "MISSING")
        lines = [f"def {name}(v, io):"]
        if self.nullable:
            lines += ["    if v is None:", "        io.write(b'\\xff')", "        return",
                      "    io.write(b'\\x01')"]
        lines.append("    g = v.get")
        for run in _runs(self.fields):
            for k, (fname, t) in enumerate(run):
                dname = self._emit_default(code, t, f"{name}_default_{fname}")
                lines.append(f"    obj = g({fname!r}, MISSING)")
                lines.append(f"    if obj is MISSING: obj = {dname}")
                if len(run) > 1:
                    lines.append(f"    _v{k} = obj")
                else:
                    lines.append(f"    {t._emitbuild(code)}")
            if len(run) > 1:
                pack, _ = _emit_run_struct(code, run, "pack")
                lines.append(f"    io.write({pack}({', '.join(f'_v{k}' for k in range(len(run)))}))")
        if self.tagged is not None:
            lines.append("    tags = []")
            for tag, fname, t in self.tagged:
                dname = self._emit_default(code, t, f"{name}_default_{tag}")
                writer = t.emit_writer(code)
                lines.append(f"    obj = g({fname!r}, MISSING)")
                lines.append(f"    if obj is not MISSING and obj != {dname}:")
                lines.append(f"        tags.append(({tag}, build_to_bytes({writer}, obj)))")
            lines.append("    unknown = g('_unknown_tags')")
            lines.append("    if unknown:")
            lines.append("        tags.extend(unknown.items())")
            # Most structs carry no tagged field: their count, zero, is one byte.
            lines.append("    if tags:")
            lines.append("        write_tags(tags, io)")
            lines.append("    else:")
            lines.append("        io.write(b'\\x00')")
        code.append("\n".join(lines) + "\n")
        return name

    # ---- interpreted ----
    def _parse(self, stream, context, path):
        if self.nullable:
            offset = stream.tell()
            marker = stream.read(1)
            if not marker:
                raise DecodeError("needed a nullable-struct marker, none left", path, offset)
            if marker == b"\xff":
                return None
        r = Message()
        for fname, t in self.fields:
            r[fname] = t._parse(stream, context, f"{path}.{fname}")
        if self.tagged is not None:
            by_tag = {tag: (fname, t) for tag, fname, t in self.tagged}
            for _, fname, t in self.tagged:
                r[fname] = t.make_default()
            offset = stream.tell()
            try:
                count = r_uvarint(stream)
            except Exception as exc:
                raise DecodeError(_describe(exc), f"{path}.<tagged fields count>", offset) from None
            for _ in range(count):
                offset = stream.tell()
                try:
                    tag, data = r_tag_header(stream)
                except Exception as exc:
                    raise DecodeError(_describe(exc), f"{path}.<tagged field>", offset) from None
                if tag in by_tag:
                    fname, t = by_tag[tag]
                    sub = BytesIO(data)
                    try:
                        r[fname] = t._parse(sub, context, f"{path}.{fname}")
                    except DecodeError as err:
                        raise DecodeError(err.reason, err.field, offset) from None
                else:
                    r.setdefault("_unknown_tags", {})[tag] = data
        return r

    def _build(self, obj, stream, context, path):
        if self.nullable:
            if obj is None:
                stream.write(b"\xff")
                return obj
            stream.write(b"\x01")
        if not hasattr(obj, "get"):
            raise EncodeError(f"expected a mapping, got {type(obj).__name__}", path)
        for fname, t in self.fields:
            v = obj.get(fname, MISSING)
            t._build(t.make_default() if v is MISSING else v, stream, context, f"{path}.{fname}")
        if self.tagged is not None:
            tags = []
            for tag, fname, t in self.tagged:
                v = obj.get(fname, MISSING)
                if v is not MISSING and v != t.make_default():
                    sub = BytesIO()
                    t._build(v, sub, context, f"{path}.{fname}")
                    tags.append((tag, sub.getvalue()))
            tags.extend((obj.get("_unknown_tags") or {}).items())
            write_tags(tags, stream)
        return obj
