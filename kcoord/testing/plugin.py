"""pytest plugin: the `kcoord_server` fixture.

Installed with kcoord (entry point `pytest11`), so any project's tests can use:

    def test_my_consumer(kcoord_server):
        consumer = KafkaConsumer("t", group_id="g", bootstrap_servers=kcoord_server.bootstrap)
        ...
        kcoord_server.wait_for("g", state="Stable", members=1)

The server runs in-process on a free port with group.initial.rebalance.delay.ms
set to 0, on its own event loop thread, so blocking and asyncio clients both work.
State is in memory only unless the test asks otherwise with the `kcoord` marker,
whose keywords are ServerConfig fields:

    @pytest.mark.kcoord(data_dir=str(tmp_path), default_partitions=3)
"""
from __future__ import annotations

import pytest

from kcoord.config import ServerConfig

# The server itself is imported when a test first starts one: a pytest plugin is
# loaded before coverage tools start measuring, and a user's suite that never
# asks for kcoord should not pay for importing it.


class KcoordHandle:
    def __init__(self, thread):
        self._thread = thread

    @property
    def bootstrap(self) -> str:
        return self._thread.bootstrap

    @property
    def app(self):
        return self._thread.app

    @property
    def config(self):
        return self._thread.config

    @property
    def coordinator(self):
        """The CoordinatorService (its `.core` is the pure GroupCoordinator)."""
        return self._thread.app.coordinator

    @property
    def http_url(self) -> str | None:
        """Base URL of the admin endpoint when started with http_host set, else None."""
        http = self._thread.app.http
        return None if http is None else f"http://{http.host}:{http.port}"

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> committed offset, read from the coordinator."""
        core = self._thread.app.coordinator.core
        return self._thread.call(lambda: _on_loop(lambda: {k: v.offset for k, v in core.offsets.all(group).items()}))

    def call(self, coro_factory, timeout: float | None = 30.0):
        return self._thread.call(coro_factory, timeout)

    def wait_for(self, group: str, timeout: float = 30.0, **conditions):
        """Block until `group` matches, e.g. wait_for("g", state="Stable", members=2)."""
        coordinator = self._thread.app.coordinator
        return self._thread.call(lambda: coordinator.wait_for(group, timeout=timeout, **conditions),
                                 timeout + 5)


    # ---- fault injection (kcoord.faults) ----
    def fault(self, rule=None, **spec):
        """Add a fault rule: fault(api="Heartbeat", error="NOT_COORDINATOR", times=2); returns its id."""
        faults = self._thread.app.faults

        async def add():
            return faults.add(rule if rule is not None else spec).id
        return self.call(add)

    def remove_fault(self, rule_id: int) -> bool:
        faults = self._thread.app.faults

        async def remove():
            return faults.remove(rule_id)
        return self.call(remove)

    def clear_faults(self) -> None:
        faults = self._thread.app.faults

        async def clear():
            faults.clear()
        self.call(clear)

    def faults_fired(self) -> list[dict]:
        return list(self._thread.app.faults.fired_log)

    def requests_seen(self, api_key: int) -> int:
        """How many requests with `api_key` reached the server so far."""
        return self._thread.app.faults.seen.get(api_key, 0)

    def requests_after(self, seq: int, api_key: int, group: str | None = None) -> int:
        """Requests with `api_key` (for `group`) that arrived after request number `seq`
        (the "seq" of a faults_fired() entry): did the client recover as it should?"""
        return sum(1 for s, key, g in list(self._thread.app.faults.history)
                   if s > seq and key == api_key and (group is None or g == group))

    def expire_member(self, group: str, member_id: str) -> bool:
        return self.call(lambda: self._thread.app.faults.expire_member(group, member_id))

    def force_rebalance(self, group: str) -> bool:
        return self.call(lambda: self._thread.app.faults.force_rebalance(group))

    # ---- manual clock ----
    @property
    def clock(self):
        return self._thread.app.coordinator.core.timer

    def advance(self, ms: int) -> None:
        """Move the coordinator's manual clock by `ms` (start_server(manual_clock=True)); due timers fire."""
        from kcoord.coordinator.clock import ManualTimer

        clock = self.clock
        if not isinstance(clock, ManualTimer):
            raise RuntimeError("advance() needs a server started with manual_clock=True")

        async def step():
            clock.advance(ms)
        self.call(step)


def start_server(manual_clock: bool = False, **config):
    """A server on a free port; `manual_clock=True` runs the coordinator on a ManualTimer
    that only moves with KcoordHandle.advance(ms)."""
    from kcoord.coordinator.clock import ManualTimer
    from kcoord.testing.server_thread import ServerThread

    cfg = ServerConfig(**{"listen_port": 0, "initial_rebalance_delay_ms": 0, **config})
    return ServerThread(cfg, clock=ManualTimer() if manual_clock else None).start()


async def _on_loop(fn):
    return fn()


def pytest_configure(config):
    config.addinivalue_line("markers", "kcoord(**config): ServerConfig fields for the kcoord_server fixture "
                                       "(e.g. data_dir=..., http_host='127.0.0.1')")


@pytest.fixture
def kcoord_server(request):
    marker = request.node.get_closest_marker("kcoord")
    thread = start_server(**(marker.kwargs if marker else {}))
    try:
        yield KcoordHandle(thread)
    finally:
        thread.stop()


@pytest.fixture
def kcoord_manual_clock_server():
    """Like kcoord_server, but coordinator time moves only with `advance(ms)`."""
    thread = start_server(manual_clock=True)
    try:
        yield KcoordHandle(thread)
    finally:
        thread.stop()
