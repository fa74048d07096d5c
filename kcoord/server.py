"""The asyncio TCP listener.

Each connection handles one request at a time, like a Kafka broker (which
mutes a channel until its response is sent): responses therefore leave in
request order even while a JoinGroup is parked, and a pipelining client simply
waits. A malformed frame or request closes only its own connection, with the
reason logged; every other connection keeps being served.
"""
from __future__ import annotations

import asyncio
import logging
import struct
import time
import traceback

from kcoord.api import RequestContext, registry
from kcoord.admin.metrics import top_level_error
from kcoord.limits import ConnectionLimits
from wire import codec
from wire.codec import API_VERSIONS_KEY, UnsupportedVersionError
from wire.errors import ErrorCode
from wire.framing import FrameError, FrameTooLarge, encode_frame, read_frame
from wire.types import DecodeError

log = logging.getLogger("kcoord.server")

# How long a closing connection may take to flush what it still has to send.
CLOSE_GRACE_S = 1.0
# How long the shutdown waits for cancelled connection tasks before it says which did not end.
CLOSE_WAIT_S = 5.0


class Connection:
    _next_id = 0

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        Connection._next_id += 1
        self.id = Connection._next_id
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.host, self.port = peer[0], peer[1]
        self.client_software: tuple[str, str] | None = None   # from ApiVersions v3+
        # kcoord.security.gate.ConnectionAuth, while SASL is on: the login's progress.
        self.sasl = None
        self.principal: str | None = None   # the SASL user name once logged in
        # Set by whoever answers a request that ends the connection (a failed login).
        self.close_after_response = False

    def __repr__(self):
        return f"connection {self.id} from {self.host}:{self.port}"


