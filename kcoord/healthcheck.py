"""Container health check: `python -m kcoord.healthcheck [HOST:PORT]`.

Healthy means the Kafka listener completes an ApiVersions round trip, which is
what every client does first; an open port alone would not prove the server
answers. The address defaults to $KCOORD_HEALTHCHECK_ADDRESS, else 127.0.0.1:9092.
Exit status 0 when healthy, 1 otherwise (Docker's HEALTHCHECK convention).
"""
from __future__ import annotations

import os
import socket
import struct
import sys

from kcoord.config import parse_host_port
from wire import codec
from wire.errors import ErrorCode

API_VERSIONS = 18


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed before the ApiVersions response")
        buf += chunk
    return buf


def probe(host: str, port: int, timeout: float = 3.0) -> None:
    """One ApiVersions v0 round trip; raises when the server does not answer properly."""
    request = codec.encode_request(API_VERSIONS, 0, {"correlation_id": 7, "client_id": "kcoord-healthcheck"}, {})
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        header, body = codec.decode_response(API_VERSIONS, 0, _read_exactly(sock, size))
    if header["correlation_id"] != 7:
        raise ValueError(f"correlation id {header['correlation_id']} != 7")
    if body["error_code"] != ErrorCode.NONE:
        raise ValueError(f"ApiVersions error code {body['error_code']}")


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
