"""A recording Kafka-protocol proxy: every request/response exchange as a JSON line.

Each client connection gets its own upstream connection. Frames are split both
ways, decoded with `wire/` (the request header tells which API and version the
matching response has), written to the transcript and forwarded. Responses that
name broker addresses (Metadata, FindCoordinator, DescribeCluster, and KIP-951's
node endpoints in Produce and Fetch answers) are re-encoded to point at the proxy,
so a client never leaves it.

`RecordingProxy` stands in front of one broker and points every address at itself.
`ClusterProxy` stands in front of a whole cluster: each broker the cluster names gets
a listener of its own, opened the first time an answer names it and kept (one port
per broker for the proxy's life), every address in an answer is rewritten to its
broker's listener, and every exchange goes to one transcript.

A transcript line:

    {"conn": 3, "seq": 17, "t_ms": 812, "answered_ms": 815, "client_id": "kafka-python-3.0.12",
     "api": "JoinGroup", "api_key": 11, "version": 5, "correlation_id": 4,
     "upstream": "127.0.0.1:9092", "broker": 1,
     "request": {...decoded fields...}, "response": {...decoded fields...}}

`t_ms` is when the request reached the proxy, `answered_ms` when its answer did (ms
since the proxy started); `broker` is the node id of the broker behind the listener,
once an answer has named it. A frame that does not decode is still forwarded
unchanged; its exchange carries `request_error`/`response_error` and the frame's
length instead of its fields. A `ClusterProxy` also records the requests a broker
never answered because their connection ended first (`"unanswered": true`, no
response): a broker that died with a JoinGroup parked in it, say.

A dead broker looks dead through the proxy. Once the upstream broker refuses a
connection, its listener stops listening but keeps its port bound, so a client's
connect is refused as it would be by the stopped broker's port, until the broker
accepts connections again (the proxy tries every PROBE_INTERVAL_S). A refusal, not an
accepted connection closed at once: librdkafka takes a connection that closes while it
waits for its ApiVersions answer for a broker too old to know ApiVersions, which no
dead broker ever makes it do. A connection the broker resets is reset to the client
too, and one it closes is closed.

Lost answers on demand: `proxy.drop_after("Produce", times=3)` lets the next three
Produce requests through to the broker and then closes the client's connection
instead of returning their answers (kcoord's `drop_after` fault rule, for any broker).
The answer the client never got is still in the transcript, marked `"dropped": true`.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import socket
import struct
import threading
import time
import uuid
from typing import Awaitable, Callable

from wire import codec
from wire.framing import FrameError, encode_frame, read_frame
from wire.specs import api_keys

log = logging.getLogger("kcoord.recorder")

PRODUCE, FETCH, METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 0, 1, 3, 10, 60
# Record payloads (Produce, Fetch) are summarised: the transcript is about
# coordination, and a summary keeps each line (and the in-memory copy) small.
MAX_BYTES_RECORDED = 512
BYTES_HEAD = 64
# Requests a client may pipeline on one connection before we stop remembering
# them: a broker answers in order, so more than this is a broken peer.
MAX_IN_FLIGHT = 1024
# How often a listener whose broker is down tries the broker again, and how long one try may take.
PROBE_INTERVAL_S = 0.1
PROBE_TIMEOUT_S = 2.0


def jsonable(value):
    """Decoded `wire` values as JSON: bytes become {"$bytes": hex, "len": n}, uuids strings."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) > MAX_BYTES_RECORDED:
            return {"$bytes": data[:BYTES_HEAD].hex(), "len": len(data), "truncated": True}
        return {"$bytes": data.hex(), "len": len(data)}
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def bytes_of(value) -> bytes | None:
    """The bytes a `jsonable` value stood for (None if it was not bytes or was truncated)."""
    if isinstance(value, dict) and "$bytes" in value and not value.get("truncated"):
        return bytes.fromhex(value["$bytes"])
    return None


def api_name(api_key: int) -> str:
    return api_keys().get(api_key, f"api{api_key}")


