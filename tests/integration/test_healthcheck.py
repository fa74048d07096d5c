"""`python -m kcoord.admin.healthcheck` (the image's HEALTHCHECK) against a real server and a dead port."""
import os
import socket
import subprocess
import sys

from kcoord.testing.reference_kafka import free_port


def _healthcheck(*args, **env):
    return subprocess.run([sys.executable, "-m", "kcoord.admin.healthcheck", *args], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, **env))


def test_healthy_when_kafka_listener_answers_apiversions(kcoord_server):
    run = _healthcheck(kcoord_server.bootstrap)
    assert run.returncode == 0 and "healthy" in run.stdout
    assert _healthcheck(KCOORD_HEALTHCHECK_ADDRESS=kcoord_server.bootstrap).returncode == 0


def test_unhealthy_when_nothing_listens_or_the_peer_is_not_kafka():
    port = free_port()
    run = _healthcheck(f"127.0.0.1:{port}")
    assert run.returncode == 1 and "unhealthy" in run.stdout
    with socket.socket() as srv:  # accepts, then hangs up without answering
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        proc = subprocess.Popen([sys.executable, "-m", "kcoord.admin.healthcheck", f"127.0.0.1:{srv.getsockname()[1]}"],
                                stdout=subprocess.PIPE, text=True)
        conn, _ = srv.accept()
        conn.close()
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "unhealthy" in out
