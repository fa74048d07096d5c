"""SaslHandshake outside a login.

While a connection is logging in, `kcoord.security.gate.SaslGate` answers it
before any handler runs. A request reaching this handler therefore comes from a
connection that needs no login (SASL off) or has already logged in: Kafka
answers ILLEGAL_SASL_STATE then.
"""
from kcoord.api import ApiDescriptor, ApiKey
from wire.errors import ErrorCode


async def sasl_handshake(ctx, req):
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


DESCRIPTOR = ApiDescriptor(
    ApiKey.SASL_HANDSHAKE, 0, 1, sasl_handshake,
    "PLAIN, SCRAM-SHA-256/512 when `--sasl-users` is set (see \"Limits, authentication and fuzzing\")",
    version_notes={1: "tokens travel in SaslAuthenticate requests (raw frames in v0)"})