class Transcript:
    """Where exchanges go: a JSONL file, an in-memory list, or both."""

    def __init__(self, path: str | None = None, keep: bool = False, max_kept: int = 200_000):
        self._file = open(path, "a", encoding="utf-8") if path else None
        self.exchanges: list[dict] | None = [] if keep else None
        self.max_kept = max_kept
        self.dropped = 0
        self._lock = threading.Lock()

    def add(self, exchange: dict) -> None:
        line = json.dumps(exchange, separators=(",", ":"))
        with self._lock:
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()
            if self.exchanges is not None:
                if len(self.exchanges) < self.max_kept:
                    self.exchanges.append(json.loads(line))
                else:
                    self.dropped += 1

    def sorted(self) -> list[dict]:
        with self._lock:
            return sorted(self.exchanges or [], key=lambda e: e["seq"])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return sorted((json.loads(line) for line in f if line.strip()), key=lambda e: e["seq"])


def named_brokers(api_key: int, body: dict) -> list[dict]:
    """The entries of a decoded response that give a broker's address (node id, host, port)."""
    if api_key in (METADATA, DESCRIBE_CLUSTER):
        nodes = body.get("brokers") or []
    elif api_key == FIND_COORDINATOR:
        if "coordinators" in body:  # v4+: one entry per key
            nodes = body["coordinators"] or []
        else:
            nodes = [body] if body.get("error_code", 0) == 0 else []
    elif api_key in (PRODUCE, FETCH):  # KIP-951: where the new leaders are (Produce v10+, Fetch v16+)
        nodes = body.get("node_endpoints") or []
    else:
        nodes = []
    return [n for n in nodes if n.get("host")]


def node_id_of(node: dict) -> int | None:
    node_id = node.get("node_id", node.get("broker_id"))
    return node_id if isinstance(node_id, int) and node_id >= 0 else None


def rewrite_addresses(nodes: list[dict], addresses: list[tuple[str, int]]) -> bool:
    """Give each node of `named_brokers` its address from `addresses`; True if any changed."""
    changed = False
    for node, (host, port) in zip(nodes, addresses):
        if (node["host"], node.get("port")) != (host, port):
            node["host"], node["port"] = host, port
            changed = True
    return changed


class DropAfter:
    """Forward a matching request, then hang up instead of returning its answer, `times` times."""

    def __init__(self, api_key: int, times: int = 1):
        self.api_key, self.remaining = api_key, times
        self.fired: list[dict] = []  # the answer each drop kept from the client: conn, seq, correlation id
        self._lock = threading.Lock()

    def take(self, api_key: int) -> bool:
        with self._lock:
            if api_key != self.api_key or self.remaining <= 0:
                return False
            self.remaining -= 1
            return True


def _api_key(api: int | str) -> int:
    if isinstance(api, int):
        return api
    by_name = {name: key for key, name in api_keys().items()}
    if api not in by_name:
        raise ValueError(f"unknown api {api!r}")
    return by_name[api]


class _Numbers:
    """Connection and exchange numbers and the clock of one transcript, shared by every
    listener that writes to it."""

    def __init__(self):
        self.conns = itertools.count(1)
        self.seqs = itertools.count(1)
        self.start = time.monotonic()

    def restart_clock(self) -> None:
        self.start = time.monotonic()

    def now_ms(self) -> int:
        return int((time.monotonic() - self.start) * 1000)


class _Pending:
    __slots__ = ("seq", "t_ms", "api_key", "version", "client_id", "request", "error", "length")

    def __init__(self, seq, t_ms, api_key, version, client_id, request, error, length):
        self.seq, self.t_ms, self.api_key, self.version = seq, t_ms, api_key, version
        self.client_id, self.request, self.error, self.length = client_id, request, error, length


