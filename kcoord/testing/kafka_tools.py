"""Apache Kafka's own command-line tools, run against any bootstrap.

    code, out, err = run_tool("consumer-groups", bootstrap, "--describe", "--group", "g")
    normalise(out)     # the same text on kcoord and on Kafka, when they agree

    with ToolSession() as tools:          # one JVM for many commands
        tools.run("topics", bootstrap, "--list")

    python -m kcoord.testing.kafka_tools consumer-groups HOST:PORT --list

The tools are the classes of the reference Kafka's jars (kcoord.testing.reference_kafka,
fetched by `make install-test`), started directly with `java -cp`, not through Kafka's
shell scripts, which a jar download does not have. Missing Java or jars raise
ReferenceKafkaUnavailable with one line saying what to install.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import re
import select
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kcoord.testing import jvm
from kcoord.testing.reference_kafka import ReferenceKafkaUnavailable, cache_dir

# Short names as in Kafka's bin/kafka-<name>.sh.
TOOLS = {
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "topics": "org.apache.kafka.tools.TopicCommand",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "acls": "org.apache.kafka.tools.AclCommand",
    "configs": "kafka.admin.ConfigCommand",
    "features": "org.apache.kafka.tools.FeatureCommand",
    "metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "transactions": "org.apache.kafka.tools.TransactionsCommand",
}
# Each run is a fresh short-lived JVM: the C1-only JIT, the serial GC and the CDS
# archive cut its start (~1 s of CPU) far more than a bigger heap would speed it up.
JVM_OPTS = jvm.lean_options(xmx="256m")
DEFAULT_TIMEOUT = 60.0
INSTALL_HINT = "run `make install-test` (it fetches Apache Kafka's jars with Maven)"

# Errors only, on stderr: the client's INFO lines would bury the tool's own output.
# `follow` sends them to whatever System.err is at the time, which in a ToolSession is
# the running command's.
LOG4J2 = """\
status = error
name = kcoord-kafka-tools
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.follow = true
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = ERROR
rootLogger.appenderRef.err.ref = err
"""


@dataclass
class ToolResult:
    code: int
    stdout: str
    stderr: str
    seconds: float

    def __iter__(self):  # code, out, err = run_tool(...)
        return iter((self.code, self.stdout, self.stderr))


def classpath(version: str | None = None) -> str:
    """The reference Kafka's jars, which must have been fetched already: a tool run never
    starts a Maven download on its own."""
    return jvm.fetched_jars(cache_dir(version), "kafka-tools-*.jar", "Kafka's tool", INSTALL_HINT,
                            ReferenceKafkaUnavailable)


_log_config: Path | None = None


def _log4j_config() -> Path:
    global _log_config
    if _log_config is None or not _log_config.exists():
        fd, name = tempfile.mkstemp(prefix="kcoord-tools-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write(LOG4J2)
        _log_config = Path(name)
        atexit.register(_log_config.unlink, missing_ok=True)
    return _log_config


def command(tool: str, bootstrap: str | None, *args: str, version: str | None = None) -> list[str]:
    """The java command line that runs `tool` (a short name or a class) with `args`;
    `--bootstrap-server` is added when `bootstrap` is given."""
    cls = TOOLS.get(tool, tool)
    if "." not in cls:
        raise ValueError(f"unknown tool {tool!r}: one of {', '.join(TOOLS)} or a class name")
    extra = ["--bootstrap-server", bootstrap] if bootstrap else []
    return jvm.command(cls, *extra, *args, classpath=classpath(version), options=tool_options(),
                       error=ReferenceKafkaUnavailable)


def tool_options() -> tuple[str, ...]:
    """The tools' JVM options, their log4j configuration (errors only, on stderr) among them."""
    return (*JVM_OPTS, jvm.log4j_option(_log4j_config()))


def run_tool(tool: str, bootstrap: str | None, *args: str, timeout: float = DEFAULT_TIMEOUT,
             input: str | None = None, version: str | None = None) -> ToolResult:
    """Run a Kafka tool to completion: (exit code, stdout, stderr), and its wall time.
    A run past `timeout` is killed and raises subprocess.TimeoutExpired."""
    cmd = command(tool, bootstrap, *args, version=version)
    began = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          input=input, stdin=None if input is not None else subprocess.DEVNULL)
    return ToolResult(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - began)


SOURCE = Path(__file__).with_name("kafka-tools") / "KcoordToolSession.java"
SESSION_CLASS = "KcoordToolSession"


