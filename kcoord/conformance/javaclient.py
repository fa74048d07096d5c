"""Locate Kafka's Java client, compile the test driver once per client version, run it.

Two versions of kafka-clients, one driver source compiled against each:

  3.9.1  (client name "java")  from the PyPI package `shigawire-apache-flink-libraries`
         (in kcoord's test extras), next to lz4, snappy, zstd and slf4j-api;
  4.3.1  (client name "java4") from the reference Kafka's Maven cache
         (kcoord.testing.reference_kafka, fetched by `make install-test`).

Java 17 comes from the machine.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from kcoord.testing import jvm

SOURCE = Path(__file__).with_name("java") / "KcoordJavaClient.java"
_JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")
DEFAULT_VERSION = "3.9.1"
# Client names (kcoord check --clients, the test matrices) -> kafka-clients version.
CLIENT_VERSIONS = {"java": DEFAULT_VERSION, "java4": "4.3.1"}
VERSIONS = tuple(CLIENT_VERSIONS.values())
# What the 4.x client needs from the reference Kafka's jars (the broker's stay out).
_JARS4 = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-")


class JavaClientUnavailable(jvm.JavaUnavailable):
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


def _lib_dir4(version: str) -> list[Path]:
    from kcoord.testing import reference_kafka

    try:
        libs = reference_kafka.fetch(version)
    except reference_kafka.ReferenceKafkaUnavailable as err:
        raise JavaClientUnavailable(f"Kafka's Java client {version}: {err}") from None
    jars = []
    for prefix in _JARS4:
        found = sorted(libs.glob(f"{prefix}[0-9]*.jar"))
        if not found:
            raise JavaClientUnavailable(f"{libs} lacks {prefix}*.jar: remove {libs.parent} and run "
                                        f"`python -m kcoord.testing.reference_kafka fetch`")
        jars.append(found[-1])
    return jars


def _check_version(version: str) -> None:
    if version not in VERSIONS:
        raise JavaClientUnavailable(f"no Kafka Java client {version!r} here; known: {', '.join(VERSIONS)}")


def classpath(version: str = DEFAULT_VERSION) -> str:
    _check_version(version)
    if version == DEFAULT_VERSION:
        lib = _lib_dir()
        return jvm.join_classpath(*(lib / j for j in _JARS))
    return jvm.join_classpath(*_lib_dir4(version))


def build_dir(version: str = DEFAULT_VERSION) -> Path:
    jvm.require_java(JavaClientUnavailable)
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    # One source, compiled against each client version (3.9.1 keeps its old directory name).
    out = Path(sys.prefix) / "java-build" / (digest if version == DEFAULT_VERSION else f"{digest}-{version}")
    compile_once(out, "KcoordJavaClient.class", SOURCE, classpath(version),
                 f"{SOURCE.name} does not compile against kafka-clients {version}")
    return out


def compile_once(out: Path, product: str, source: Path, cp: str, failure: str) -> None:
    """jvm.compile_once, failing with JavaClientUnavailable."""
    jvm.compile_once(out, product, source, cp, failure, JavaClientUnavailable)


# A driver process lives seconds to a minute, mostly starting up: the C1-only JIT and
# serial GC take ~30% less CPU to get a client connected than the JVM's defaults (which
# matters when a test starts 16 members on a 2-core machine), and leave what the client
# does on the wire unchanged.
JVM_OPTS = jvm.lean_options(headless=False)


def java_command(main: str, *args: str, classpath: str) -> list[str]:
    """`java` with the drivers' options running `main` (a driver or a Java judge of the tests)."""
    return jvm.command(main, *args, classpath=classpath, options=JVM_OPTS, error=JavaClientUnavailable)


def program_command(source: Path, label: str, cp: str, *args: str) -> list[str]:
    """`java` running the class `source` declares (a Java judge or helper of the tests), compiled
    once against `cp` into the venv's java-build/LABEL-DIGEST."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = Path(sys.prefix) / "java-build" / f"{label}-{digest}"
    compile_once(out, f"{source.stem}.class", source, cp, f"{source.name} does not compile")
    return java_command(source.stem, *args, classpath=jvm.join_classpath(out, cp))


def command(action: str, *args: str, version: str = DEFAULT_VERSION) -> list[str]:
    """The java command line of one driver action, on kafka-clients `version` (3.9.1 or 4.3.1)."""
    return java_command("KcoordJavaClient", action, *args,
                        classpath=jvm.join_classpath(build_dir(version), classpath(version)))


def command_for(client: str, action: str, *args: str) -> list[str]:
    """command() by client name: "java" (3.9.1) or "java4" (4.3.1)."""
    return command(action, *args, version=CLIENT_VERSIONS[client])


def run(action: str, *args: str, timeout: float = 120, version: str = DEFAULT_VERSION) -> list[dict]:
    """Run one action to completion; returns its JSON events."""
    proc = subprocess.run(command(action, *args, version=version), capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"java client {version} {action} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def start(action: str, *args: str, version: str = DEFAULT_VERSION) -> subprocess.Popen:
    """Start an action in the background (stdout: JSON lines)."""
    return jvm.spawn(command(action, *args, version=version), stdin=None, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