class RecordingProxy:
    """Accepts clients on `listen`, forwards each connection to `upstream`, records exchanges.

    Alone it points every broker address in an answer at itself; a ClusterProxy gives it
    `addresses` (the proxy address of each broker an answer names), the transcript's shared
    `numbers` and `drops`, and the `node_id` of its broker."""

    def __init__(self, upstream: tuple[str, int], transcript: Transcript,
                 listen: tuple[str, int] = ("127.0.0.1", 0), advertised: tuple[str, int] | None = None, *,
                 node_id: int | None = None, numbers: _Numbers | None = None, drops: list | None = None,
                 addresses: Callable[[list[dict]], Awaitable[list[tuple[str, int]]]] | None = None,
                 record_unanswered: bool = False):
        self.upstream = upstream
        self.transcript = transcript
        self.listen = listen
        self.node_id = node_id
        self._advertised = advertised
        self._numbers = numbers or _Numbers()
        self._owns_numbers = numbers is None
        self._addresses = addresses or self._this_proxy
        self._record_unanswered = record_unanswered
        self._server: asyncio.base_events.Server | None = None
        self._reserved: socket.socket | None = None   # the port, bound but not listening: connects are refused
        self._port: int | None = None
        self._watcher: asyncio.Task | None = None
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        self.address: tuple[str, int] | None = None
        self.drops: list[DropAfter] = drops if drops is not None else []
        # Whether the upstream broker accepts connections, as this proxy last found out.
        self.upstream_up = False

    def drop_after(self, api: int | str, times: int = 1) -> DropAfter:
        """The next `times` requests of `api` reach the broker, and then their connection closes
        without their answers; `.fired` on the result lists the answers kept back."""
        rule = DropAfter(_api_key(api), times)
        self.drops.append(rule)
        return rule

    @property
    def bootstrap(self) -> str:
        host, port = self.address
        return f"{host}:{port}"

    async def _this_proxy(self, nodes: list[dict]) -> list[tuple[str, int]]:
        return [self.address] * len(nodes)

    async def start(self) -> tuple[str, int]:
        """Takes the port and, once it has tried the upstream broker, listens if the broker
        accepts connections; otherwise connects are refused until it does."""
        self._reserve()
        if self._owns_numbers:
            self._numbers.restart_clock()
        looked = asyncio.Event()
        self._watcher = asyncio.ensure_future(self._watch(looked))
        await looked.wait()
        return self.address

    def _reserve(self) -> None:
        host = self.listen[0]
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, self._port if self._port is not None else self.listen[1]))
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self._reserved = sock
        if self._port is None:
            sock_host, self._port = sock.getsockname()[:2]
            self.address = self._advertised or (host if host not in ("", "0.0.0.0", "::") else sock_host, self._port)

    async def _watch(self, looked: asyncio.Event) -> None:
        """Holds one idle connection to the upstream broker, which says nothing on it: when the
        broker hangs it up, or refuses a new one, the broker is down and the listener stops
        listening; when the broker accepts one again, the listener listens again."""
        while not self._closed:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(*self.upstream), PROBE_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError) as err:
                self._upstream_down(f"refused a connection ({err or type(err).__name__})")
                looked.set()
                await asyncio.sleep(PROBE_INTERVAL_S)
                continue
            try:
                if not self.upstream_up:
                    await self._listen()
            except OSError as err:  # the port was taken while it was free: try again
                log.warning("%s: cannot listen again: %s", self.bootstrap, err)
                writer.close()
                await asyncio.sleep(PROBE_INTERVAL_S)
                continue
            looked.set()
            try:
                await reader.read()
            except OSError:
                pass   # reset: a killed broker
            finally:
                writer.close()

    async def _listen(self) -> None:
        if self._reserved is None:
            self._reserve()
        sock, self._reserved = self._reserved, None
        self._server = await asyncio.start_server(self._accept, sock=sock)   # listens from here
        self.upstream_up = True
        log.info("%s: listening for upstream %s:%d", self.bootstrap, *self.upstream)

    async def _upstream_accepts(self) -> bool:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(*self.upstream), PROBE_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError):
            return False
        writer.close()
        return True

    def _upstream_down(self, why: str) -> None:
        """Stop listening, keeping the port (connects to it are refused), until _watch finds the
        upstream broker accepting connections again."""
        if not self.upstream_up or self._closed:
            return
        log.info("%s: upstream %s:%d %s; refusing connections until it accepts again", self.bootstrap,
                 *self.upstream, why)
        self.upstream_up = False
        self._server.close()
        self._server = None
        try:
            self._reserve()
        except OSError as err:  # taken in the meantime: _watch tries again
            log.warning("%s: cannot keep port %d: %s", self.bootstrap, self._port, err)

    async def close(self) -> None:
        self._closed = True
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _now_ms(self) -> int:
        return self._numbers.now_ms()

    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        conn = next(self._numbers.conns)
        try:
            u_reader, u_writer = await asyncio.open_connection(*self.upstream)
        except asyncio.CancelledError:  # the proxy is closing
            c_writer.transport.abort()
            self._tasks.discard(task)
            return
        except OSError as err:
            # Accepted just before the broker went: reset, as the broker's half-open socket would be.
            log.info("connection %d: upstream %s:%d unreachable: %s", conn, *self.upstream, err)
            self._upstream_down(f"refused a connection ({err})")
            c_writer.transport.abort()
            self._tasks.discard(task)
            return
        pending: dict[int, _Pending] = {}
        up = asyncio.ensure_future(self._pump(conn, "client", c_reader, u_writer,
                                              lambda payload: self._note_request(conn, payload, pending)))
        down = asyncio.ensure_future(self._pump(conn, "upstream", u_reader, c_writer,
                                                lambda payload: self._note_response(conn, payload, pending)))
        ended = None
        try:
            done, _ = await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
            ended = next(iter(done)).result()
        except asyncio.CancelledError:
            pass  # the proxy is closing: the finally below hangs up both sides
        finally:
            for t in (up, down):
                t.cancel()
            try:
                await asyncio.gather(up, down, return_exceptions=True)
            except asyncio.CancelledError:
                pass
            if ended is not None and ended[0] == "upstream" and ended[1] != "dropped":
                # The broker hung up: if it is gone, the client's next connect must be refused.
                if not await self._upstream_accepts():
                    self._upstream_down(f"ended a connection ({ended[1]})")
            u_writer.close()
            if ended == ("upstream", "reset"):
                c_writer.transport.abort()
            else:
                c_writer.close()
            if self._record_unanswered:
                for corr, entry in pending.items():
                    self._emit(conn, entry, None, corr=corr, unanswered=True)
            self._tasks.discard(task)

    async def _pump(self, conn, side: str, reader, writer, note) -> tuple[str, str]:
        """Forward frames from `side` until a side ends; `note` records each one and returns
        the bytes to send on (the frame itself, or a response with rewritten addresses), or
        None to hang up instead (a drop_after rule). Returns which side ended and how
        ("eof", "reset", "frame error", "dropped")."""
        other = "upstream" if side == "client" else "client"
        while True:
            try:
                payload = await read_frame(reader)
            except FrameError as err:
                log.info("connection %d: %s frame error: %s", conn, side, err)
                return side, "frame error"
            except OSError:
                return side, "reset"
            if payload is None:
                return side, "eof"
            out = note(payload)
            if asyncio.iscoroutine(out):
                out = await out
            if out is None:
                return side, "dropped"
            try:
                writer.write(encode_frame(out))
                await writer.drain()
            except OSError:
                return other, "reset"

    def _note_request(self, conn, payload: bytes, pending) -> bytes:
        """Records a request; it goes upstream unchanged."""
        seq, t_ms = next(self._numbers.seqs), self._now_ms()
        try:
            req = codec.decode_request(payload)
        except Exception as err:
            # The header alone may still tell us how to read the answer.
            try:
                header = codec.peek_request_header(payload)
                entry = _Pending(seq, t_ms, header["request_api_key"], header["request_api_version"],
                                 header.get("client_id"), None, f"{type(err).__name__}: {err}", len(payload))
                corr = header["correlation_id"]
            except Exception:
                self._emit(conn, _Pending(seq, t_ms, None, None, None, None,
                                          f"{type(err).__name__}: {err}", len(payload)), None)
                return payload
        else:
            entry = _Pending(seq, t_ms, req.api_key, req.api_version, req.client_id, req.body, None, len(payload))
            corr = req.correlation_id
            if req.api_key == PRODUCE and req.body.get("acks") == 0:
                self._emit(conn, entry, None, corr=corr, no_response=True)
                return payload
        if len(pending) < MAX_IN_FLIGHT:
            pending[corr] = entry
        return payload

    async def _note_response(self, conn, payload: bytes, pending) -> bytes | None:
        corr = struct.unpack_from(">i", payload)[0] if len(payload) >= 4 else None
        entry = pending.pop(corr, None)
        if entry is None:
            self._emit(conn, _Pending(next(self._numbers.seqs), self._now_ms(), None, None, None, None, None, 0),
                       None, corr=corr, response_error=f"response to unknown correlation id {corr}",
                       response_len=len(payload))
            return payload
        if entry.api_key is None:
            self._emit(conn, entry, None, corr=corr, response_len=len(payload))
            return payload
        try:
            header, body = codec.decode_response(entry.api_key, entry.version, payload)
        except Exception as err:
            self._emit(conn, entry, None, corr=corr, response_error=f"{type(err).__name__}: {err}",
                       response_len=len(payload))
            return payload
        upstream_body = jsonable(body)   # the transcript keeps what the broker said
        out = payload
        nodes = named_brokers(entry.api_key, body)
        if nodes and rewrite_addresses(nodes, await self._addresses(nodes)):
            try:
                out = codec.encode_response(entry.api_key, entry.version, header, body)
            except Exception as err:  # forwarded as it came: the client may then leave the proxy
                log.warning("connection %d: cannot re-encode %s: %s", conn, api_name(entry.api_key), err)
                out = payload
        rule = next((d for d in self.drops if d.take(entry.api_key)), None)
        if rule is not None:
            rule.fired.append({"conn": conn, "seq": entry.seq, "correlation_id": corr})
            log.info("connection %d: dropping the answer to %s (correlation id %s)",
                     conn, api_name(entry.api_key), corr)
            self._emit(conn, entry, upstream_body, corr=corr, dropped=True)
            return None
        self._emit(conn, entry, upstream_body, corr=corr)
        return out

    def _emit(self, conn, entry: _Pending, response, corr=None, no_response=False,
              response_error=None, response_len=None, dropped=False, unanswered=False) -> None:
        ex = {"conn": conn, "seq": entry.seq, "t_ms": entry.t_ms, "client_id": entry.client_id,
              "api": api_name(entry.api_key) if entry.api_key is not None else None,
              "api_key": entry.api_key, "version": entry.version, "correlation_id": corr,
              "upstream": f"{self.upstream[0]}:{self.upstream[1]}",
              "request": jsonable(entry.request) if entry.request is not None else None,
              "response": response}
        if self.node_id is not None:
            ex["broker"] = self.node_id
        if not (no_response or unanswered):
            ex["answered_ms"] = self._now_ms()
        if entry.error is not None:
            ex["request_error"], ex["request_len"] = entry.error, entry.length
        if response_error is not None:
            ex["response_error"] = response_error
        if response_len is not None and response is None:
            ex["response_len"] = response_len
        if no_response:
            ex["no_response"] = True
        if dropped:
            ex["dropped"] = True
        if unanswered:
            ex["unanswered"] = True
        self.transcript.add(ex)


