"""Test-only Java programs beside the consumer driver of `kcoord check`
(`kcoord.conformance.javaclient`, whose jar lookup and build they share):
KcoordJavaLogin joins a group with given security settings."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from kcoord.conformance.javaclient import classpath, program_command

SOURCE = Path(__file__).with_name("java") / "KcoordJavaLogin.java"


def login_command(bootstrap: str, topic: str, group: str, max_seconds: int, properties: dict) -> list[str]:
    """KcoordJavaLogin: a consumer with the given client properties (security settings) joins a group."""
    return program_command(SOURCE, "login", classpath(), bootstrap, topic, group, str(max_seconds),
                           *(f"{k}={v}" for k, v in properties.items()))


def login(bootstrap: str, topic: str, group: str, properties: dict, max_seconds: int = 60) -> list[dict]:
    proc = subprocess.run(login_command(bootstrap, topic, group, max_seconds, properties), capture_output=True,
                          text=True, timeout=max_seconds + 60)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not events:
        raise RuntimeError(f"java login printed nothing ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return events
