"""The SASL users file (`--sasl-users FILE`).

One user per line, `name:password`; blank lines and lines starting with `#`
are ignored. Every user may log in with PLAIN and with both SCRAM mechanisms:
SCRAM credentials (salt, 4096 iterations, as Kafka's default) are derived once
at start-up, so the password itself is only kept for PLAIN.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass, field

SCRAM_ITERATIONS = 4096
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


@dataclass
class User:
    name: str
    password: str
    scram: dict[str, ScramCredential] = field(default_factory=dict)


def scram_credential(password: str, hash_name: str, salt: bytes | None = None,
                     iterations: int = SCRAM_ITERATIONS) -> ScramCredential:
    salt = salt or os.urandom(16)
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    server_key = hmac.new(salted, b"Server Key", hash_name).digest()
    return ScramCredential(salt, iterations, hashlib.new(hash_name, client_key).digest(), server_key)


def parse_users(text: str) -> dict[str, User]:
    users = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, password = line.partition(":")
        if not sep or not name:
            raise ValueError(f"users file line {lineno}: expected name:password")
        user = User(name, password)
        for mech, hash_name in SCRAM_HASHES.items():
            user.scram[mech] = scram_credential(password, hash_name)
        users[name] = user
    return users


def load_users(path: str) -> dict[str, User]:
    with open(path, encoding="utf-8") as f:
        return parse_users(f.read())
