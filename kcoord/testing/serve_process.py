"""`kcoord serve` as a process of its own, for the tests that kill it (-9 included) and start it
again on the same port and data dir: what survives is what its --data-dir kept.

    proc = serve(data_dir, port, extra=("--config", "k=v"))   # returns once it listens
    kill(proc)                                                 # kill -9, and reaped
    stop_server(proc, signal.SIGTERM, log_path)                # a signal, and its end awaited
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def serve(data_dir, port, http_port=None, extra=(), log=None, max_file_bytes=None) -> subprocess.Popen:
    """`kcoord serve --data-dir data_dir` on 127.0.0.1:`port`, once it says it listens. Its stderr
    goes to `log` (a file, or DEVNULL) or is kept for the failure of a start that did not come up;
    `max_file_bytes` limits what it may write to one file (a full disk, as the kernel reports it)."""
    args = [sys.executable, "-m", "kcoord", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir),
            "--initial-rebalance-delay-ms", "0", *extra]
    if http_port:
        args += ["--http", f"127.0.0.1:{http_port}"]

    def limit_file_size():
        # Writes past the limit fail with EFBIG (Python ignores SIGXFSZ, so the server gets the OSError).
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE if log is None else log,
                            text=True, cwd=ROOT, preexec_fn=limit_file_size if max_file_bytes else None,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline()
    if not line.startswith("kcoord listening"):
        proc.kill()
        raise AssertionError(f"kcoord serve did not start: {line!r} "
                             f"{proc.communicate(timeout=10)[1] if log is None else ''}")
    return proc


def kill(proc: subprocess.Popen) -> None:
    """kill -9: nothing of the server's own runs after it; reaped before this returns."""
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def stop_server(proc, sig, log_path, timeout: float = 30.0) -> None:
    """Send `sig` to a `kcoord serve` process and wait for it to end; one that does not end in
    `timeout` is asked for its threads' stacks (SIGUSR1: kcoord serve registers faulthandler)
    and killed, and the failure shows where it was waiting, from its log."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
        return
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        proc.wait(10)
    tail = Path(log_path).read_text(errors="replace")[-6000:]
    raise AssertionError(f"kcoord did not end within {timeout}s of signal {sig}; its log ends:\n{tail}")
