"""Connection limits of the Kafka listener, with Kafka's names and behaviour.

- max.connections / max.connections.per.ip: a connection over the limit is
  closed as soon as it is accepted (Kafka's acceptor does the same, per IP with
  TooManyConnectionsException).
- connections.max.idle.ms: a connection that sends nothing for that long is
  closed (Kafka's selector expires idle channels).
- In flight: one request per connection is processed at a time (Kafka mutes a
  channel until its response is sent). Requests a client pipelines wait unread:
  at most `max_buffered_bytes` of them are read ahead into memory, then the
  server stops reading the socket and TCP pushes back on the client.

Each refusal is logged once per offender (peer host) and counted in `hits`.
"""
from __future__ import annotations

import collections
import logging

log = logging.getLogger("kcoord.limits")

UNLIMITED = 2**31 - 1


class ConnectionLimits:
    def __init__(self, max_connections: int = UNLIMITED, max_connections_per_ip: int = UNLIMITED,
                 idle_ms: int = 600_000, max_buffered_bytes: int = 64 * 1024):
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.idle_ms = idle_ms
        self.max_buffered_bytes = max_buffered_bytes
        self.open = 0
        self.per_ip: collections.Counter = collections.Counter()
        # limit name -> times it refused something; exported by the metrics endpoint.
        self.hits: collections.Counter = collections.Counter()
        self._logged: set[tuple[str, str]] = set()

    def hit(self, limit: str, offender: str, message: str, *args) -> None:
        self.hits[limit] += 1
        if (limit, offender) not in self._logged:
            if len(self._logged) < 100_000:  # the log-once memory stays bounded too
                self._logged.add((limit, offender))
            log.warning(message + " (logged once per peer)", *args)

    def admit(self, host: str) -> bool:
        if self.open >= self.max_connections:
            self.hit("max.connections", host, "refusing a connection from %s: max.connections=%d reached",
                     host, self.max_connections)
            return False
        if self.per_ip[host] >= self.max_connections_per_ip:
            self.hit("max.connections.per.ip", host,
                     "refusing a connection from %s: max.connections.per.ip=%d reached",
                     host, self.max_connections_per_ip)
            return False
        self.open += 1
        self.per_ip[host] += 1
        return True

    def release(self, host: str) -> None:
        self.open -= 1
        self.per_ip[host] -= 1
        if self.per_ip[host] <= 0:
            del self.per_ip[host]

    @property
    def idle_seconds(self) -> float | None:
        return self.idle_ms / 1000 if self.idle_ms >= 0 else None
