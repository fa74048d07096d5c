"""Authentication for the Kafka listener: SASL (PLAIN, SCRAM-SHA-256/512), TLS, group ACLs.

Off unless configured. `gate.SaslGate` is the one hook the server calls for every
frame of a connection that has not authenticated yet.
"""
