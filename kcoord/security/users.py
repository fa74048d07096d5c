"""The SASL users file (`--sasl-users FILE`).

One user per line, `name:password`; blank lines and lines starting with `#`
are ignored. Every user may log in with PLAIN and with both SCRAM mechanisms:
SCRAM credentials (salt, 4096 iterations, as Kafka's default) are derived once
at start-up, so the password itself is only kept for PLAIN.

AlterUserScramCredentials adds, replaces and deletes SCRAM credentials at run time
(`UserStore`); a user added that way has no password, so it cannot use PLAIN (in
Kafka too PLAIN checks its own JAAS users, not the SCRAM credentials).
"""
from __future__ import annotations

import hashlib
import hmac
import json
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
    password: str | None      # None: a user added at run time, who has SCRAM credentials only
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


# Kafka's ScramMechanism type codes (AlterUserScramCredentials, DescribeUserScramCredentials).
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MECHANISM_CODES = {name: code for code, name in MECHANISM_TYPES.items()}
# Kafka's ScramMechanism minIterations and ScramControlManager.MAX_ITERATIONS.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
CREDENTIALS_FILE = "scram-credentials.json"


def credential_from_salted(hash_name: str, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
    """What Kafka's controller keeps of an AlterUserScramCredentials upsertion: the client
    sends the salted password, never the password."""
    client_key = hmac.new(salted_password, b"Client Key", hash_name).digest()
    server_key = hmac.new(salted_password, b"Server Key", hash_name).digest()
    return ScramCredential(salt, iterations, hashlib.new(hash_name, client_key).digest(), server_key)


class UserStore:
    """The SASL users: those of `--sasl-users FILE`, changed at run time by
    AlterUserScramCredentials. `users` is the dict the SASL gate logs in against, changed
    in place. With a data dir, each run-time change is kept in `scram-credentials.json`
    there (written whole, then renamed over the old one) as an overlay on the file:
    per user and mechanism a credential, or null for one deleted; a restart applies it
    again to whatever the users file then holds."""

    def __init__(self, users: dict[str, User] | None = None, data_dir: str | None = None):
        self.users = users if users is not None else {}
        self.path = None if data_dir is None else os.path.join(data_dir, CREDENTIALS_FILE)
        self.overlay: dict[str, dict[str, dict | None]] = {}
        if self.path is not None and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.overlay = json.load(f).get("users", {})
            for name, mechanisms in self.overlay.items():
                for mechanism, value in mechanisms.items():
                    self._apply(name, mechanism, None if value is None else ScramCredential(
                        bytes.fromhex(value["salt"]), value["iterations"],
                        bytes.fromhex(value["stored_key"]), bytes.fromhex(value["server_key"])))

    def _apply(self, name: str, mechanism: str, credential: ScramCredential | None) -> None:
        user = self.users.get(name)
        if credential is None:
            if user is not None:
                user.scram.pop(mechanism, None)
                if not user.scram and user.password is None:
                    del self.users[name]  # a run-time user with no credential left is gone
            return
        if user is None:
            user = self.users[name] = User(name, None)  # no password: SCRAM only, as in Kafka
        user.scram[mechanism] = credential

    def credential(self, name: str, mechanism: str) -> ScramCredential | None:
        user = self.users.get(name)
        return None if user is None else user.scram.get(mechanism)

    def change(self, changes: list[tuple[str, str, ScramCredential | None]]) -> None:
        """Apply (user, mechanism, credential or None to delete) changes: first to disk,
        then in memory, so a change a client was told succeeded survives a restart."""
        overlay = {name: dict(m) for name, m in self.overlay.items()}
        for name, mechanism, credential in changes:
            overlay.setdefault(name, {})[mechanism] = None if credential is None else {
                "salt": credential.salt.hex(), "iterations": credential.iterations,
                "stored_key": credential.stored_key.hex(), "server_key": credential.server_key.hex()}
        if self.path is not None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"users": overlay}, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        self.overlay = overlay
        for name, mechanism, credential in changes:
            self._apply(name, mechanism, credential)
