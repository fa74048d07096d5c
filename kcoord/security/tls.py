"""TLS for the Kafka listener (Python's ssl), as Kafka's SSL / SASL_SSL listeners.

With a client CA file, clients must present a certificate signed by it
(ssl.client.auth=required).
"""
from __future__ import annotations

import ssl


def server_context(cert_file: str, key_file: str, client_ca_file: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    if client_ca_file:
        ctx.load_verify_locations(client_ca_file)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
