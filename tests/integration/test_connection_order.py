"""A parked JoinGroup holds back later requests on its connection, like a Kafka broker."""
import socket
import struct
import time

from kcoord.testing.plugin import start_server
from wire import codec
from wire.framing import encode_frame


def _recv_frame(sock):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            assert chunk, "server closed the connection"
            buf += chunk
        return buf
    size = struct.unpack(">i", exact(4))[0]
    return exact(size)


def test_responses_leave_in_request_order_while_join_is_parked():
    server = start_server(initial_rebalance_delay_ms=1500)
    try:
        host, port = server.bootstrap.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            join = codec.encode_request(11, 3, {"correlation_id": 1, "client_id": "raw"}, {
                "group_id": "order", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                "member_id": "", "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]})
            versions = codec.encode_request(18, 0, {"correlation_id": 2, "client_id": "raw"}, {})
            metadata = codec.encode_request(3, 1, {"correlation_id": 3, "client_id": "raw"}, {"topics": []})
            started = time.monotonic()
            sock.sendall(encode_frame(join) + encode_frame(versions) + encode_frame(metadata))
            seen = []
            for _ in range(3):
                payload = _recv_frame(sock)
                seen.append((struct.unpack_from(">i", payload)[0], time.monotonic() - started))
        assert [c for c, _ in seen] == [1, 2, 3]
        # ApiVersions waited behind the parked join (the initial delay), not answered first.
        assert seen[1][1] >= 1.4
    finally:
        server.stop()


def test_malformed_frame_closes_only_its_connection():
    server = start_server()
    try:
        host, port = server.bootstrap.rsplit(":", 1)
        good = socket.create_connection((host, int(port)), timeout=5)
        bad = socket.create_connection((host, int(port)), timeout=5)
        bad.sendall(struct.pack(">i", 8) + struct.pack(">hhi", 11, 3, 7))  # header only: body missing
        assert bad.recv(10) == b""  # closed
        good.sendall(encode_frame(codec.encode_request(18, 3, {"correlation_id": 9, "client_id": "g"},
                                                       {"client_software_name": "t", "client_software_version": "1"})))
        header, body = codec.decode_response(18, 3, _recv_frame(good))
        assert header.correlation_id == 9 and body.error_code == 0
        good.sendall(encode_frame(struct.pack(">hhih", 18, 99, 10, -1)))  # unknown ApiVersions version
        header, body = codec.decode_response(18, 0, _recv_frame(good))
        assert header.correlation_id == 10 and body.error_code == 35
        assert {a.api_key for a in body.api_keys} >= {11, 12, 13, 14}
        good.sendall(struct.pack(">i", -5))  # negative frame size: closed
        assert good.recv(10) == b""
        bad.close()
        good.close()
    finally:
        server.stop()


def test_pipelined_answers_small_and_large_leave_in_order_before_a_malformed_frame_closes():
    # Small answers are written when the loop's turn ends, large ones at once: neither may
    # overtake the other, and a malformed frame closes the connection only after the answers
    # to every request before it are out. Every request here is answered without waiting, so
    # all five answers are made in one turn of the loop.
    from kcoord.protocol_client import Connection
    from kcoord.testing.brokers import create_topic

    server = start_server()
    try:
        create_topic(server.bootstrap, "big", 8)
        with Connection.to(server.bootstrap, 10.0) as conn:   # 8 offsets with 4,000 bytes of metadata each
            committed = conn.call(8, 8, {"group_id": "big", "generation_id_or_member_epoch": -1, "member_id": "",
                                         "group_instance_id": None, "topics": [{"name": "big", "partitions": [
                                             {"partition_index": p, "committed_offset": p, "committed_leader_epoch": -1,
                                              "committed_metadata": "m" * 4000} for p in range(8)]}]})
            assert {p.error_code for p in committed.topics[0].partitions} == {0}
        host, port = server.bootstrap.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            def versions(c):
                return encode_frame(codec.encode_request(18, 0, {"correlation_id": c, "client_id": "raw"}, {}))
            fetch = encode_frame(codec.encode_request(9, 7, {"correlation_id": 3, "client_id": "raw"}, {
                "group_id": "big", "topics": None, "require_stable": False}))
            malformed = struct.pack(">i", 8) + struct.pack(">hhi", 11, 3, 7)  # header only: body missing
            sock.sendall(versions(1) + versions(2) + fetch + versions(4) + versions(5) + malformed)
            seen = []
            for _ in range(5):
                payload = _recv_frame(sock)
                seen.append((struct.unpack_from(">i", payload)[0], len(payload)))
            assert sock.recv(10) == b""  # then closed
        assert [c for c, _ in seen] == [1, 2, 3, 4, 5]
        assert seen[2][1] > 32000 > max(n for c, n in seen if c != 3)
    finally:
        server.stop()


def test_a_client_that_never_reads_its_answers_cannot_grow_the_server(tmp_path):
    # Answers wait in the transport until the client reads them; then the requests it goes on
    # sending must wait in its own socket, not in the server's memory (they once did: 6.7 GB
    # read ahead in 20 s).
    import subprocess

    from kcoord.testing.reference_kafka import free_port
    from tests.fuzz.test_live_fuzz import rss_mib
    from kcoord.testing.serve_process import serve

    port = free_port()
    proc = serve(tmp_path, port, log=subprocess.DEVNULL)
    try:
        before = rss_mib(proc.pid)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.settimeout(0.2)
            chunk = encode_frame(codec.encode_request(18, 0, {"correlation_id": 1, "client_id": "f"}, {})) * 10000
            sent, until = 0, time.monotonic() + 5
            while time.monotonic() < until:
                try:
                    sent += sock.send(chunk)
                except socket.timeout:
                    pass
            grown = rss_mib(proc.pid) - before
        assert sent < 64 << 20, f"the server read {sent >> 20} MiB of requests whose answers nobody read"
        assert grown < 64, f"the server grew {grown:.0f} MiB"
    finally:
        proc.kill()
        proc.wait()
