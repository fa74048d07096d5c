"""Locate Kafka's Java client, compile the test driver once, run it.

The kafka-clients 3.9.1 jar comes from the PyPI package
`shigawire-apache-flink-libraries` (in kcoord's test extras), next to lz4,
snappy, zstd and slf4j-api; Java 17 comes from the machine.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).with_name("java") / "KcoordJavaClient.java"
_JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")


class JavaClientUnavailable(RuntimeError):
    pass


def _lib_dir() -> Path:
    try:
        import pyflink  # shipped by shigawire-apache-flink-libraries
    except ImportError:
        raise JavaClientUnavailable(
            "Kafka's Java client jar is missing: `make test` installs it; by hand: "
            "`.venv/bin/pip install shigawire-apache-flink-libraries`") from None
    lib = Path(list(pyflink.__path__)[0]) / "lib"
    missing = [j for j in _JARS if not (lib / j).exists()]
    if missing:
        raise JavaClientUnavailable(f"{lib} lacks {missing}: reinstall shigawire-apache-flink-libraries")
    return lib


def classpath() -> str:
    lib = _lib_dir()
    return ":".join(str(lib / j) for j in _JARS)


def build_dir() -> Path:
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise JavaClientUnavailable(f"`{tool}` not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = Path(sys.prefix) / "java-build" / digest
    if not (out / "KcoordJavaClient.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-cp", classpath(), "-d", str(out), str(SOURCE)], check=True)
    return out


def command(action: str, *args: str) -> list[str]:
    return ["java", "-cp", f"{build_dir()}:{classpath()}", "KcoordJavaClient", action, *args]


def run(action: str, *args: str, timeout: float = 120) -> list[dict]:
    """Run one action to completion; returns its JSON events."""
    proc = subprocess.run(command(action, *args), capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"java client {action} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def start(action: str, *args: str) -> subprocess.Popen:
    """Start an action in the background (stdout: JSON lines)."""
    return subprocess.Popen(command(action, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def login_command(bootstrap: str, topic: str, group: str, max_seconds: int, properties: dict) -> list[str]:
    """KcoordJavaLogin: a consumer with the given client properties (security settings) joins a group."""
    source = SOURCE.with_name("KcoordJavaLogin.java")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = Path(sys.prefix) / "java-build" / f"login-{digest}"
    if not (out / "KcoordJavaLogin.class").exists():
        build_dir()  # checks the JDK
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-cp", classpath(), "-d", str(out), str(source)], check=True)
    return ["java", "-cp", f"{out}:{classpath()}", "KcoordJavaLogin", bootstrap, topic, group, str(max_seconds),
            *(f"{k}={v}" for k, v in properties.items())]


def login(bootstrap: str, topic: str, group: str, properties: dict, max_seconds: int = 60) -> list[dict]:
    proc = subprocess.run(login_command(bootstrap, topic, group, max_seconds, properties), capture_output=True,
                          text=True, timeout=max_seconds + 60)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not events:
        raise RuntimeError(f"java login printed nothing ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return events
