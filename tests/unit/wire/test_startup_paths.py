"""The shortcuts that keep a server's start-up short give what the long ways give: the
CRC-32C extension loaded without its package's `__init__`, the specs read one by one, and
metrics counted without prometheus_client until the first scrape."""
import subprocess
import sys

import crc32c as package
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire import specs
from wire.crc import crc32c


@given(st.binary(max_size=3000))
@settings(max_examples=200, deadline=None)
def test_the_directly_loaded_crc_is_the_packages(data):
    assert crc32c(data) == package.crc32c(data)
    assert crc32c(bytearray(data)) == crc32c(memoryview(data)) == package.crc32c(data)


def test_crc_check_value():
    assert crc32c(b"123456789") == 0xE3069283   # CRC-32C's published check value


def test_every_spec_read_alone_is_the_one_all_specs_reads():
    every = specs.all_specs()
    for name, spec in every.items():
        specs.spec_named.cache_clear()
        assert specs.spec_named(name) == spec, name
    with pytest.raises(KeyError):
        specs.spec_named("NoSuchRequest")


def test_every_api_resolves_by_the_file_heads_as_by_parsing_all():
    expected = {}
    for spec in specs.all_specs().values():
        if spec.api_key is not None and spec.kind in ("request", "response"):
            expected.setdefault((spec.api_key, spec.kind), spec)
    assert {k: v for k, v in specs._names_by_api().items() if k[1] in ("request", "response")} == \
        {k: v.name for k, v in expected.items()}
    for (key, kind), spec in expected.items():
        specs.spec_for.cache_clear()
        assert specs.spec_for(key, kind) == spec
    with pytest.raises(KeyError):
        specs.spec_for(9999, "request")


def test_a_server_module_set_leaves_out_the_slow_imports():
    """What `kcoord serve` imports before it listens and answers its first requests: none of
    importlib.metadata, prometheus_client (until /metrics is scraped) or the whole spec set."""
    code = ("import sys\nimport kcoord.cli.main, kcoord.app\nfrom wire import codec, specs\n"
            "for key in (18, 10, 11, 14, 12, 8):\n"
            "    codec.message(key, 4, 'request'); codec.message(key, 4, 'response')\n"
            "print(sorted(m for m in ('importlib.metadata', 'prometheus_client') if m in sys.modules),"
            " specs.all_specs.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] 0"
