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
    (["report", "--kafka", "127.0.0.1:1", "--topic", "j", "--out", "{out}"], ["--kafka", "127.0.0.1:1"]),
    (["report", "--kafka", "127.0.0.1", "--out", "{out}"], ["--kafka", "127.0.0.1", "--topic"]),
    (["report", "--follow", "--out", "{out}"], ["--follow", "--kafka"]),
    (["report", "{missing}", "--follow", "--kafka", "127.0.0.1:1", "--topic", "j", "--out", "{out}"],
     ["--follow", "{missing}"]),
    (["report", "{missing}", "--max-batches", "2", "--out", "{out}"], ["--max-batches", "2"]),
    (["report", "{missing}", "--out", "{out}"], ["{missing}"]),
    (["report", "--kafka", "127.0.0.1:x", "--topic", "j", "--out", "{out}"], ["--kafka", "127.0.0.1:x"]),
    (["check", "--bootstrap", "127.0.0.1:1", "--clients", "bogus"], ["--clients", "bogus"]),
    (["check", "--bootstrap", "127.0.0.1:1", "--scenarios", "no-such-scenario"], ["--scenarios", "no-such-scenario"]),
    (["broker", "stop", "x"], ["ID", "x"]),
    (["broker", "list", "--admin", "127.0.0.1:x"], ["--admin", "127.0.0.1:x"]),
    (["partition", "move", "orders", "one", "2"], ["PARTITION", "one"]),
    (["partition", "elect", "orders:x", "--bootstrap", "127.0.0.1:1"], ["orders:x"]),
    (["partition", "balance", "--bootstrap", "127.0.0.1:x"], ["--bootstrap", "127.0.0.1:x"]),
]


@pytest.mark.parametrize("argv,named", CASES, ids=[" ".join(c[0][:2]) + f" {i}" for i, c in enumerate(CASES)])
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, named):
    garbled = tmp_path / "rules.json"
    garbled.write_text('[{"api": ')
    paths = {"{missing}": str(tmp_path / "missing.file"), "{garbled}": str(garbled), "{out}": str(tmp_path / "out")}
    argv = [paths.get(a, a) for a in argv]
    named = [paths.get(a, a) for a in named]
    run = subprocess.run([sys.executable, "-m", "kcoord", *argv], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert "Traceback" not in run.stderr
    for word in named:
        assert word in last, (word, last)
    assert not (tmp_path / "out").exists()  # refused before anything was started or written


def test_report_on_a_topic_the_broker_lacks_is_one_line_and_exit_2(kcoord_server, tmp_path):
    run = subprocess.run([sys.executable, "-m", "kcoord", "report", "--kafka", kcoord_server.bootstrap,
                          "--topic", "no-such-journal", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"kcoord report: --topic no-such-journal: no such topic on --kafka {kcoord_server.bootstrap} "
        f"(kcoord serve --journal-topic no-such-journal creates it)"]
    # Looking did not create it (Metadata without auto-creation).
    assert kcoord_server.app.broker.topics.get("no-such-journal") is None
