"""connections.max.idle.ms: a connection that sends nothing for that long is closed, as Kafka's
selector expires idle channels; one waiting on a parked request, or sending, is not."""
import socket
import time

from kcoord.protocol_client import Connection
from kcoord.testing.plugin import start_server

IDLE_MS = 400


def _closed_within(conn: Connection, seconds: float) -> float | None:
    """Seconds until the server closed the connection (None: still open after `seconds`)."""
    start = time.monotonic()
    conn.sock.settimeout(seconds)
    try:
        if conn.sock.recv(1) == b"":
            return time.monotonic() - start
    except socket.timeout:
        return None
    except ConnectionResetError:
        return time.monotonic() - start
    raise AssertionError("the server sent bytes nobody asked for")


def test_an_idle_connection_is_closed_after_the_limit_and_counted():
    server = start_server(connections_max_idle_ms=IDLE_MS)
    try:
        before = server.app.server.limit_hits["connections.max.idle.ms"]
        conn = Connection.to(server.bootstrap, client_id="idle")
        assert conn.call(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
        took = _closed_within(conn, 5)
        # Closed no earlier than the limit, and at most one sweep (a tenth of it) plus slack later.
        assert took is not None and IDLE_MS / 1000 - 0.05 <= took <= IDLE_MS / 1000 * 1.1 + 0.5, took
        assert server.app.server.limit_hits["connections.max.idle.ms"] == before + 1
    finally:
        server.stop()


def test_a_parked_request_and_a_talking_client_keep_their_connections():
    # The JoinGroup waits out the 1.5 s initial delay: longer than the idle limit, but not idle.
    server = start_server(connections_max_idle_ms=IDLE_MS, initial_rebalance_delay_ms=1500)
    try:
        parked = Connection.to(server.bootstrap, client_id="parked", timeout=10)
        join = {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
                "group_instance_id": "i", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}
        started = time.monotonic()
        answer = parked.call(11, 5, join)
        assert answer.error_code == 0 and time.monotonic() - started >= 1.4
        talking = Connection.to(server.bootstrap, client_id="talking")
        for _ in range(10):   # 2 s of a request every 0.2 s
            assert talking.call(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0
            time.sleep(0.2)
        # Only the parked connection went: idle since its answer came, 2 s ago.
        assert server.app.server.limit_hits["connections.max.idle.ms"] == 1
        assert _closed_within(talking, 0.1) is None
    finally:
        server.stop()
