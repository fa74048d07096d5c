"""Builds the listener's limits, SASL gate, TLS context and authorizer from a ServerConfig."""
from __future__ import annotations

from kcoord.limits import ConnectionLimits


def security_options(config) -> dict:
    """KafkaServer's security keyword arguments, and `users`: the SCRAM user store, which
    AlterUserScramCredentials changes whether or not SASL is on (as Kafka keeps
    credentials for a listener that may come later)."""
    from kcoord.security.users import UserStore, load_users

    limits = ConnectionLimits(config.max_connections, config.max_connections_per_ip,
                              config.connections_max_idle_ms, config.max_buffered_request_bytes)
    users = UserStore(load_users(config.sasl_users_file) if config.sasl_users_file else {}, config.data_dir)
    sasl = None
    if config.sasl_users_file:
        from kcoord.security.gate import SaslGate

        sasl = SaslGate(users.users, list(config.sasl_mechanisms),
                        on_failure=lambda conn, reason: limits.hits.update(["sasl.authentication.failed"]))
    ssl_context = None
    if config.tls_cert_file:
        from kcoord.security.tls import server_context

        ssl_context = server_context(config.tls_cert_file, config.tls_key_file or config.tls_cert_file,
                                     config.tls_client_ca_file)
    acls = None
    if config.group_acls_file or config.acls:
        from kcoord.security.acls import Authorizer

        acls = Authorizer.load(config.group_acls_file, config.super_users, config.data_dir)
    return {"limits": limits, "sasl": sasl, "ssl_context": ssl_context, "acls": acls, "users": users}
