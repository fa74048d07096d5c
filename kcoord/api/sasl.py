"""SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2) outside a login.

While a connection is logging in, `kcoord.security.gate.SaslGate` answers these
before any handler runs. A request reaching a handler therefore comes from a
connection that needs no login (SASL off) or has already logged in: Kafka
answers ILLEGAL_SASL_STATE then.
"""
from kcoord.api import handles
from wire.errors import ErrorCode


@handles(17, "SaslHandshake", 0, 1)
async def sasl_handshake(ctx, req):
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


@handles(36, "SaslAuthenticate", 0, 2)
async def sasl_authenticate(ctx, req):
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SASL authentication is not expected on this connection now",
            "auth_bytes": b"", "session_lifetime_ms": 0}
