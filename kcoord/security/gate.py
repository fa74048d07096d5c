"""The SASL gate: what a connection may do before it has authenticated.

As Kafka's SaslServerAuthenticator: before authentication only ApiVersions,
SaslHandshake and SaslAuthenticate are served; any other request closes the
connection (Kafka raises IllegalSaslStateException and disconnects). A failed
login answers SASL_AUTHENTICATION_FAILED and then closes. After SaslHandshake
v0 the client sends raw SASL tokens in size-prefixed frames, without Kafka
request headers (the legacy flow); v1 wraps them in SaslAuthenticate.
"""
from __future__ import annotations

import enum
import logging
import struct

from kcoord.security.mechanisms import MECHANISMS, AuthFailed, new_exchange
from kcoord.security.users import User
from wire import codec
from wire.codec import API_VERSIONS_KEY
from wire.errors import ErrorCode
from wire.types import DecodeError

log = logging.getLogger("kcoord.security")

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36


class Stage(enum.Enum):
    """Where a connection's login is: HANDSHAKE -> AUTHENTICATE (SaslHandshake v1+)
    or LEGACY (v0: raw tokens) -> DONE."""

    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    LEGACY = "legacy"
    DONE = "done"


class ConnectionAuth:
    """Per-connection SASL progress."""

    def __init__(self):
        self.stage = Stage.HANDSHAKE
        self.exchange = None
        self.principal: str | None = None


class SaslGate:
    def __init__(self, users: dict[str, User], mechanisms: list[str] | None = None, on_failure=None):
        self.users = users
        self.mechanisms = mechanisms or list(MECHANISMS)
        # Called with (connection, reason) for every rejected login or request: counting.
        self.on_failure = on_failure or (lambda conn, reason: None)

    @staticmethod
    def state(conn) -> ConnectionAuth:
        auth = conn.sasl
        if auth is None:
            auth = conn.sasl = ConnectionAuth()
        return auth

    def check(self, conn, payload: bytes):
        """None lets the request through to its handler; bytes answer it; False closes."""
        auth = self.state(conn)
        if auth.stage is Stage.DONE:
            return None
        if auth.stage is Stage.LEGACY:
            return self._legacy_token(conn, auth, payload)
        if len(payload) < 8:
            return self._reject(conn, "a frame too short for a request header before authentication")
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", payload, 0)
        if api_key == API_VERSIONS_KEY:
            return None
        if api_key not in (SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY):
            return self._reject(conn, f"unexpected request (api key {api_key}) before SASL authentication")
        try:
            req = codec.decode_request(payload)
        except (DecodeError, codec.UnsupportedVersionError) as err:
            return self._reject(conn, f"malformed SASL request: {err}")
        if api_key == SASL_HANDSHAKE_KEY:
            return self._handshake(conn, auth, req)
        if auth.stage is not Stage.AUTHENTICATE:
            return self._reject(conn, "SaslAuthenticate before SaslHandshake")
        return self._authenticate(conn, auth, req)

    def _reject(self, conn, reason: str):
        log.warning("closing %s: %s", conn, reason)
        self.on_failure(conn, reason)
        return False

    def _handshake(self, conn, auth, req):
        mechanism = req.body.mechanism
        body = {"error_code": ErrorCode.NONE, "mechanisms": list(self.mechanisms)}
        if mechanism not in self.mechanisms:
            body["error_code"] = ErrorCode.UNSUPPORTED_SASL_MECHANISM
            log.warning("closing %s: unsupported SASL mechanism %r", conn, mechanism)
            self.on_failure(conn, "unsupported SASL mechanism")
            conn.close_after_response = True
        else:
            auth.exchange = new_exchange(mechanism, self.users)
            auth.stage = Stage.AUTHENTICATE if req.api_version >= 1 else Stage.LEGACY
        return codec.encode_response(SASL_HANDSHAKE_KEY, req.api_version,
                                     {"correlation_id": req.correlation_id}, body)

    def _authenticate(self, conn, auth, req):
        body = {"error_code": ErrorCode.NONE, "error_message": None, "auth_bytes": b"",
                "session_lifetime_ms": 0}
        try:
            body["auth_bytes"] = auth.exchange.step(bytes(req.body.auth_bytes))
        except AuthFailed as err:
            body["error_code"] = ErrorCode.SASL_AUTHENTICATION_FAILED
            body["error_message"] = str(err)
            log.warning("closing %s: SASL/%s authentication failed: %s", conn, auth.exchange.mechanism, err)
            self.on_failure(conn, "authentication failed")
            conn.close_after_response = True
        else:
            self._maybe_done(conn, auth)
        return codec.encode_response(SASL_AUTHENTICATE_KEY, req.api_version,
                                     {"correlation_id": req.correlation_id}, body)

    def _legacy_token(self, conn, auth, payload):
        try:
            reply = auth.exchange.step(payload)
        except AuthFailed as err:
            # The legacy flow has no way to carry an error: Kafka just closes.
            return self._reject(conn, f"SASL/{auth.exchange.mechanism} authentication failed: {err}")
        self._maybe_done(conn, auth)
        return reply

    def _maybe_done(self, conn, auth):
        if auth.exchange.complete:
            auth.stage, auth.principal = Stage.DONE, auth.exchange.principal
            conn.principal = auth.principal
            log.info("%s authenticated as User:%s (SASL/%s)", conn, auth.principal, auth.exchange.mechanism)