class ClusterProxy:
    """A recording proxy for a whole cluster: a listener per broker (a RecordingProxy each),
    one transcript. Clients bootstrap from `bootstrap` (a listener per upstream bootstrap
    address); each broker an answer names gets its listener on first sight, and keeps it.

        proxy = ClusterProxy("127.0.0.1:9092,127.0.0.1:9093")
        await proxy.start()
        ... clients on proxy.bootstrap ...
        proxy.brokers          # node id -> its listener (.address, .upstream, .upstream_up)
        await proxy.close()
    """

    def __init__(self, bootstrap: str | list[tuple[str, int]], transcript: Transcript | None = None,
                 host: str = "127.0.0.1"):
        from kcoord.conformance.rawclient import parse_bootstrap

        self.upstreams = ([parse_bootstrap(a) for a in bootstrap.split(",")] if isinstance(bootstrap, str)
                          else [tuple(a) for a in bootstrap])
        self.transcript = transcript or Transcript(keep=True)
        self.host = host
        self.drops: list[DropAfter] = []
        self._numbers = _Numbers()
        self._listeners: dict[tuple[str, int], RecordingProxy] = {}   # by upstream address
        self._lock: asyncio.Lock | None = None

    async def start(self) -> str:
        self._lock = asyncio.Lock()
        self._numbers.restart_clock()
        for upstream in self.upstreams:
            await self._listener(upstream, None)
        return self.bootstrap

    @property
    def bootstrap(self) -> str:
        return ",".join(self._listeners[u].bootstrap for u in self.upstreams)

    @property
    def listeners(self) -> list[RecordingProxy]:
        return list(self._listeners.values())

    @property
    def brokers(self) -> dict[int, RecordingProxy]:
        """Node id -> its listener, for every broker an answer has named."""
        return {p.node_id: p for p in self._listeners.values() if p.node_id is not None}

    def now_ms(self) -> int:
        """The transcript's clock (`t_ms`, `answered_ms`): to mark when something happened."""
        return self._numbers.now_ms()

    def drop_after(self, api: int | str, times: int = 1) -> DropAfter:
        """As RecordingProxy.drop_after, on whichever broker the requests go to."""
        rule = DropAfter(_api_key(api), times)
        self.drops.append(rule)
        return rule

    async def _addresses(self, nodes: list[dict]) -> list[tuple[str, int]]:
        return [(await self._listener((n["host"], n["port"]), node_id_of(n))).address for n in nodes]

    async def _listener(self, upstream: tuple[str, int], node_id: int | None) -> RecordingProxy:
        async with self._lock:
            proxy = self._listeners.get(upstream)
            if proxy is None and node_id is not None:
                # A broker that came back on another address keeps its listener.
                proxy = next((p for p in self._listeners.values() if p.node_id == node_id), None)
                if proxy is not None:
                    log.info("broker %d moved from %s:%d to %s:%d", node_id, *proxy.upstream, *upstream)
                    del self._listeners[proxy.upstream]
                    proxy.upstream = upstream
                    self._listeners[upstream] = proxy
            if proxy is None:
                proxy = RecordingProxy(upstream, self.transcript, (self.host, 0), node_id=node_id,
                                       numbers=self._numbers, drops=self.drops, addresses=self._addresses,
                                       record_unanswered=True)
                await proxy.start()
                self._listeners[upstream] = proxy
            elif node_id is not None:
                proxy.node_id = node_id
            return proxy

    async def close(self) -> None:
        for proxy in list(self._listeners.values()):
            await proxy.close()


