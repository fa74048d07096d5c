"""The one way kcoord's test bed starts a JVM: the reference Kafka, Kafka's tools, Connect
workers, the Java client drivers and the Java judges all go through here.

    cmd = command("kafka.Kafka", "server.properties", classpath=f"{libs}/*",
                  options=(*lean_options(xms="256m", xmx="1g"), log4j_option(home / "log4j2.properties")),
                  error=ReferenceKafkaUnavailable)            # [java, options..., -cp, cp, main, args...]
    proc = spawn(cmd, log=home / "stdout.log", cwd=home, own_group=True, die_with_parent=True)
    stop(proc, grace=15)                                      # SIGTERM, then SIGKILL after the grace

`java` missing raises the caller's error class (a JavaUnavailable) with one line saying
which JDK to install; jars missing from a cache raise it with how to fetch them.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from kcoord.testing import maven

JDK_HINT = "install a JDK 17: apt-get install openjdk-17-jdk-headless"
# Every JVM here is a test's helper: it starts often, lives seconds to minutes and holds
# little. The C1-only JIT, the serial GC and the CDS archive cut the CPU a start takes
# (~30% for a client driver, more for a broker), which counts when a test starts a
# dozen JVMs on two shared cores; what the process does on the wire is unchanged.
LEAN = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
HEADLESS = "-Djava.awt.headless=true"


class JavaUnavailable(RuntimeError):
    """A JVM cannot run here; the message says what to install or do. Each launcher raises
    its own subclass (ReferenceKafkaUnavailable, ConnectUnavailable, ...)."""


def lean_options(xms: str | None = None, xmx: str | None = None, headless: bool = True) -> tuple[str, ...]:
    """The lean option set, with a heap's bounds when given (e.g. xmx="256m")."""
    heap = ((f"-Xms{xms}",) if xms else ()) + ((f"-Xmx{xmx}",) if xmx else ())
    return (*heap, *LEAN, *((HEADLESS,) if headless else ()))


def log4j_option(config: Path | str) -> str:
    return f"-Dlog4j2.configurationFile={config}"


def require_java(error: type[Exception] = JavaUnavailable) -> str:
    """The path of `java`, or `error` saying which JDK to install."""
    return maven.require("java", JDK_HINT, error)


def require_javac(error: type[Exception] = JavaUnavailable) -> str:
    return maven.require("javac", JDK_HINT, error)


def join_classpath(*entries) -> str:
    return os.pathsep.join(str(e) for e in entries)


def fetch_jars(home: Path, subdir: str, pom: Path, properties: dict[str, str], expect: str, what: str,
               error: type[Exception] = JavaUnavailable) -> Path:
    """maven.fetch for jars a JVM will run: Java is required first, while a fetch is still due
    (a fetched cache is used as it is, offline)."""
    if not ((home / maven.MARKER).exists() and (home / subdir).is_dir()):
        require_java(error)
    return maven.fetch(home, subdir, pom, properties, expect, what, error)


def fetched_jars(home: Path, expect: str, what: str, hint: str, error: type[Exception] = JavaUnavailable) -> str:
    """`home/libs/*` as a classpath, when a fetch has completed there (kcoord.testing.maven)
    and left a jar matching `expect`; otherwise `error`: "{what} jars are not in ...: {hint}".
    A launcher never starts a Maven download on its own."""
    libs = home / "libs"
    if not (home / maven.MARKER).exists() or not any(libs.glob(expect)):
        raise error(f"{what} jars are not in {libs}: {hint}")
    return f"{libs}/*"


def command(main: str, *args: str, classpath: str, options: tuple[str, ...] = lean_options(),
            error: type[Exception] = JavaUnavailable) -> list[str]:
    """`java OPTIONS -cp CLASSPATH MAIN ARGS`, with `java` found on PATH (or `error`)."""
    return [require_java(error), *options, "-cp", classpath, main, *args]


