"""The HTTP admin endpoint's own plumbing: routing, errors, keep-alive, bad requests."""
import http.client
import socket

import pytest

from kcoord.admin.http import HttpResponse
from kcoord.testing.plugin import start_server


@pytest.fixture
def server():
    s = start_server(http_host="127.0.0.1", http_port=0)
    yield s
    s.stop()


def _get(server, method, path, body=None):
    conn = http.client.HTTPConnection(server.app.http.host, server.app.http.port, timeout=10)
    conn.request(method, path, body=body)
    resp = conn.getresponse()
    return resp.status, resp.read()


def test_healthz_answers_ok(server):
    assert _get(server, "GET", "/healthz") == (200, b"ok\n")


def test_unknown_path_is_404_and_wrong_method_405(server):
    assert _get(server, "GET", "/nope")[0] == 404
    assert _get(server, "POST", "/healthz")[0] == 405


def test_routes_with_parameters_and_json_bodies(server):
    async def echo(request):
        return HttpResponse.json({"id": request.params["id"], "body": request.json()})

    server.app.http.add("POST", "/echo/{id}", echo)
    status, body = _get(server, "POST", "/echo/a%20b", body=b'{"x": 1}')
    assert status == 200 and b'"a b"' in body and b'"x": 1' in body
    assert _get(server, "POST", "/echo/1", body=b"not json")[0] == 400


def test_keep_alive_serves_several_requests_on_one_connection(server):
    conn = http.client.HTTPConnection(server.app.http.host, server.app.http.port, timeout=10)
    for _ in range(3):
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"ok\n")


def test_garbage_closes_only_that_connection(server):
    with socket.create_connection((server.app.http.host, server.app.http.port), timeout=10) as s:
        s.sendall(b"\x00\x01garbage\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    assert _get(server, "GET", "/healthz")[0] == 200
