"""A change to a config resource Kafka's controller has no config schema for (client-metrics
subscriptions, groups), checked and applied as Kafka 4.3.1 does it.

Kafka's broker refuses a config named twice and a missing value before it forwards the change
(ConfigAdminManager.preprocess, so before authorization); its controller applies the operations
to the resource's configs (ConfigurationControlManager), refusing APPEND and SUBTRACT, since
without a schema no config counts as a list, and values longer than it stores. The resource's
own validation (names, values) comes after, in its module.
"""
from __future__ import annotations

import re
from typing import Iterable

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATIONS = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
# Kafka's controller refuses to store a longer config value (Short.MAX_VALUE).
MAX_VALUE_CHARS = 32767


class ConfigChangeError(Exception):
    """A change Kafka refuses: `code_name` is the ErrorCode member, the text Kafka's message."""

    def __init__(self, code_name: str, message: str):
        super().__init__(message)
        self.code_name = code_name


def check_request(ops: Iterable[tuple[str, int, str | None]]) -> None:
    """What Kafka's broker refuses before it forwards a change to its controller, whatever the
    resource, and so before authorization: a config named twice, a value missing."""
    ops = list(ops)
    names = [n for n, _, _ in ops]
    if len(set(names)) != len(names):
        raise ConfigChangeError("INVALID_REQUEST", "Error due to duplicate config keys")
    missing = [n for n, op, value in ops if op != DELETE and value is None]
    if missing:
        raise ConfigChangeError("INVALID_REQUEST", f"Null value not supported for : {', '.join(missing)}")


def replacing(current: dict[str, str], pairs: Iterable[tuple[str, str | None]]) -> list[tuple[str, int, str | None]]:
    """AlterConfigs' change as operations: the configs given are set, the others deleted."""
    pairs = list(pairs)
    given = {n for n, _ in pairs}
    return [(n, SET, v) for n, v in pairs] + [(n, DELETE, None) for n in current if n not in given]


def applied(configs: dict[str, str], ops: list[tuple[str, int, str | None]]) -> dict[str, str]:
    """`configs` after SET and DELETE `ops` (check_request passed), as Kafka's controller applies
    them to a resource without a schema; `configs` itself is left as it was."""
    configs = dict(configs)
    for key, op, value in ops:
        if op in (APPEND, SUBTRACT):
            raise ConfigChangeError("INVALID_CONFIG",
                                    f"Can't {_OPERATIONS[op]} to key {key} because its type is not LIST.")
        if op == DELETE:
            configs.pop(key, None)
        elif op != SET:
            raise ConfigChangeError("INVALID_REQUEST", f"Unknown operation {op} for {key}")
        elif len(value) > MAX_VALUE_CHARS:
            raise ConfigChangeError("INVALID_CONFIG", "The configuration value cannot be added because it "
                                                      f"exceeds the maximum value size of {MAX_VALUE_CHARS} bytes.")
        else:
            configs[key] = value
    return configs


# How Kafka's ConfigDef reads a value, for the resources' own validation.
JAVA_WHITESPACE = "".join(chr(c) for c in range(33))   # what Java's String.trim() removes
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def java_int(text: str) -> int | None:
    """ConfigDef's INT: Integer.parseInt of the trimmed text; None where Kafka says "Not a number
    of type INT"."""
    trimmed = text.strip(JAVA_WHITESPACE)
    if not _JAVA_INT.fullmatch(trimmed) or not -2**31 <= int(trimmed) < 2**31:
        return None
    return int(trimmed)
