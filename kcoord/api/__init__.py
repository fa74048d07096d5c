"""Request handlers: one module per Kafka API, each translating wire messages
into calls on the broker/coordinator and back.

A handler is registered with the versions it serves; ApiVersions advertises
exactly the registry, so a client never sees an API that is not implemented.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Awaitable, Callable

from wire.types import Message

HandlerFn = Callable[["RequestContext", Message], Awaitable[dict | None]]


@dataclass
class RequestContext:
    broker: object            # kcoord.broker.Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    connection: object        # kcoord.server.Connection


@dataclass
class Handler:
    api_key: int
    name: str
    min_version: int
    max_version: int
    fn: HandlerFn
    # Produce with acks=0 sends no response; the handler returns None then.
    may_skip_response: bool = False


HANDLERS: dict[int, Handler] = {}


def handles(api_key: int, name: str, min_version: int, max_version: int, *, may_skip_response=False):
    def register(fn: HandlerFn) -> HandlerFn:
        HANDLERS[api_key] = Handler(api_key, name, min_version, max_version, fn, may_skip_response)
        return fn
    return register


def load_all() -> dict[int, Handler]:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return HANDLERS
