"""Hypothesis strategies for any message layout, derived from its construct tree."""
from __future__ import annotations

from hypothesis import strategies as st

from wire.types import Array, Bool, Bytes, Int, Message, String, Struct, Uuid

_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


def _maybe_null(strategy, nullable):
    return st.one_of(st.none(), strategy) if nullable else strategy


def for_type(t):
    if isinstance(t, Int):
        if t.kind == "float64":
            return st.floats(allow_nan=False)
        lo, hi = _RANGES[t.kind]
        return st.integers(lo, hi)
    if isinstance(t, Bool):
        return st.booleans()
    if isinstance(t, Uuid):
        return st.uuids()
    if isinstance(t, String):
        return _maybe_null(_text, "n" in t.reader.split("_", 1)[1].replace("string", ""))
    if isinstance(t, Bytes):
        return _maybe_null(st.binary(max_size=24), "n" in t.reader.split("_", 1)[1].replace("bytes", ""))
    if isinstance(t, Array):
        return _maybe_null(st.lists(for_type(t.element), max_size=3), t.nullable)
    if isinstance(t, Struct):
        fields = {name: for_type(sub) for name, sub in t.fields}
        for _, name, sub in t.tagged or ():
            fields[name] = for_type(sub)
        return _maybe_null(st.fixed_dictionaries(fields).map(Message), t.nullable)
    raise TypeError(f"no strategy for {t!r}")
