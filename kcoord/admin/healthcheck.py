"""Container health check: `python -m kcoord.admin.healthcheck [HOST:PORT]`.

Healthy means the Kafka listener completes an ApiVersions round trip, which is
what every client does first; an open port alone would not prove the server
answers. The address defaults to $KCOORD_HEALTHCHECK_ADDRESS, else 127.0.0.1:9092.
Exit status 0 when healthy, 1 otherwise (Docker's HEALTHCHECK convention).
"""
from __future__ import annotations

import os
import sys

from kcoord.config import parse_host_port
from kcoord.protocol_client import Connection


def probe(host: str, port: int, timeout: float = 3.0) -> None:
    """One ApiVersions v0 round trip; raises when the server does not answer properly."""
    Connection(host, port, timeout, client_id="kcoord-healthcheck").close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    address = argv[0] if argv else os.environ.get("KCOORD_HEALTHCHECK_ADDRESS", "127.0.0.1:9092")
    host, port = parse_host_port(address)
    try:
        probe(host, port)
    except Exception as err:  # any failure is "unhealthy", reported to `docker inspect`
        print(f"unhealthy: {address}: {err}")
        return 1
    print(f"healthy: {address}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
