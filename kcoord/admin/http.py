"""The HTTP admin endpoint (`kcoord serve --http HOST:PORT`, off by default).

A deliberately small HTTP/1.1 server on asyncio streams: the admin surface is a
handful of JSON/text routes, so a web framework would be weight without use.
Features register routes on `AdminHttp.routes`; each route is an async function
taking an `HttpRequest` and returning an `HttpResponse`.

Paths may hold `{name}` segments, handed to the route in `request.params`.
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Awaitable, Callable
from urllib.parse import parse_qs, unquote, urlsplit

log = logging.getLogger("kcoord.http")

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 10 * 1024 * 1024


@dataclass
class HttpRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    params: dict[str, str] = field(default_factory=dict)

    def json(self):
        """The body as JSON; raises HttpError(400) when it is not."""
        try:
            return json.loads(self.body or b"null")
        except ValueError as err:
            raise HttpError(400, f"body is not JSON: {err}") from None


@dataclass
class HttpResponse:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"

    @classmethod
    def json(cls, value, status: int = 200) -> "HttpResponse":
        return cls(status, json.dumps(value, indent=1, default=str).encode() + b"\n")

    @classmethod
    def text(cls, value: str, status: int = 200, content_type: str = "text/plain; charset=utf-8"):
        return cls(status, value.encode(), content_type)


class HttpError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


Route = Callable[[HttpRequest], Awaitable[HttpResponse]]
_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 413: "Payload Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}


class AdminHttp:
    def __init__(self, host: str, port: int):
        self.host = host
        self.port = port
        self._routes: list[tuple[str, re.Pattern, Route]] = []
        self._server: asyncio.base_events.Server | None = None
        # Each returns None when healthy, else why not; /healthz answers 503 with the reasons.
        self.health_checks: list[Callable[[], str | None]] = []
        self.add("GET", "/healthz", self._healthz)

    def add(self, method: str, path: str, route: Route) -> None:
        """Register `route` for `method` on `path` (with optional `{name}` segments)."""
        pattern = re.compile("^" + re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", re.escape(path)) + "$")
        self._routes.append((method.upper(), pattern, route))

    async def _healthz(self, request: HttpRequest) -> HttpResponse:
        problems = [p for p in (check() for check in self.health_checks) if p]
        if problems:
            return HttpResponse.text("".join(p + "\n" for p in problems), status=503)
        return HttpResponse.text("ok\n")

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]
        return self.host, self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _resolve(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        allowed = False
        for route_method, pattern, route in self._routes:
            found = pattern.match(path)
            if found:
                if route_method == method:
                    return route, {k: unquote(v) for k, v in found.groupdict().items()}
                allowed = True
        raise HttpError(405 if allowed else 404, f"no route for {method} {path}")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                response = await self._dispatch(request)
                head = (f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Status')}\r\n"
                        f"Content-Type: {response.content_type}\r\n"
                        f"Content-Length: {len(response.body)}\r\n\r\n")
                writer.write(head.encode() + response.body)
                await writer.drain()
                if request.headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        except HttpError as err:  # unreadable request: answer once, then close
            writer.write(f"HTTP/1.1 {err.status} {_REASONS.get(err.status, 'Error')}\r\n"
                         f"Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
        finally:
            writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> HttpRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as err:
            if err.partial.strip():
                raise HttpError(400, "truncated request head") from None
            return None
        if len(head) > MAX_HEADER_BYTES:
            raise HttpError(413, "request head too large")
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            raise HttpError(400, "malformed request line") from None
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            raise HttpError(400, "bad Content-Length") from None
        if length < 0 or length > MAX_BODY_BYTES:
            raise HttpError(413, "body too large")
        body = await reader.readexactly(length) if length else b""
        url = urlsplit(target)
        return HttpRequest(method.upper(), url.path, parse_qs(url.query), headers, body)

    async def _dispatch(self, request: HttpRequest) -> HttpResponse:
        try:
            route, request.params = self._resolve(request.method, request.path)
            return await route(request)
        except HttpError as err:
            return HttpResponse.json({"error": err.message}, err.status)
        except Exception as err:
            log.exception("admin endpoint failed on %s %s", request.method, request.path)
            return HttpResponse.json({"error": f"{type(err).__name__}: {err}"}, 500)
