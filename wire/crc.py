"""CRC-32C (Castagnoli), the checksum of Kafka's v2 record batches, from the `crc32c` package.

The package's `__init__` reads its own version through `importlib.metadata`, whose import
costs ~25 ms: a fifth of kcoord's whole start-up. Only its compiled `_crc32c` module does
the work, so that module is loaded directly; any other layout of the package falls back to
the plain import.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util


def _load_extension():
    spec = importlib.util.find_spec("crc32c")   # finds the package without running its __init__
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = f"{folder}/_crc32c{suffix}"
            loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
            ext = importlib.util.spec_from_file_location("crc32c._crc32c", path, loader=loader)
            try:
                module = importlib.util.module_from_spec(ext)
            except ImportError:   # no such file, or built for another interpreter
                continue
            loader.exec_module(module)
            return module.crc32c
    import crc32c as package

    return package.crc32c


crc32c = _load_extension()
