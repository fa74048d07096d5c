"""Kafka's JSON message specs, loaded into a small typed model.

The specs themselves are Apache Kafka's own (`clients/src/main/resources/
common/message/*.json`). kafka-python ships them inside its package, so we read
them from there instead of keeping a copy; `wire/specs/` holds structural specs
for the few APIs kafka-python does not ship (KIP-848's consumer groups, KIP-1071's
streams groups, KIP-932's share groups; written from Kafka's definitions, fields and versions only).

Everything in `wire` that knows a message's layout derives it from this model:
no per-version structs are written by hand.
"""
from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator

_EXTRA_SPEC_DIR = Path(__file__).with_name("specs")


def _kafka_python_spec_dir() -> Path:
    # Located without importing kafka-python: we only want its data files.
    found = importlib.util.find_spec("kafka")
    if found is None or not found.submodule_search_locations:
        raise SpecError("kafka-python is not installed; `pip install kafka-python==3.0.12` (a kcoord dependency)")
    root = Path(list(found.submodule_search_locations)[0])
    return root / "protocol" / "schemas" / "resources"


class SpecError(ValueError):
    """A message spec that cannot be understood (a bug, never user input)."""


@dataclass(frozen=True)
class Versions:
    """An inclusive version range as written in specs: "0+", "3-7", "5", "none"."""

    low: int
    high: int  # inclusive; a large number stands for "and every later version"

    NONE_HIGH = -1
    OPEN_HIGH = 0x7FFF

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none":
            return cls(0, cls.NONE_HIGH)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), cls.OPEN_HIGH)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.low, self.high + 1))

    @property
    def empty(self) -> bool:
        return self.high < self.low


PRIMITIVES = frozenset(
    ["bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
     "uuid", "string", "bytes", "records"]
)


def snake_case(name: str) -> str:
    """Kafka's CamelCase field names as Python identifiers (GroupInstanceId -> group_instance_id)."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


@dataclass
class FieldSpec:
    name: str                   # Kafka's name, e.g. "GroupInstanceId"
    attr: str                   # our name, e.g. "group_instance_id"
    type: str                   # "int32", "string", "[]int32", "[]Topic", "Assignment", ...
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    flexible_versions: Versions | None   # per-field override (request header ClientId)
    default: object             # raw spec default string/number, or None
    fields: list["FieldSpec"] | None     # inline struct fields (struct or array of struct)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES


@dataclass
class MessageSpec:
    name: str                   # e.g. "JoinGroupRequest"
    api_key: int | None
    kind: str                   # "request", "response", "header", "data"
    valid_versions: Versions
    flexible_versions: Versions
    fields: list[FieldSpec]
    common_structs: dict[str, list[FieldSpec]] = field(default_factory=dict)

    def struct_fields(self, f: FieldSpec) -> list[FieldSpec]:
        """The fields of a struct-typed field, inline or from commonStructs."""
        if f.fields is not None:
            return f.fields
        try:
            return self.common_structs[f.element_type]
        except KeyError:
            raise SpecError(f"{self.name}: struct type {f.element_type} not defined") from None


def _strip_comments(text: str) -> str:
    # Kafka's specs are JSON with whole-line // comments.
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def _field(raw: dict) -> FieldSpec:
    nested = raw.get("fields")
    tag = raw.get("tag")
    return FieldSpec(
        name=raw["name"],
        attr=snake_case(raw["name"]),
        type=raw["type"],
        versions=Versions.parse(raw.get("versions")),
        nullable_versions=Versions.parse(raw.get("nullableVersions")),
        tagged_versions=Versions.parse(raw.get("taggedVersions")),
        tag=None if tag is None else int(tag),
        flexible_versions=Versions.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None,
        default=raw.get("default"),
        fields=[_field(f) for f in nested] if nested is not None else None,
    )


def parse_spec(text: str) -> MessageSpec:
    raw = json.loads(_strip_comments(text))
    return MessageSpec(
        name=raw["name"],
        api_key=raw.get("apiKey"),
        kind=raw["type"],
        valid_versions=Versions.parse(raw.get("validVersions")),
        flexible_versions=Versions.parse(raw.get("flexibleVersions")),
        fields=[_field(f) for f in raw.get("fields", [])],
        common_structs={s["name"]: [_field(f) for f in s["fields"]] for s in raw.get("commonStructs", [])},
    )


@lru_cache(maxsize=None)
def all_specs() -> dict[str, MessageSpec]:
    """Every spec by name; our own specs only fill gaps kafka-python leaves."""
    specs: dict[str, MessageSpec] = {}
    for directory in (_EXTRA_SPEC_DIR, _kafka_python_spec_dir()):
        for path in sorted(directory.glob("*.json")):
            spec = parse_spec(path.read_text(encoding="utf-8"))
            specs.setdefault(spec.name, spec)
    return specs


@lru_cache(maxsize=None)
def spec_named(name: str) -> MessageSpec:
    """One spec by name (KeyError when there is none), read from its own file `<name>.json`:
    a server's first requests need a few of the ~130 specs, and reading them all is ~17 ms
    of its start-up. The same spec `all_specs` gives: ours first, then kafka-python's."""
    for directory in (_EXTRA_SPEC_DIR, _kafka_python_spec_dir()):
        path = directory / f"{name}.json"
        if path.is_file():
            spec = parse_spec(path.read_text(encoding="utf-8"))
            if spec.name == name:
                return spec
    return all_specs()[name]   # a spec whose file is named otherwise, or none


# A spec's top-level "apiKey", "type" and "name" come before its fields in every spec file.
_HEAD = re.compile(r'"(apiKey|type|name)"\s*:\s*("?)(\w+)\2')


@lru_cache(maxsize=None)
def _names_by_api() -> dict[tuple[int, str], str]:
    """(api key, "request" or "response") -> spec name, from each file's head alone (a few ms,
    where parsing every spec is ~17)."""
    names: dict[tuple[int, str], str] = {}
    for directory in (_EXTRA_SPEC_DIR, _kafka_python_spec_dir()):
        for path in sorted(directory.glob("*.json")):
            head: dict[str, str] = {}
            for m in _HEAD.finditer(_strip_comments(path.read_text(encoding="utf-8").split('"fields"', 1)[0])):
                head.setdefault(m.group(1), m.group(3))
            if "apiKey" in head and "type" in head and "name" in head:
                names.setdefault((int(head["apiKey"]), head["type"]), head["name"])
    return names


@lru_cache(maxsize=None)
def spec_for(api_key: int, kind: str) -> MessageSpec:
    name = _names_by_api().get((api_key, kind))
    if name is not None:
        spec = spec_named(name)
        if spec.api_key == api_key and spec.kind == kind:
            return spec
    for spec in all_specs().values():
        if spec.api_key == api_key and spec.kind == kind:
            return spec
    raise KeyError(f"no {kind} spec for api key {api_key}")


@lru_cache(maxsize=None)
def api_keys() -> dict[int, str]:
    """api key -> API name (e.g. 11 -> "JoinGroup")."""
    return {
        s.api_key: s.name[: -len("Request")]
        for s in all_specs().values()
        if s.kind == "request" and s.api_key is not None
    }
