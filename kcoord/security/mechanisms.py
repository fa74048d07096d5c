"""Server side of the SASL mechanisms: PLAIN (RFC 4616) and SCRAM (RFC 5802/7677).

Each exchange is a small state machine: `step(token)` returns the token to send
back, sets `complete` and `principal` on success, and raises `AuthFailed` on
bad credentials or a malformed message.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os

from kcoord.security.users import SCRAM_HASHES, User


class AuthFailed(Exception):
    pass


class PlainExchange:
    def __init__(self, users: dict[str, User], mechanism: str = "PLAIN"):
        self.users = users
        self.mechanism = mechanism
        self.complete = False
        self.principal: str | None = None

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, name, password = (p.decode("utf-8", "replace") for p in parts)
        if authzid and authzid != name:
            raise AuthFailed("Authentication failed: Client requested an authorization id that is "
                             "different from username")
        user = self.users.get(name)
        if user is None or user.password is None or not hmac.compare_digest(user.password.encode(), password.encode()):
            raise AuthFailed("Authentication failed: Invalid username or password")
        self.complete, self.principal = True, name
        return b""


def _attrs(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if sep:
            out.setdefault(key, value)
    return out


class ScramExchange:
    def __init__(self, users: dict[str, User], mechanism: str):
        self.users = users
        self.mechanism = mechanism
        self.hash_name = SCRAM_HASHES[mechanism]
        self.complete = False
        self.principal: str | None = None
        self._stage = 0

    def _fail(self) -> AuthFailed:
        return AuthFailed(f"Authentication failed during authentication due to invalid credentials "
                          f"with SASL mechanism {self.mechanism}")

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthFailed("Invalid SCRAM message: not UTF-8") from None
        if self._stage == 0:
            return self._client_first(text)
        if self._stage == 1:
            return self._client_final(text)
        raise AuthFailed("Unexpected SCRAM message after authentication completed")

    def _client_first(self, text: str) -> bytes:
        # gs2-header "n,," (or "n,a=authzid,"), then the bare message.
        pieces = text.split(",", 2)
        if len(pieces) != 3 or pieces[0] not in ("n", "y"):
            raise AuthFailed("Invalid SCRAM client-first message")
        self._gs2_header = f"{pieces[0]},{pieces[1]},"
        self._client_first_bare = pieces[2]
        attrs = _attrs(pieces[2])
        name = attrs.get("n", "").replace("=2C", ",").replace("=3D", "=")
        nonce = attrs.get("r")
        if not name or not nonce:
            raise AuthFailed("Invalid SCRAM client-first message")
        user = self.users.get(name)
        # A user may lack this mechanism's credential (AlterUserScramCredentials deletes one).
        if user is None or self.mechanism not in user.scram:
            raise self._fail()
        self._user = user
        self._cred = user.scram[self.mechanism]
        self._nonce = nonce + base64.b64encode(os.urandom(18)).decode()
        self._server_first = (f"r={self._nonce},s={base64.b64encode(self._cred.salt).decode()},"
                              f"i={self._cred.iterations}")
        self._stage = 1
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        without_proof, sep, proof_part = text.rpartition(",p=")
        attrs = _attrs(without_proof)
        if not sep or attrs.get("r") != self._nonce:
            raise self._fail()
        if attrs.get("c") != base64.b64encode(self._gs2_header.encode()).decode():
            raise AuthFailed("Invalid SCRAM channel binding")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise self._fail() from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(self._cred.stored_key, auth_message, self.hash_name).digest()
        if len(proof) != len(signature):
            raise self._fail()
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.new(self.hash_name, client_key).digest(), self._cred.stored_key):
            raise self._fail()
        server_signature = hmac.new(self._cred.server_key, auth_message, self.hash_name).digest()
        self._stage = 2
        self.complete, self.principal = True, self._user.name
        return b"v=" + base64.b64encode(server_signature)


MECHANISMS = {"PLAIN": PlainExchange, "SCRAM-SHA-256": ScramExchange, "SCRAM-SHA-512": ScramExchange}


def new_exchange(mechanism: str, users: dict[str, User]):
    return MECHANISMS[mechanism](users, mechanism)
