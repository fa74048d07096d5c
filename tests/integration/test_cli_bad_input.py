"""Bad command lines, tried as a new user would: each ends in one line naming the flag and the
value, with exit code 2, and no traceback."""
from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    (["serve", "--listen", "127.0.0.1:99999"], ["--listen", "127.0.0.1:99999"]),
    (["serve", "--initial-rebalance-delay-ms", "-5"], ["--initial-rebalance-delay-ms", "-5"]),
    (["serve", "--faults", "{missing}"], ["--faults", "{missing}"]),
    (["serve", "--faults", "{garbled}"], ["--faults", "{garbled}"]),
    (["serve", "--tls-cert", "{missing}", "--tls-key", "{missing}"], ["--tls-cert", "{missing}"]),
    (["serve", "--sasl-users", "{missing}"], ["--sasl-users", "{missing}"]),
    (["serve", "--config-file", "{missing}"], ["--config-file", "{missing}"]),
    (["serve", "--config", "group.max.size=many"], ["group.max.size", "many"]),
    (["serve", "--journal-topic", "no/slash"], ["--journal-topic", "no/slash"]),
    (["check", "--bootstrap", "127.0.0.1:1", "--clients", "bogus"], ["--clients", "bogus"]),
    (["check", "--bootstrap", "127.0.0.1:1", "--scenarios", "no-such-scenario"], ["--scenarios", "no-such-scenario"]),
]


@pytest.mark.parametrize("argv,named", CASES, ids=[" ".join(c[0][:2]) + f" {i}" for i, c in enumerate(CASES)])
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, named):
    garbled = tmp_path / "rules.json"
    garbled.write_text('[{"api": ')
    paths = {"{missing}": str(tmp_path / "missing.file"), "{garbled}": str(garbled)}
    argv = [paths.get(a, a) for a in argv]
    named = [paths.get(a, a) for a in named]
    run = subprocess.run([sys.executable, "-m", "kcoord", *argv], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert "Traceback" not in run.stderr
    for word in named:
        assert word in last, (word, last)
