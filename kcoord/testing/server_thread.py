"""Run a kcoord server on its own event loop in a background thread.

Blocking clients (kafka-python, confluent-kafka, a Java subprocess) and asyncio
clients alike can then talk to it from the test's thread.
"""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future

from kcoord.app import Kcoord
from kcoord.config import ServerConfig


class ServerThread:
    def __init__(self, config: ServerConfig | None = None, clock=None):
        self.config = config or ServerConfig(listen_port=0, initial_rebalance_delay_ms=0)
        self._clock = clock
        self.app: Kcoord | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None

    def start(self, timeout: float = 10.0) -> "ServerThread":
        ready: Future = Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="kcoord-server", daemon=True)
        self._thread.start()
        ready.result(timeout)
        return self

    def _run(self, ready: Future) -> None:
        async def main():
            self.loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                self.app = Kcoord(self.config, clock=self._clock)
                await self.app.start()
            except BaseException as exc:  # surface start-up failures in the test thread
                ready.set_exception(exc)
                return
            ready.set_result(True)
            await self._stopped.wait()
            await self.app.close()

        asyncio.run(main())

    @property
    def bootstrap(self) -> str:
        return self.app.bootstrap

    def call(self, coro_factory, timeout: float | None = 30.0):
        """Run `coro_factory()` on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro_factory(), self.loop).result(timeout)

    def settle(self, group_id: str, quiet_s: float = 3.0, timeout: float = 90.0) -> int:
        """Wait until the group is Stable and its generation has held still for `quiet_s`;
        returns that generation. A stock client may rejoin by itself right after a
        rebalance (kafka-python's leader does when its topic metadata arrives after it
        assigned, on Kafka too): a scenario that then counts rebalances starts from here."""
        last, since = None, time.monotonic()
        deadline = since + timeout
        while time.monotonic() < deadline:
            group = self.app.coordinator.runtime.group(group_id)
            now = None if group is None else (str(group.state), group.generation)
            if now != last:
                last, since = now, time.monotonic()
            elif now is not None and now[0] == "Stable" and time.monotonic() - since >= quiet_s:
                return now[1]
            time.sleep(0.1)
        raise AssertionError(f"group {group_id} did not settle within {timeout}s: {last}")

    def stop(self, timeout: float = 10.0) -> None:
        if self.loop is not None and self._stopped is not None:
            self.loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
