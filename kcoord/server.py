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
from wire.framing import FrameError, FrameTooLarge, check_size, encode_frame
from wire.types import DecodeError

log = logging.getLogger("kcoord.server")

_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")

# How long a closing connection may take to flush what it still has to send.
CLOSE_GRACE_S = 1.0
# How long the shutdown waits for cancelled connection tasks before it says which did not end.
CLOSE_WAIT_S = 5.0
# The longest wait between two sweeps for idle connections (connections.max.idle.ms).
IDLE_SWEEP_MAX_S = 5.0
# Answers up to this size are held until the loop's current turn ends, then written one after
# another (KafkaServer.answer_later); at most _DEFER_TOTAL_BYTES of them wait at once.
_DEFER_FRAME_BYTES = 16 << 10
_DEFER_TOTAL_BYTES = 1 << 20


class Connection:
    _next_id = 0
    # One per connection, tens of thousands per server: slots, not a __dict__ each.
    __slots__ = ("id", "transport", "host", "port", "sasl", "principal", "close_after_response", "_on_close")

    def __init__(self, transport: asyncio.BaseTransport):
        Connection._next_id += 1
        self.id = Connection._next_id
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.host, self.port = peer[0], peer[1]
        # kcoord.security.gate.ConnectionAuth, while SASL is on: the login's progress.
        self.sasl = None
        self.principal: str | None = None   # the SASL user name once logged in
        # Set by whoever answers a request that ends the connection (a failed login).
        self.close_after_response = False
        # Callables told once the connection is gone (None: none yet; False: it is gone).
        self._on_close: list | bool | None = None

    def on_close(self, callback) -> None:
        """Call `callback(connection)` once this connection is gone, however it ended (at once if
        it is gone already): state a handler keeps for the connection (a share session) goes with
        it, as Kafka's broker tells its ConnectionDisconnectListeners."""
        if self._on_close is False:
            callback(self)
            return
        if self._on_close is None:
            self._on_close = []
        if callback not in self._on_close:
            self._on_close.append(callback)

    def closed(self) -> None:
        callbacks, self._on_close = self._on_close, False
        for callback in callbacks or ():
            try:
                callback(self)
            except Exception:   # one listener's failure must not keep the others from hearing
                log.exception("a close callback of %s failed", self)

    def __repr__(self):
        return f"connection {self.id} from {self.host}:{self.port}"


async def _resume(coro, awaited):
    """Carry on, inside a task, a request coroutine that was started outside one and suspended
    on `awaited` (what a Task does with a coroutine it steps)."""
    while True:
        if awaited is None:        # a bare yield (asyncio.sleep(0))
            await asyncio.sleep(0)
        else:
            # The coroutine's own await marked the future as waited on; a Task clears the mark
            # before it waits in its turn, or awaiting it again is refused.
            awaited._asyncio_future_blocking = False
            try:
                await awaited
            except BaseException:  # the coroutine reads the outcome from the future itself
                if not awaited.done():   # this task was cancelled while the future still runs
                    awaited.cancel()
            if not awaited.done():
                try:
                    awaited = coro.throw(asyncio.CancelledError())
                except StopIteration as stop:
                    return stop.value
                continue
        try:
            awaited = coro.send(None)
        except StopIteration as stop:
            return stop.value


async def _answered(response):
    """A request answered before any handler ran, as the coroutine `_request` returns."""
    return response


