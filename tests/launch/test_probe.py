"""launch/probe.py: free ports are never handed out twice by one process; ``http_ok`` over
HTTPS trusts the context it is given."""

from __future__ import annotations

import socket

import pytest

from launch import probe

pytestmark = pytest.mark.unit


class _SamePort:
    """A socket whose kernel hands out 40001 twice, then 40002: what two free_port calls in a
    row can get when the first port is free again by the second call."""

    ports = iter([40001, 40001, 40002])

    def __init__(self, *args: object) -> None:
        self.port = next(self.ports)

    def __enter__(self) -> _SamePort:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def bind(self, address: tuple[str, int]) -> None:
        pass

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_a_port_the_kernel_gives_twice_is_handed_out_once(monkeypatch):
    monkeypatch.setattr(probe, "_handed", set())
    monkeypatch.setattr(probe.socket, "socket", _SamePort)
    assert [probe.free_port(), probe.free_port()] == [40001, 40002]


def test_free_ports_are_distinct_and_bindable():
    ports = [probe.free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))


def test_http_ok_over_https_trusts_the_context_it_is_given(tmp_path):
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from apm.tls import client_context
    from tests.support.certs import make_ca
    from tests.support.http import uvicorn_thread

    ca, other = make_ca(tmp_path / "ca"), make_ca(tmp_path / "other", "other")
    cert, key = ca.issue("probe")

    async def ready(request):
        return JSONResponse({"status": "ready"})

    app = Starlette(routes=[Route("/readyz", ready)])
    with uvicorn_thread(app, ssl_certfile=str(cert), ssl_keyfile=str(key)) as port:
        url = f"https://127.0.0.1:{port}/readyz"
        assert probe.http_ok(url, context=client_context(ca.cert))
        assert not probe.http_ok(url, context=client_context(other.cert))  # a TLS failure
        assert not probe.http_ok(f"http://127.0.0.1:{port}/readyz")  # plain HTTP to TLS