class KafkaServer:
    def __init__(self, broker, host: str, port: int, max_frame_bytes: int, limits=None, sasl=None,
                 ssl_context=None, acls=None):
        self.broker = broker
        self.host = host
        self.port = port
        self.max_frame_bytes = max_frame_bytes
        # kcoord.limits.ConnectionLimits; kcoord.security.gate.SaslGate when SASL is on; ssl.SSLContext for TLS.
        self.limits = limits or ConnectionLimits()
        self.sasl = sasl
        self.ssl_context = ssl_context
        self.acls = acls  # kcoord.security.acls.Authorizer when ACLs are on (--acls, --group-acls)
        self.limit_hits = self.limits.hits
        self._server: asyncio.base_events.Server | None = None
        self._connections: dict[asyncio.Task, asyncio.StreamWriter] = {}  # each connection's task
        # Callables (connection, "request"|"response", payload) seeing every frame: traffic capture.
        self.frame_observers: list = []
        self.metrics = None  # kcoord.admin.metrics.Metrics, set by the app
        # A kcoord.faults.FaultInjector, or None: every request passes through it.
        self.faults = None
        self.apis = registry()

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True,
                                                  limit=self.limits.max_buffered_bytes, ssl=self.ssl_context)
        sock = self._server.sockets[0].getsockname()
        self.port = sock[1]
        return sock[0], sock[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            # Bounded: a connection task that does not end on cancel must not hold the shutdown
            # (and the coordinator's timers) forever; say where it was, for the bug report.
            _, stuck = await asyncio.wait(set(self._connections), timeout=CLOSE_WAIT_S)
            for task in stuck:
                stack = task.get_stack()
                frames = "".join(traceback.format_stack(stack[-1])) if stack else "?"
                log.warning("a connection did not end %.0f s after the shutdown cancelled it; it was at:\n%s",
                            CLOSE_WAIT_S, frames)
                writer = self._connections.get(task)
                if writer is not None:
                    writer.transport.abort()
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader, writer):
        task = asyncio.current_task()
        self._connections[task] = writer
        conn = Connection(reader, writer)
        if not self.limits.admit(conn.host):
            self._connections.pop(task, None)
            writer.transport.abort()
            return
        try:
            await self._connection_loop(conn)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing %s after an internal error", conn)
        finally:
            self._connections.pop(task, None)
            self.limits.release(conn.host)
            writer.close()
            try:
                # A peer that stops reading keeps unsent bytes in the buffer, and closing
                # waits for them: without a bound, one such client held a SIGTERM'd
                # server's shutdown (and its coordinator timers) forever.
                async with asyncio.timeout(CLOSE_GRACE_S):
                    await writer.wait_closed()
            except Exception:
                writer.transport.abort()

    async def _connection_loop(self, conn: Connection) -> None:
        while True:
            try:
                async with asyncio.timeout(self.limits.idle_seconds):
                    payload = await read_frame(conn.reader, self.max_frame_bytes)
            except FrameTooLarge as err:
                self.limits.hit("socket.request.max.bytes", conn.host, "closing %s: %s", conn, err)
                return
            except FrameError as err:
                log.warning("closing %s: %s", conn, err)
                return
            except TimeoutError:
                self.limits.hit("connections.max.idle.ms", conn.host, "closing %s: idle for %d ms "
                                "(connections.max.idle.ms)", conn, self.limits.idle_ms)
                return
            if payload is None:
                return
            for observe in self.frame_observers:
                observe(conn, "request", payload)
            response = await self._handle(conn, payload)
            if response is False:
                return
            if response is not None:
                for observe in self.frame_observers:
                    observe(conn, "response", response)
                conn.writer.write(encode_frame(response))
                await conn.writer.drain()
            if conn.close_after_response:
                return

    async def _handle(self, conn: Connection, payload: bytes):
        """Returns response bytes, None (no response), or False (close the connection)."""
        if self.sasl is not None:
            gated = self.sasl.check(conn, payload)
            if gated is not None:
                return gated
        try:
            req = codec.decode_request(payload)
        except UnsupportedVersionError as err:
            return self._unsupported(conn, payload, err)
        except DecodeError as err:
            log.warning("closing %s: malformed request: %s", conn, err)
            return False
        api = self.apis.get(req.api_key)
        if api is None or not api.serves(req.api_version):
            return self._unsupported(conn, payload, UnsupportedVersionError(req.api_key, req.api_version))
        ctx = RequestContext(self.broker, req.api_key, req.api_version, req.correlation_id,
                             req.client_id, conn.host, conn)
        if self.faults is not None:
            return await self.faults.around(req, lambda: self._respond(api, ctx, req),
                                            answered=lambda body: self._observe(api, req, body, 0.0))
        return await self._respond(api, ctx, req)

    async def _respond(self, api, ctx: RequestContext, req):
        started = time.perf_counter()
        if self.acls is not None:
            body = await self.acls.authorize(ctx.connection, req.api_key, req.api_version, req.body,
                                             lambda allowed: api.handler(ctx, allowed))
        else:
            body = await api.handler(ctx, req.body)
        self._observe(api, req, body, time.perf_counter() - started)
        if body is None:
            return None
        return codec.encode_response(req.api_key, req.api_version, {"correlation_id": req.correlation_id}, body)

    def _observe(self, api, req, body, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_request(api.name, req.api_version, top_level_error(body), seconds)

    def _unsupported(self, conn: Connection, payload: bytes, err: UnsupportedVersionError):
        # Kafka answers an ApiVersions request it cannot parse with a v0 response
        # carrying UNSUPPORTED_VERSION and its ranges, so the client can retry
        # with a version both sides know; any other unsupported request closes
        # the connection.
        if len(payload) >= 8:
            api_key, _, correlation_id = struct.unpack_from(">hhi", payload, 0)
            if api_key == API_VERSIONS_KEY:
                from kcoord.api.api_versions import advertised_versions

                body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": advertised_versions()}
                return codec.encode_response(API_VERSIONS_KEY, 0, {"correlation_id": correlation_id}, body)
        log.warning("closing %s: %s", conn, err)
        return False
