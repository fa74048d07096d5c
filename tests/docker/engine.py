"""A docker engine for the compose tests, and the pieces they build on it.

`docker_engine()` uses the engine that answers ($DOCKER_HOST or the default socket);
when none does, it starts a private `dockerd` (overlay2 storage where the kernel mounts
overlayfs there, else vfs; no iptables, no bridge)
whose data root, exec root, pidfile and socket all live in one temp dir, so it
never meets another engine or test on the machine, and stops it afterwards.

Missing tools fail the test with the command that installs them: `make test`
installs them itself when it runs as root.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL_HINT = ("`make install-test` installs it as root (apt-get install -y docker.io docker-compose "
                "debootstrap); by hand: `sudo apt-get install -y docker.io docker-compose debootstrap`")
DEBIAN_MIRROR = os.environ.get("KCOORD_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` not found on PATH: {INSTALL_HINT}", pytrace=False)
    return path


def require_docker_sdk():
    try:
        import docker
    except ImportError:
        pytest.fail("the `docker` Python SDK is missing: `make install-test` installs it "
                    "(.venv/bin/pip install -e '.[test]')", pytrace=False)
    return docker


@dataclass
class Engine:
    client: object          # docker.DockerClient
    host: str               # the DOCKER_HOST URL it answers on

    def env(self) -> dict[str, str]:
        """Environment for docker / docker-compose commands that talk to this engine."""
        env = dict(os.environ, DOCKER_HOST=self.host)
        env.pop("DOCKER_CONTEXT", None)
        return env


def _answering_client(docker, base_url: str | None):
    try:
        client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
        client.ping()
        return client
    except Exception:
        return None


@contextlib.contextmanager
def docker_engine(timeout: float = 120.0):
    docker = require_docker_sdk()
    client = _answering_client(docker, None)
    if client is not None:
        yield Engine(client, os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"))
        client.close()
        return

    dockerd = require_tool("dockerd")
    root = Path(tempfile.mkdtemp(prefix="kcoord-dockerd-", dir="/tmp"))  # short: unix socket paths are limited
    sock = root / "docker.sock"
    host = f"unix://{sock}"
    log = open(root / "dockerd.log", "wb")
    driver = _storage_driver(root)
    print(f"private dockerd with {driver} storage", flush=True)
    proc = subprocess.Popen(
        [dockerd, f"--storage-driver={driver}", "--iptables=false", "--ip6tables=false", "--bridge=none",
         "--data-root", str(root / "data"), "--exec-root", str(root / "exec"),
         "--pidfile", str(root / "dockerd.pid"), "--host", host],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        client = None
        while client is None:
            if proc.poll() is not None:
                pytest.fail(f"dockerd exited with {proc.returncode}:\n{_tail(root / 'dockerd.log')}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"dockerd did not answer within {timeout}s:\n{_tail(root / 'dockerd.log')}", pytrace=False)
            time.sleep(0.5)
            client = _answering_client(docker, host) if sock.exists() else None
        yield Engine(client, host)
        client.close()
    finally:
        # Only the dockerd started here (and its own containerd, which it stops).
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
        _unmount_under(root)
        # vfs keeps full copies of every layer, overlay2 one of each: remove them now, not at reboot.
        subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)


def _storage_driver(root: Path) -> str:
    """overlay2 when an overlay mounts under `root`, else vfs. vfs copies the whole image for
    every build step and every container (~10 s apiece here; the image's build took 107 s on
    vfs and 18 s on overlay2, 2026-11-27); a kernel or a filesystem (itself an overlay, say)
    that refuses the probe gets vfs, which works anywhere."""
    probe = root / "overlay-probe"
    dirs = [probe / d for d in ("lower", "upper", "work", "merged")]
    for d in dirs:
        d.mkdir(parents=True)
    options = f"lowerdir={dirs[0]},upperdir={dirs[1]},workdir={dirs[2]}"
    mounted = subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(dirs[3])],
                             capture_output=True).returncode == 0
    if mounted:
        subprocess.run(["umount", str(dirs[3])], check=False, capture_output=True)
    shutil.rmtree(probe, ignore_errors=True)
    return "overlay2" if mounted else "vfs"


def _unmount_under(root: Path) -> None:
    """Mounts dockerd left below its own exec root (e.g. netns/default), deepest first."""
    try:
        mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    except OSError:
        return
    for target in sorted((m for m in mounts if m.startswith(str(root) + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", target], check=False, capture_output=True)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def import_debian_base(engine: Engine, tag: str, workdir: Path) -> str:
    """A minimal Debian (bookworm) image with python3 and venv, made without a registry.

    debootstrap builds the root filesystem from the Debian mirror apt already uses;
    `docker import` turns it into an image. Its python3 is 3.11, kcoord's minimum.
    """
    with _debian_rootfs_tar(workdir).open("rb") as tar:
        imp = subprocess.run([require_tool("docker"), "import", "-", tag], stdin=tar,
                             env=engine.env(), capture_output=True, text=True)
    if imp.returncode != 0:
        pytest.fail(f"docker import failed: {imp.stderr}", pytrace=False)
    return tag


# What is emptied in the debootstrapped root filesystem: apt's package lists and downloaded
# .debs (the image never runs apt), locales, documentation (~140 MB of ~270).
SLIMMED = ("var/lib/apt/lists", "var/cache/apt", "usr/share/locale", "usr/share/doc", "usr/share/man",
           "usr/share/info")


def _debian_rootfs_tar(workdir: Path) -> Path:
    """The debootstrapped root filesystem as a tar, kept in the cache the fetched jars use
    (debootstrap takes a minute or two, longer under the full suite; the base is not what
    the test is about). Delete the file to take a fresh one from the mirror."""
    from kcoord.testing import maven

    args = ["--variant=minbase", "--include=python3,python3-venv,ca-certificates", "bookworm"]
    key = hashlib.sha256(repr((args, DEBIAN_MIRROR, SLIMMED)).encode()).hexdigest()[:12]
    cached = maven.cache_root() / f"debian-rootfs-{key}.tar"
    if cached.exists():
        return cached
    debootstrap = require_tool("debootstrap")
    rootfs = workdir / "rootfs"
    run = subprocess.run([debootstrap, *args, str(rootfs), DEBIAN_MIRROR], capture_output=True, text=True)
    if run.returncode != 0:
        pytest.fail(f"debootstrap failed ({run.returncode}); it needs root and the Debian mirror "
                    f"{DEBIAN_MIRROR}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}", pytrace=False)
    # vfs (the storage where overlayfs does not mount) copies the whole filesystem for every
    # layer and every container: what the image never uses is half the tar and of every copy.
    for path in SLIMMED:
        for entry in (rootfs / path).glob("*"):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.partial")
    tar = subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], capture_output=True, text=True)
    subprocess.run(["rm", "-rf", "--one-file-system", str(rootfs)], check=False)
    if tar.returncode != 0:
        partial.unlink(missing_ok=True)
        pytest.fail(f"tar of the debootstrapped root filesystem failed: {tar.stderr}", pytrace=False)
    os.replace(partial, cached)
    return cached


BUILD_CONTEXT_FILES = ["Dockerfile", ".dockerignore", "pyproject.toml", "README.md", "wire", "kcoord", "examples"]


def build_kcoord_image(engine: Engine, repo: Path, base: str, tag: str, workdir: Path) -> str:
    """The project's Dockerfile built on `base`, offline.

    Inside a container the only way to PyPI may be a proxy with the host's own CA, so
    pip fetches the wheels here, with the host's pip settings, and the image installs
    from them (--no-index): the Dockerfile's PIP_OPTIONS build argument.
    """
    import sys
    import tomllib

    context = workdir / "context"
    context.mkdir()
    for name in BUILD_CONTEXT_FILES:
        src = repo / name
        if src.is_dir():
            shutil.copytree(src, context / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, context / name)
    wheels = context / "wheels"
    # The image builds kcoord from source with --no-index, so its build backend must be in the wheelhouse too.
    build_requires = tomllib.loads((context / "pyproject.toml").read_text())["build-system"]["requires"]
    print("pip wheel for the image", flush=True)
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(wheels),
                          f"{context}[examples]", *build_requires],
                         capture_output=True, text=True)
    if run.returncode != 0:
        pytest.fail(f"pip wheel for the image failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}", pytrace=False)
    print("docker build", flush=True)
    try:
        engine.client.images.build(path=str(context), tag=tag, rm=True, forcerm=True, network_mode="host",
                                   buildargs={"BASE": base, "PIP_OPTIONS": "--no-index --find-links /src/wheels"})
    except Exception as err:  # docker.errors.BuildError carries the build log
        log = "".join(str(line.get("stream", line)) for line in getattr(err, "build_log", []))
        pytest.fail(f"docker build failed: {err}\n{log[-4000:]}", pytrace=False)
    finally:
        shutil.rmtree(context, ignore_errors=True)
    return tag