def compile_once(out: Path, product: str, source: Path, classpath: str, failure: str,
                 error: type[Exception] = JavaUnavailable) -> Path:
    """javac `source` into `out` unless `out/product` is there already; `out`.

    Test workers (pytest-xdist) and other checkouts sharing a cache may ask at once: the
    build is serialised by a lock file beside `out`, so nobody removes a directory another
    process is running java from, and the result is renamed into place whole, so an
    interrupted build never looks complete. A failure raises `error`: "{failure}:\\n{javac's}"."""
    if (out / product).exists():
        return out
    javac = require_javac(error)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / product).exists():  # built while we waited
            return out
        scratch = out.with_name(out.name + f".partial-{os.getpid()}")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        proc = subprocess.run([javac, "-nowarn", "-cp", classpath, "-d", str(scratch), str(source)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            raise error(f"{failure}:\n{proc.stderr[-3000:]}")
        shutil.rmtree(out, ignore_errors=True)
        scratch.rename(out)
    return out


# ---- processes -------------------------------------------------------------------------

class JvmProcess(subprocess.Popen):
    """A Popen that remembers whether it leads a process group of its own, so that stop()
    and kill() reach whatever the JVM started and nothing else."""

    own_group = False


def _die_with_parent() -> None:
    # atexit cannot run when the Python process is SIGKILLed (a test run killed on a
    # timeout): Linux then sends the JVM SIGTERM, so no JVM outlives its starter.
    # (The thread that started the JVM counts as the parent: spawn from one that lives.)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def spawn(cmd: list[str], *, log: Path | None = None, append: bool = False, own_group: bool = False,
          die_with_parent: bool = False, stdin=subprocess.DEVNULL, **popen) -> JvmProcess:
    """Start `cmd`. With `log`, its stdout and stderr go to that file (appended to with
    `append`, as a restarted process's). `own_group`: a process group of its own, which
    stop()/kill() signal. `die_with_parent`: SIGTERM when the starting thread dies.
    Anything else (stdout=PIPE, cwd, env, text, ...) is Popen's."""
    if die_with_parent:
        popen["preexec_fn"] = _die_with_parent
    if log is None:
        proc = JvmProcess(cmd, stdin=stdin, start_new_session=own_group, **popen)
    else:
        with open(log, "ab" if append else "wb") as out:
            proc = JvmProcess(cmd, stdin=stdin, stdout=out, stderr=subprocess.STDOUT, start_new_session=own_group,
                              **popen)
    proc.own_group = own_group
    return proc


def send(proc: subprocess.Popen, sig: int) -> None:
    """`sig` to the process (its group, when it has one of its own), if it is still there."""
    try:
        if getattr(proc, "own_group", False):
            os.killpg(proc.pid, sig)
        elif proc.poll() is None:
            proc.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop(proc: subprocess.Popen, grace: float, sig: int = signal.SIGTERM) -> int:
    """`sig` (SIGTERM: a JVM runs its shutdown hooks), up to `grace` seconds for the process
    to end, then SIGKILL; its exit status. A process that had already ended has anything
    it left in its group killed."""
    return stop_all([proc], grace, sig)[0]


def stop_all(procs: list[subprocess.Popen], grace: float, sig: int = signal.SIGTERM) -> list[int]:
    """stop() for several processes at once: all are signalled, then each gets the grace."""
    running = [p.poll() is None for p in procs]
    for proc, alive in zip(procs, running):
        send(proc, sig if alive else signal.SIGKILL)
    for proc in procs:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            send(proc, signal.SIGKILL)
            proc.wait()
    return [p.returncode for p in procs]


def kill(proc: subprocess.Popen) -> int:
    """SIGKILL, and its exit status: no shutdown hook runs."""
    send(proc, signal.SIGKILL)
    return proc.wait()


# ---- work directories ------------------------------------------------------------------

def owned_dir(prefix: str) -> Path:
    """A temp directory that names this process as its owner, for sweep_orphans()."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    (home / "owner.pid").write_text(f"{os.getpid()}\n")
    return home


def sweep_orphans(prefix: str) -> None:
    """Remove the owned_dir()s whose owner was killed before it could."""
    for d in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        try:
            owner = int((d / "owner.pid").read_text())
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (OSError, ValueError):
            pass


def json_events(path: Path | None) -> list[dict]:
    """The `{"event": ...}` JSON lines a test program printed into its log, in order (a line still
    being written is left out)."""
    if path is None or not path.exists():
        return []
    found = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith('{"event"'):
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return found


def tail(path: Path | None, lines: int = 15) -> str:
    """The last `lines` lines of a log file, "" when there is none, for a failure's message."""
    if path is None:
        return ""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])
