"""Jars fetched once with Maven into a cache directory (the reference Kafka, Spark's Kafka
connector): a pom kept in the tree, `mvn dependency:copy-dependencies`, one line on failure."""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path

MARKER = ".fetched"

_ANSI = re.compile(r"(\x1b)?\[[0-9;]*m")
_MVN_ERROR = re.compile(r"\[ERROR\]\s*(.*)")
_MVN_NOISE = ("To see the full stack trace", "Re-run Maven", "For more information", "[Help ")


def cache_root() -> Path:
    """Where fetched jars live: $KCOORD_KAFKA_CACHE, else ~/.cache/kcoord."""
    return Path(os.environ.get("KCOORD_KAFKA_CACHE") or Path.home() / ".cache" / "kcoord")


def require(tool: str, hint: str, error: type[Exception]) -> str:
    path = shutil.which(tool)
    if path is None:
        raise error(f"`{tool}` not found on PATH: {hint}")
    return path


def mvn_error(output: str) -> str:
    """The line of mvn's output that says what went wrong."""
    lines = [_ANSI.sub("", line).strip() for line in output.splitlines()]
    errors = [m.group(1).replace(" -> [Help 1]", "").strip() for m in map(_MVN_ERROR.search, lines) if m]
    errors = [e for e in errors if e and not e.startswith(_MVN_NOISE)]
    if errors:
        return errors[0]
    rest = [line for line in lines if line]
    return rest[-1] if rest else "no output"


def fetch(home: Path, subdir: str, pom: Path, properties: dict[str, str], expect: str, what: str,
          error: type[Exception]) -> Path:
    """`home/subdir` holding the runtime dependencies of `pom` (with `-Dkey=value` properties),
    fetched the first time; `expect` is a glob one of the jars must match. Another process
    fetching at the same time is waited for; an interrupted fetch never looks complete."""
    jars = home / subdir
    if (home / MARKER).exists() and jars.is_dir():
        return jars
    mvn = require("mvn", f"Maven fetches {what}: apt-get install maven", error)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / MARKER).exists() and jars.is_dir():
            return jars
        # Into a scratch directory, renamed into place; the marker is written last.
        partial = home / f"{subdir}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [mvn, "-q", "-B", "-Dstyle.color=never", *(f"-D{k}={v}" for k, v in properties.items()),
               "dependency:copy-dependencies", f"-DoutputDirectory={partial}", "-DincludeScope=runtime",
               "-f", str(pom)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=home)
        except subprocess.TimeoutExpired:
            shutil.rmtree(partial, ignore_errors=True)
            raise error(f"mvn did not fetch {what} within 15 minutes: check access to Maven Central") from None
        if proc.returncode != 0 or not any(partial.glob(expect)):
            shutil.rmtree(partial, ignore_errors=True)
            raise error(f"mvn could not fetch {what} ({pom}): {mvn_error(proc.stdout + proc.stderr)}")
        shutil.rmtree(jars, ignore_errors=True)
        partial.rename(jars)
        (home / MARKER).write_text(f"{what}\n")
    return jars
