"""pytest plugin: the `kcoord_server` fixture.

Installed with kcoord (entry point `pytest11`), so any project's tests can use:

    def test_my_consumer(kcoord_server):
        consumer = KafkaConsumer("t", group_id="g", bootstrap_servers=kcoord_server.bootstrap)
        ...
        kcoord_server.wait_for("g", state="Stable", members=1)

The server runs in-process on a free port with group.initial.rebalance.delay.ms
set to 0, on its own event loop thread, so blocking and asyncio clients both work.
"""
from __future__ import annotations

import pytest

from kcoord.config import ServerConfig
from kcoord.testing.server_thread import ServerThread


class KcoordHandle:
    def __init__(self, thread: ServerThread):
        self._thread = thread

    @property
    def bootstrap(self) -> str:
        return self._thread.bootstrap

    @property
    def app(self):
        return self._thread.app

    def call(self, coro_factory, timeout: float | None = 30.0):
        return self._thread.call(coro_factory, timeout)

    def wait_for(self, group: str, timeout: float = 30.0, **conditions):
        """Block until `group` matches, e.g. wait_for("g", state="Stable", members=2)."""
        coordinator = self._thread.app.coordinator
        return self._thread.call(lambda: coordinator.wait_for(group, timeout=timeout, **conditions),
                                 timeout + 5)


def start_server(**config) -> ServerThread:
    cfg = ServerConfig(**{"listen_port": 0, "initial_rebalance_delay_ms": 0, **config})
    return ServerThread(cfg).start()


@pytest.fixture
def kcoord_server():
    thread = start_server()
    try:
        yield KcoordHandle(thread)
    finally:
        thread.stop()