def _build_session(version: str | None = None) -> Path:
    """KcoordToolSession compiled against the tool jars, once per source and version."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    return jvm.compile_once(cache_dir(version) / "tool-session" / digest, f"{SESSION_CLASS}.class", SOURCE,
                            classpath(version), f"{SOURCE.name} does not compile", ReferenceKafkaUnavailable)


class ToolSession:
    """Kafka tools run one after another in one JVM (KcoordToolSession.java): the same
    ToolResult as run_tool, without a JVM start per command. A command that overruns its
    timeout ends the session (the JVM is killed) and raises subprocess.TimeoutExpired."""

    def __init__(self, version: str | None = None):
        self.version = version
        self.proc: subprocess.Popen | None = None
        self._buf = b""
        self.stderr_log: Path | None = None

    def __enter__(self) -> "ToolSession":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> "ToolSession":
        build = _build_session(self.version)
        cmd = jvm.command(SESSION_CLASS, classpath=jvm.join_classpath(build, classpath(self.version)),
                          options=tool_options(), error=ReferenceKafkaUnavailable)
        fd, name = tempfile.mkstemp(prefix="kcoord-tools-", suffix=".log")
        self.stderr_log = Path(name)
        with os.fdopen(fd, "wb") as err:  # the session's own log lines, not a command's
            self.proc = jvm.spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        return self

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            jvm.kill(proc)
        if self.stderr_log is not None:
            self.stderr_log.unlink(missing_ok=True)

    def _fill(self, deadline: float, cmd: list[str], timeout: float) -> None:
        """One more chunk of the session's stdout into the buffer."""
        assert self.proc is not None
        fd = self.proc.stdout.fileno()
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            self.proc.kill()
            self.close()
            raise subprocess.TimeoutExpired(cmd, timeout)
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            log = self.stderr_log.read_text(errors="replace")[-2000:] if self.stderr_log else ""
            self.close()
            raise RuntimeError(f"the Kafka tool session ended unexpectedly: {log}")
        self._buf += chunk

    def _read(self, n: int, deadline: float, cmd: list[str], timeout: float) -> bytes:
        while len(self._buf) < n:
            self._fill(deadline, cmd, timeout)
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def _read_line(self, deadline: float, cmd: list[str], timeout: float) -> bytes:
        while b"\n" not in self._buf:
            self._fill(deadline, cmd, timeout)
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def run(self, tool: str, bootstrap: str | None, *args: str, timeout: float = DEFAULT_TIMEOUT) -> ToolResult:
        if self.proc is None:
            self.start()
        cmd = command(tool, bootstrap, *args, version=self.version)
        cls_and_args = cmd[cmd.index("-cp") + 2:]
        if any("\t" in a or "\n" in a for a in cls_and_args):
            raise ValueError("a tool argument in a session cannot hold a tab or a newline")
        began = time.monotonic()
        deadline = began + timeout
        self.proc.stdin.write(("\t".join(cls_and_args) + "\n").encode())
        self.proc.stdin.flush()
        header = self._read_line(deadline, cmd, timeout).decode()
        tag, code, out_len, err_len = header.split()
        if tag != "@@kcoord-tool":
            raise RuntimeError(f"the Kafka tool session wrote {header!r}")
        out = self._read(int(out_len), deadline, cmd, timeout)
        err = self._read(int(err_len), deadline, cmd, timeout)
        return ToolResult(int(code), out.decode(errors="replace"), err.decode(errors="replace"),
                          time.monotonic() - began)


# ---- normalising their output ----------------------------------------------------------

_RULES = [
    # member ids: the client id, a dash and a UUID (classic protocol) or a bare 22-char
    # base64 UUID (consumer protocol)
    (re.compile(r"\b([\w.-]*?)-?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<member>"),
    # client ids the Java client makes up: consumer-<group>-<n>, console-consumer-<n>, ...
    (re.compile(r"\b((?:consumer|producer|adminclient|console-consumer)-[\w.-]*?)-\d+\b"), r"\1-<n>"),
    (re.compile(r"/?\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<host>"),
    (re.compile(r"\blocalhost(?::\d+)?\b"), "<host>"),
    # topic ids: 22 characters of base64url
    (re.compile(r"(TopicId:\s*)[A-Za-z0-9_-]{22}"), r"\1<topic-id>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b1\d{12}\b"), "<ms>"),  # epoch milliseconds
]
# A Java stack trace's frames: they name the tool's code, not the broker's answer (and in
# a ToolSession end in its own frames).
_FRAME = re.compile(r"^\s*(?:at [\w$.<>/]+\(.*\)|\.\.\. \d+ more)\s*$")


def normalise(text: str) -> str:
    """`text` with what differs between any two runs replaced by placeholders; column
    padding is collapsed, since a longer host or id widens a column, and stack frames
    and blank lines go."""
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines() if not _FRAME.match(line)]
    return "\n".join(line for line in lines if line)


def table(text: str) -> list[dict[str, str]]:
    """The rows of a whitespace-aligned table the tools print (header line first), as
    dicts; blank lines and a group's banner lines are skipped, repeated headers too."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        if cells[0] == "GROUP" or (header is None and cells == [c.upper() for c in cells] and len(cells) > 1):
            header = cells
            continue
        if header is None or len(cells) != len(header):
            continue
        rows.append(dict(zip(header, cells)))
    return rows


def tab_table(text: str) -> list[dict[str, str]]:
    """The rows of a table whose cells end in a tab (kafka-transactions prints them so, padded
    with spaces), header line first, as dicts of the stripped cells; an empty cell stays ""."""
    lines = [line.removesuffix("\t").split("\t") for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [cell.strip() for cell in lines[0]]
    return [dict(zip(header, (cell.strip() for cell in line))) for line in lines[1:]]


def main() -> int:  # python -m kcoord.testing.kafka_tools TOOL BOOTSTRAP ARGS...
    import sys

    if len(sys.argv) < 3:
        print(f"usage: python -m kcoord.testing.kafka_tools {{{','.join(TOOLS)}}} BOOTSTRAP [ARGS...]",
              file=sys.stderr)
        return 2
    try:
        result = run_tool(sys.argv[1], sys.argv[2], *sys.argv[3:])
    except ReferenceKafkaUnavailable as err:
        print(f"kafka_tools: {err}", file=sys.stderr)
        return 1
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.code


if __name__ == "__main__":
    raise SystemExit(main())
