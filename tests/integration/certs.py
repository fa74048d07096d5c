"""Test certificates, made at test time with the `openssl` CLI: a CA, a server
certificate for 127.0.0.1/localhost and a client certificate, all PEM."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # a CA that signed nothing here: trusting only it must fail


def _run(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d: Path, name: str):
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
         "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def _leaf(d: Path, name: str, ca: str, san: str):
    _run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
         "-out", f"{name}.csr", cwd=d)
    (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
         "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)


def make_certs(d: Path) -> Certs:
    if shutil.which("openssl") is None:
        raise RuntimeError("the `openssl` CLI is needed for the TLS tests: apt-get install openssl")
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "otherca")
    _leaf(d, "server", "ca", "IP:127.0.0.1,DNS:localhost")
    _leaf(d, "client", "ca", "DNS:client")
    return Certs(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem",
                 d / "client.key", d / "otherca.pem")
