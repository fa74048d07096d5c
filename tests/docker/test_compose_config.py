"""compose.yaml and the test override are valid and say what docs/compose.md promises (fast: no engine)."""
import os
import subprocess
from pathlib import Path

import yaml

from tests.docker.engine import require_tool

REPO = Path(__file__).resolve().parents[2]


def _config(*files, **env) -> dict:
    compose = require_tool("docker-compose")
    cmd = [compose, "--project-directory", str(REPO)]
    for f in files:
        cmd += ["-f", str(REPO / f)]
    run = subprocess.run(cmd + ["config"], capture_output=True, text=True, env=dict(os.environ, **env))
    assert run.returncode == 0, f"docker-compose config failed:\n{run.stderr}"
    return yaml.safe_load(run.stdout)


def test_user_compose_file_is_valid_and_forms_one_static_group():
    services = _config("compose.yaml")["services"]
    assert set(services) == {"kcoord", "consumer-kafka-python", "consumer-aiokafka"}
    kcoord = services["kcoord"]
    assert "0.0.0.0:9092" in kcoord["command"] and "kcoord:9092" in kcoord["command"]
    assert kcoord["command"][kcoord["command"].index("--data-dir") + 1] == "/data"
    assert any(v.startswith("kcoord-data:/data") for v in kcoord["volumes"])
    consumers = [services["consumer-kafka-python"], services["consumer-aiokafka"]]
    assert {c["environment"]["BOOTSTRAP"] for c in consumers} == {"kcoord:9092"}
    assert len({c["environment"]["GROUP"] for c in consumers}) == 1
    instance_ids = {c["environment"]["INSTANCE_ID"] for c in consumers}
    assert len(instance_ids) == 2 and all(instance_ids)
    assert all("network_mode" not in s for s in services.values())  # service names resolve on the project network


def test_test_override_uses_host_networking_on_loopback_and_a_given_port():
    services = _config("compose.yaml", "compose.test.yaml", KCOORD_IMAGE="kcoord-test:x", KCOORD_PORT="40123")["services"]
    assert {s["network_mode"] for s in services.values()} == {"host"}
    assert {s["image"] for s in services.values()} == {"kcoord-test:x"}
    assert "127.0.0.1:40123" in services["kcoord"]["command"]
    assert services["consumer-aiokafka"]["environment"]["BOOTSTRAP"] == "127.0.0.1:40123"
    assert services["consumer-aiokafka"]["environment"]["INSTANCE_ID"] == "example-aiokafka-1"


def test_test_override_refuses_to_run_without_its_image_and_port():
    compose = require_tool("docker-compose")
    env = {k: v for k, v in os.environ.items() if k not in ("KCOORD_IMAGE", "KCOORD_PORT")}
    run = subprocess.run([compose, "--project-directory", str(REPO), "-f", str(REPO / "compose.yaml"),
                          "-f", str(REPO / "compose.test.yaml"), "config"], capture_output=True, text=True, env=env)
    assert run.returncode != 0 and "KCOORD_IMAGE" in run.stderr
