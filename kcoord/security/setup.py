"""Builds the listener's limits, SASL gate and TLS context from a ServerConfig."""
from __future__ import annotations

from kcoord.limits import ConnectionLimits


def security_options(config) -> dict:
    limits = ConnectionLimits(config.max_connections, config.max_connections_per_ip,
                              config.connections_max_idle_ms, config.max_buffered_request_bytes)
    sasl = None
    if config.sasl_users_file:
        from kcoord.security.gate import SaslGate
        from kcoord.security.users import load_users

        sasl = SaslGate(load_users(config.sasl_users_file), list(config.sasl_mechanisms),
                        on_failure=lambda conn, reason: limits.hits.update(["sasl.authentication.failed"]))
    ssl_context = None
    if config.tls_cert_file:
        from kcoord.security.tls import server_context

        ssl_context = server_context(config.tls_cert_file, config.tls_key_file or config.tls_cert_file,
                                     config.tls_client_ca_file)
    acls = None
    if config.group_acls_file:
        from kcoord.security.acls import GroupAcls

        acls = GroupAcls.load(config.group_acls_file)
    return {"limits": limits, "sasl": sasl, "ssl_context": ssl_context, "acls": acls}
