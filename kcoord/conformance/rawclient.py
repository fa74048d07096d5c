"""A minimal Kafka protocol client over asyncio, speaking through `wire/` only.

One request in flight per connection (as a broker serves them); scenarios open a
connection per simulated member so a parked JoinGroup blocks only its member.
"""
from __future__ import annotations

import asyncio
import itertools

from wire import codec
from wire.framing import encode_frame, read_frame


# The client id of connections that only prepare a scenario (a topic that must first reach the
# group coordinator): transcripts leave their traffic out (kcoord.conformance.transcript).
SETUP_CLIENT_ID = "kcoord-check-setup"


class RawConnection:
    def __init__(self, host: str, port: int, client_id: str = "kcoord-check"):
        self.host, self.port, self.client_id = host, port, client_id
        self._corr = itertools.count(1)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> "RawConnection":
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except Exception:
                pass

    async def __aenter__(self):
        return await self.open()

    async def __aexit__(self, *exc):
        await self.close()

    async def call(self, api_key: int, version: int, body: dict, timeout: float = 60.0):
        """Send one request, return the decoded response body."""
        async with self._lock:
            corr = next(self._corr)
            self.writer.write(encode_frame(codec.encode_request(
                api_key, version, {"correlation_id": corr, "client_id": self.client_id}, body)))
            await self.writer.drain()
            payload = await asyncio.wait_for(read_frame(self.reader, 100 * 1024 * 1024), timeout)
            if payload is None:
                raise ConnectionError(f"connection closed while waiting for api {api_key} v{version}")
            header, response = codec.decode_response(api_key, version, payload)
            if header.correlation_id != corr:
                raise ConnectionError(f"correlation id {header.correlation_id} != {corr}")
            return response


def parse_bootstrap(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port or 9092)
