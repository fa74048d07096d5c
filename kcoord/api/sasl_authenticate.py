"""SaslAuthenticate outside a login: ILLEGAL_SASL_STATE, as for SaslHandshake
(see kcoord.api.sasl_handshake)."""
from kcoord.api import ApiDescriptor, ApiKey
from wire.errors import ErrorCode


async def sasl_authenticate(ctx, req):
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SASL authentication is not expected on this connection now",
            "auth_bytes": b"", "session_lifetime_ms": 0}


DESCRIPTOR = ApiDescriptor(
    ApiKey.SASL_AUTHENTICATE, 0, 2, sasl_authenticate,
    "the SASL exchange after SaslHandshake v1",
    version_notes={1: "a session lifetime (none: sessions do not expire)"})