class _ConnectionProtocol(asyncio.Protocol):
    """One client connection: frames in, one request at a time, responses out in order.

    A Protocol rather than a stream reader and a task per connection: a request whose API
    answers without waiting (Heartbeat, OffsetCommit, ...: `ApiDescriptor.inline`) is
    handled inside the read callback and answered in the same turn of the loop, with no
    task, future or wake-up in between. Any other request, or an inline one that does wait after all (a
    fault rule's delay), runs in a task, and the connection reads no further frame until
    it is answered."""

    __slots__ = ("server", "loop", "buf", "conn", "transport", "busy", "task", "read_paused", "write_paused",
                 "eof", "closing", "lost", "idle_since")

    def __init__(self, server: "KafkaServer"):
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.buf = bytearray()
        self.conn: Connection | None = None
        self.transport = None
        self.busy = False            # a request is being handled (or its answer cannot be written yet)
        self.task: asyncio.Task | None = None
        self.read_paused = False
        self.write_paused = False
        self.eof = False
        self.closing = False
        self.lost = False
        self.idle_since = 0.0   # loop time of the last answer (or of the connection), for the idle sweep

    # ---------------------------------------------------------------- transport events
    def connection_made(self, transport):
        self.transport = transport
        conn = self.conn = Connection(transport)
        if not self.server.limits.admit(conn.host):
            self.conn = None
            transport.abort()
            return
        self.server._connections[self] = None
        self.idle_since = self.loop.time()

    def data_received(self, data):
        self.buf += data
        if not self.busy:
            self._process()
        if (self.busy or self.write_paused) and not self.read_paused \
                and len(self.buf) > self.server.limits.max_buffered_bytes:
            # Pipelined requests beyond the read-ahead bound wait in the client's socket, whether
            # a request is being handled or the client is not reading its answers.
            self.read_paused = True
            self.transport.pause_reading()

    def eof_received(self):
        self.eof = True
        if not self.busy:
            self._process()
        return True  # half-closed: the requests already read are still answered

    def pause_writing(self):
        self.write_paused = True

    def resume_writing(self):
        self.write_paused = False
        if not self.busy:
            self._process()

    def connection_lost(self, exc):
        self.closing = True
        self.lost = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.conn is not None and self.server._connections.pop(self, False) is None:
            self.server.limits.release(self.conn.host)
        if self.conn is not None:
            self.conn.closed()

    # ---------------------------------------------------------------- requests
    def _next_frame(self) -> bytes | None:
        buf = self.buf
        if len(buf) < 4:
            return None
        size = _SIZE.unpack_from(buf, 0)[0]
        check_size(size, self.server.max_frame_bytes)
        if len(buf) - 4 < size:
            return None
        payload = bytes(buf[4:4 + size])
        del buf[:4 + size]
        return payload

    def _process(self) -> None:
        """Handle the complete frames read so far, one after another, until one must wait."""
        server = self.server
        while not self.busy and not self.closing and not self.write_paused:
            try:
                payload = self._next_frame()
            except FrameTooLarge as err:
                server.limits.hit("socket.request.max.bytes", self.conn.host, "closing %s: %s", self.conn, err)
                return self.close()
            except FrameError as err:
                log.warning("closing %s: %s", self.conn, err)
                return self.close()
            if payload is None:
                if self.eof:
                    if self.buf:
                        log.warning("closing %s: connection closed inside a frame (%d bytes of it read)",
                                    self.conn, len(self.buf))
                    self.close()
                elif self.read_paused:
                    self.read_paused = False
                    self.transport.resume_reading()
                return
            self.busy = True
            try:
                coro = server._request(self.conn, payload)
            except BaseException as exc:
                self._failed(exc)
                return
            api = server.apis.get(_API_KEY.unpack_from(payload, 0)[0]) if len(payload) >= 2 else None
            if api is None or not api.inline:
                self._in_task(coro)
                return
            try:
                awaited = coro.send(None)
            except StopIteration as stop:
                self._answer(stop.value)
                continue
            except BaseException as exc:
                self._failed(exc)
                return
            self._in_task(_resume(coro, awaited))
            return

    def _in_task(self, coro) -> None:
        self.task = task = self.loop.create_task(coro)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task) -> None:
        self.task = None
        if task.cancelled():
            return self.close()
        exc = task.exception()
        if exc is not None:
            return self._failed(exc)
        self._answer(task.result())
        if not self.busy:
            self._process()

    def _failed(self, exc: BaseException) -> None:
        if not isinstance(exc, (ConnectionError, asyncio.CancelledError)):
            log.error("closing %s after an internal error", self.conn, exc_info=exc)
        self.close()

    def _answer(self, response) -> None:
        """Send a request's response (bytes), nothing (None), or close the connection (False)."""
        if self.closing:
            return
        if response is False:
            return self.close()
        conn = self.conn
        if response is not None:
            server = self.server
            for observe in server.frame_observers:
                observe(conn, "response", response)
            frame = encode_frame(response)
            if conn.close_after_response or len(frame) > _DEFER_FRAME_BYTES:
                server.flush_answers()   # what this connection answered before goes first
                self.transport.write(frame)
            else:
                server.answer_later(self, frame)
        if conn.close_after_response:
            return self.close()
        self.busy = False
        self.idle_since = self.loop.time()

    def idle_for(self, now: float, idle: float) -> bool:
        """Whether this connection has been idle (nothing being handled) for `idle` seconds."""
        return not self.busy and not self.closing and now - self.idle_since >= idle

    def close(self) -> None:
        if self.closing:
            return
        self.server.flush_answers()   # answers already given leave before the connection closes
        self.closing = True
        if self.task is not None and not self.task.done():
            self.task.cancel()
        transport = self.transport
        transport.close()
        # A peer that stops reading keeps unsent bytes in the buffer, and closing waits for
        # them: bounded, so one such client cannot hold a SIGTERM'd server's shutdown.
        self.loop.call_later(CLOSE_GRACE_S, lambda: transport.is_closing() and transport.abort())


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
        self._connections: dict[_ConnectionProtocol, None] = {}  # the open connections
        # Callables (connection, "request"|"response", payload) seeing every frame: traffic capture.
        self.frame_observers: list = []
        self.metrics = None  # kcoord.admin.metrics.Metrics, set by the app
        # A kcoord.faults.FaultInjector, or None: every request passes through it.
        self.faults = None
        self.apis = registry()
        self._idle_sweep: asyncio.TimerHandle | None = None
        self._answers: list[tuple[_ConnectionProtocol, bytes]] = []   # held by answer_later
        self._answer_bytes = 0

    def answer_later(self, protocol: _ConnectionProtocol, frame: bytes) -> None:
        """Write `frame` once the loop's current turn ends, with the other answers of that turn.

        On loopback every write that finds its reader asleep pays for waking it (on a VM an
        interrupt to the other core: ~9% of the server's CPU in a commit-loaded profile). Each
        answer written as soon as it is made, with the next request's handling in between,
        found its client asleep nearly every time; written back to back, most find it awake.
        Order is kept: every write of an answer goes through here or flushes it first."""
        answers = self._answers
        if not answers:
            asyncio.get_running_loop().call_soon(self.flush_answers)
        answers.append((protocol, frame))
        self._answer_bytes += len(frame)
        if self._answer_bytes > _DEFER_TOTAL_BYTES:
            self.flush_answers()

    def flush_answers(self) -> None:
        answers = self._answers
        if not answers:
            return
        self._answers = []
        self._answer_bytes = 0
        for protocol, frame in answers:
            if not protocol.lost:
                protocol.transport.write(frame)

    async def start(self) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _ConnectionProtocol(self), self.host, self.port,
                                                reuse_address=True, ssl=self.ssl_context)
        sock = self._server.sockets[0].getsockname()
        self.port = sock[1]
        self._sweep_idle()
        return sock[0], sock[1]

    def _sweep_idle(self) -> None:
        """Close the connections idle for connections.max.idle.ms. One sweep over them all, a tenth
        of that time apart (at most 5 s), rather than a loop timer per connection: a connection
        goes at most that much later than its limit. The limit is read each time (it is dynamic)."""
        loop = asyncio.get_running_loop()
        limits = self.limits
        idle = limits.idle_seconds
        if idle is not None:
            now = loop.time()
            for protocol in [c for c in self._connections if c.idle_for(now, idle)]:
                limits.hit("connections.max.idle.ms", protocol.conn.host, "closing %s: idle for %d ms "
                           "(connections.max.idle.ms)", protocol.conn, limits.idle_ms)
                protocol.close()
        period = IDLE_SWEEP_MAX_S if idle is None else min(max(idle / 10, 0.01), IDLE_SWEEP_MAX_S)
        self._idle_sweep = loop.call_later(period, self._sweep_idle)

    async def close(self, abort: bool = False, settle_s: float = 0.0) -> None:
        """Stop listening and end every connection: answered requests are flushed first, or
        (`abort`, a killed broker) every connection is reset at once. With `settle_s`, requests
        in flight get up to that long to finish first. The server may start again."""
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
        if self._server is not None:
            self._server.close()
        connections = list(self._connections)
        if abort:
            self._answers = [(p, f) for p, f in self._answers if p not in self._connections]
            for connection in connections:
                connection.closing = True
                if connection.task is not None and not connection.task.done():
                    connection.task.cancel()
                connection.transport.abort()
            if self._server is not None:
                await self._server.wait_closed()
                self._server = None
            return

        tasks = [c.task for c in connections if c.task is not None and not c.task.done()]
        if settle_s and tasks:
            # A request the shutdown itself answered (a JoinGroup parked in a group its broker
            # just unloaded, now NOT_COORDINATOR) is written on the loop's next turns: let it
            # out. One still waiting (a long-polling Fetch) is cut after settle_s.
            await asyncio.wait(tasks, timeout=settle_s)
            tasks = [c.task for c in connections if c.task is not None and not c.task.done()]
        for connection in connections:
            connection.close()
        if tasks:
            # Bounded: a request task that does not end on cancel must not hold the shutdown
            # (and the coordinator's timers) forever; say where it was, for the bug report.
            _, stuck = await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
            for task in stuck:
                stack = task.get_stack()
                frames = "".join(traceback.format_stack(stack[-1])) if stack else "?"
                log.warning("a connection did not end %.0f s after the shutdown cancelled it; it was at:\n%s",
                            CLOSE_WAIT_S, frames)
        # Closed transports flush what they still hold; wait for that, bounded (then aborted).
        deadline = asyncio.get_running_loop().time() + CLOSE_GRACE_S
        while any(not c.lost for c in connections) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for connection in connections:
            if not connection.lost:
                connection.transport.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def _request(self, conn: Connection, payload: bytes):
        """A coroutine that answers the request: response bytes, None (no response), or False
        (close the connection).

        Decoding and routing happen here, before any coroutine exists, and the coroutine
        returned is the handler's own (`_respond`): a request parked for seconds (a JoinGroup
        in its rebalance) holds one frame of the server's, not three."""
        for observe in self.frame_observers:
            observe(conn, "request", payload)
        if self.sasl is not None:
            gated = self.sasl.check(conn, payload)
            if gated is not None:
                return _answered(gated)
        try:
            req = codec.decode_request(payload)
        except UnsupportedVersionError as err:
            return _answered(self._unsupported(conn, payload, err))
        except DecodeError as err:
            log.warning("closing %s: malformed request: %s", conn, err)
            return _answered(False)
        api = self.apis.get(req.api_key)
        if api is None or not api.serves(req.api_version):
            return _answered(self._unsupported(conn, payload, UnsupportedVersionError(req.api_key, req.api_version)))
        ctx = RequestContext(self.broker, req.api_key, req.api_version, req.correlation_id,
                             req.client_id, conn.host, conn, api)
        faults = self.faults
        if faults is not None:
            group = faults.note(req)
            if faults.rules:
                return faults.around(req, lambda: self._respond(api, ctx, req),
                                     answered=lambda body: self._observe(api, req.api_version, body, 0.0), group=group,
                                     node=self.broker.node_id)
        return self._respond(api, ctx, req)

    async def _respond(self, api, ctx: RequestContext, req):
        started = time.perf_counter()
        key, version, correlation_id = req.api_key, req.api_version, req.correlation_id
        if self.acls is not None:
            handling = self.acls.authorize(ctx.connection, api, version, req.body,
                                           lambda allowed: api.handler(ctx, allowed))
        else:
            handling = api.handler(ctx, req.body)
        # The handler holds what it needs of the request: a parked one (a JoinGroup waits for its
        # whole group) does not keep the decoded header and body alive here as well.
        req = None
        body = await handling
        self._observe(api, version, body, time.perf_counter() - started)
        if body is None:
            return None
        return codec.encode_response(key, version, {"correlation_id": correlation_id}, body)

    def _observe(self, api, version: int, body, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_request(api.name, version, top_level_error(body), seconds, self.broker.node_id)

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
