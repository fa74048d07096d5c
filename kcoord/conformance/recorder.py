"""A recording Kafka-protocol proxy: every request/response exchange as a JSON line.

Each client connection gets its own upstream connection. Frames are split both
ways, decoded with `wire/` (the request header tells which API and version the
matching response has), written to the transcript and forwarded. Responses that
name broker addresses (Metadata, FindCoordinator, DescribeCluster) are
re-encoded to point at the proxy, so a client never leaves it: one proxy per
broker, which is enough for the single-node brokers this is used with.

A transcript line:

    {"conn": 3, "seq": 17, "t_ms": 812, "client_id": "kafka-python-3.0.12",
     "api": "JoinGroup", "api_key": 11, "version": 5, "correlation_id": 4,
     "request": {...decoded fields...}, "response": {...decoded fields...}}

A frame that does not decode is still forwarded unchanged; its exchange carries
`request_error`/`response_error` and the frame's length instead of its fields.

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
import struct
import threading
import time
import uuid
from typing import Callable

from wire import codec
from wire.framing import FrameError, encode_frame, read_frame
from wire.specs import api_keys

log = logging.getLogger("kcoord.recorder")

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER, PRODUCE = 3, 10, 60, 0
# Record payloads (Produce, Fetch) are summarised: the transcript is about
# coordination, and a summary keeps each line (and the in-memory copy) small.
MAX_BYTES_RECORDED = 512
BYTES_HEAD = 64
# Requests a client may pipeline on one connection before we stop remembering
# them: a broker answers in order, so more than this is a broken peer.
MAX_IN_FLIGHT = 1024


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


def rewrite_addresses(api_key: int, body: dict, host: str, port: int) -> bool:
    """Point the broker addresses of a decoded response at (host, port); True if any changed."""
    changed = False

    def fix(node):
        nonlocal changed
        if node.get("host") and (node["host"], node.get("port")) != (host, port):
            node["host"], node["port"] = host, port
            changed = True

    if api_key in (METADATA, DESCRIBE_CLUSTER):
        for b in body.get("brokers") or []:
            fix(b)
    elif api_key == FIND_COORDINATOR:
        if "coordinators" in body:  # v4+: one entry per key
            for c in body["coordinators"] or []:
                fix(c)
        elif body.get("error_code", 0) == 0:
            fix(body)
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


class _Pending:
    __slots__ = ("seq", "t_ms", "api_key", "version", "client_id", "request", "error", "length")

    def __init__(self, seq, t_ms, api_key, version, client_id, request, error, length):
        self.seq, self.t_ms, self.api_key, self.version = seq, t_ms, api_key, version
        self.client_id, self.request, self.error, self.length = client_id, request, error, length


class RecordingProxy:
    """Accepts clients on `listen`, forwards each connection to `upstream`, records exchanges."""

    def __init__(self, upstream: tuple[str, int], transcript: Transcript,
                 listen: tuple[str, int] = ("127.0.0.1", 0), advertised: tuple[str, int] | None = None):
        self.upstream = upstream
        self.transcript = transcript
        self.listen = listen
        self._advertised = advertised
        self._server: asyncio.base_events.Server | None = None
        self._conns = itertools.count(1)
        self._seq = itertools.count(1)
        self._start = time.monotonic()
        self._tasks: set[asyncio.Task] = set()
        self.address: tuple[str, int] | None = None
        self.drops: list[DropAfter] = []

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

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._accept, self.listen[0], self.listen[1])
        sock_host, sock_port = self._server.sockets[0].getsockname()[:2]
        self.address = self._advertised or (self.listen[0] if self.listen[0] not in ("", "0.0.0.0") else sock_host,
                                            sock_port)
        self._start = time.monotonic()
        return self.address

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _now_ms(self) -> int:
        return int((time.monotonic() - self._start) * 1000)

    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        conn = next(self._conns)
        try:
            u_reader, u_writer = await asyncio.open_connection(*self.upstream)
        except OSError as err:
            log.warning("connection %d: upstream %s:%d unreachable: %s", conn, *self.upstream, err)
            c_writer.close()
            self._tasks.discard(task)
            return
        pending: dict[int, _Pending] = {}
        up = asyncio.ensure_future(self._pump(conn, "client", c_reader, u_writer,
                                              lambda payload: self._note_request(conn, payload, pending)))
        down = asyncio.ensure_future(self._pump(conn, "upstream", u_reader, c_writer,
                                                lambda payload: self._note_response(conn, payload, pending)))
        try:
            await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the proxy is closing: the finally below hangs up both sides
        finally:
            for t in (up, down):
                t.cancel()
            try:
                await asyncio.gather(up, down, return_exceptions=True)
            except asyncio.CancelledError:
                pass
            for w in (c_writer, u_writer):
                w.close()
            self._tasks.discard(task)

    async def _pump(self, conn, side: str, reader, writer, note) -> None:
        """Forward frames from `side` until it closes; `note` records each one and returns
        the bytes to send on (the frame itself, or a response with rewritten addresses), or
        None to hang up instead (a drop_after rule)."""
        while True:
            try:
                payload = await read_frame(reader)
            except FrameError as err:
                log.info("connection %d: %s frame error: %s", conn, side, err)
                return
            if payload is None:
                return
            out = note(payload)
            if out is None:
                return
            writer.write(encode_frame(out))
            await writer.drain()

    def _note_request(self, conn, payload: bytes, pending) -> bytes:
        """Records a request; it goes upstream unchanged."""
        seq, t_ms = next(self._seq), self._now_ms()
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

    def _note_response(self, conn, payload: bytes, pending) -> bytes | None:
        corr = struct.unpack_from(">i", payload)[0] if len(payload) >= 4 else None
        entry = pending.pop(corr, None)
        if entry is None:
            self._emit(conn, _Pending(next(self._seq), self._now_ms(), None, None, None, None, None, 0), None,
                       corr=corr, response_error=f"response to unknown correlation id {corr}",
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
        out = payload
        if entry.api_key in (METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER):
            upstream_body = jsonable(body)
            if rewrite_addresses(entry.api_key, body, *self.address):
                try:
                    out = codec.encode_response(entry.api_key, entry.version, header, body)
                except Exception as err:  # forwarded as it came: the client may then leave the proxy
                    log.warning("connection %d: cannot re-encode %s: %s", conn, api_name(entry.api_key), err)
                    out = payload
            self._emit(conn, entry, upstream_body, corr=corr)
            return out
        rule = next((d for d in self.drops if d.take(entry.api_key)), None)
        if rule is not None:
            rule.fired.append({"conn": conn, "seq": entry.seq, "correlation_id": corr})
            log.info("connection %d: dropping the answer to %s (correlation id %s)",
                     conn, api_name(entry.api_key), corr)
            self._emit(conn, entry, jsonable(body), corr=corr, dropped=True)
            return None
        self._emit(conn, entry, jsonable(body), corr=corr)
        return out

    def _emit(self, conn, entry: _Pending, response, corr=None, no_response=False,
              response_error=None, response_len=None, dropped=False) -> None:
        ex = {"conn": conn, "seq": entry.seq, "t_ms": entry.t_ms, "client_id": entry.client_id,
              "api": api_name(entry.api_key) if entry.api_key is not None else None,
              "api_key": entry.api_key, "version": entry.version, "correlation_id": corr,
              "request": jsonable(entry.request) if entry.request is not None else None,
              "response": response}
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
        self.transcript.add(ex)


class ProxyThread:
    """An event loop in a background thread hosting proxies, for blocking callers (tests,
    client-process scenarios)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kcoord-recorder", daemon=True)
        self._thread.start()
        self._proxies: list[RecordingProxy] = []

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

    def close_proxy(self, p: RecordingProxy) -> None:
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