class ProxyThread:
    """An event loop in a background thread hosting proxies, for blocking callers (tests,
    client-process scenarios)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kcoord-recorder", daemon=True)
        self._thread.start()
        self._proxies: list[RecordingProxy | ClusterProxy] = []

    def call(self, coro, timeout: float = 30.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def proxy(self, upstream: str | tuple[str, int], transcript: Transcript | None = None,
              listen: tuple[str, int] = ("127.0.0.1", 0)) -> RecordingProxy:
        if isinstance(upstream, str):
            from kcoord.conformance.rawclient import parse_bootstrap
            upstream = parse_bootstrap(upstream)
        p = RecordingProxy(upstream, transcript or Transcript(keep=True), listen)
        self.call(p.start())
        self._proxies.append(p)
        return p

    def cluster(self, bootstrap: str, transcript: Transcript | None = None) -> ClusterProxy:
        """A ClusterProxy in front of the cluster `bootstrap` names; clients use its `.bootstrap`."""
        p = ClusterProxy(bootstrap, transcript)
        self.call(p.start())
        self._proxies.append(p)
        return p

    def close_proxy(self, p: RecordingProxy | ClusterProxy) -> None:
        self.call(p.close())
        self._proxies.remove(p)

    def stop(self) -> None:
        for p in list(self._proxies):
            try:
                self.close_proxy(p)
            except Exception:
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_forever(upstream: tuple[str, int], listen: tuple[str, int], out: str,
                on_ready: Callable[[tuple[str, int]], None] | None = None,
                advertised: tuple[str, int] | None = None) -> int:
    """`kcoord record`: proxy until SIGINT/SIGTERM."""
    import signal

    async def main():
        transcript = Transcript(out)
        proxy = RecordingProxy(upstream, transcript, listen, advertised)
        address = await proxy.start()
        if on_ready:
            on_ready(address)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await proxy.close()
        transcript.close()
        return 0

    return asyncio.run(main())

