"""The load balancer's TLS listener for real: Debian's nginx on the configuration
``launch.cluster.nginx`` renders, in front of an HTTP upstream on loopback. HTTPS through it
with the CA's trust, another CA refused at the handshake, plain HTTP to the port answered
with nginx's 400; with ``tls_client_ca``, a request without a client certificate of that CA
is a 400 and never reaches the upstream."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from apm.tls import client_context
from launch.cluster import nginx
from launch.probe import free_port
from tests.support.certs import Ca, make_ca
from tests.support.debs import require
from tests.support.http import uvicorn_thread

pytestmark = pytest.mark.integration


@contextmanager
def _lb(tmp_path: Path, ca: Ca, client_ca: Path | None = None) -> Iterator[tuple[str, list[str]]]:
    """nginx with TLS in front of a recording upstream: (https base URL, paths it got)."""
    binary = require("nginx", "nginx")
    seen: list[str] = []

    async def ingest(request: Request) -> JSONResponse:
        seen.append(request.url.path)
        return JSONResponse({"accepted": 0}, status_code=202)

    upstream_app = Starlette(routes=[Route("/v1/metrics", ingest, methods=["POST"])])
    cert, key = ca.issue("lb")
    with uvicorn_thread(upstream_app) as upstream:
        port = free_port()
        cfg = nginx.LbConfig(
            "127.0.0.1",
            port,
            [f"127.0.0.1:{upstream}"],
            tmp_path / "lb",
            tls_cert=cert,
            tls_key=key,
            tls_client_ca=client_ca,
        )
        cfg.home.mkdir(parents=True, exist_ok=True)
        nginx.write(cfg)
        proc = subprocess.Popen(nginx.command(cfg, binary), stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                assert proc.poll() is None, (cfg.home / "error.log").read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "nginx did not listen within 30 s"
                    time.sleep(0.1)
            yield f"https://127.0.0.1:{port}", seen
        finally:
            proc.terminate()
            proc.wait(15)


def test_https_through_the_lb_with_the_cas_trust_only(tmp_path: Path) -> None:
    ca, other = make_ca(tmp_path / "ca"), make_ca(tmp_path / "other", "other")
    with _lb(tmp_path, ca) as (base, seen):
        url = f"{base}/v1/metrics"
        good = httpx.post(url, content=b"{}", verify=client_context(ca.cert), timeout=10)
        assert good.status_code == 202 and seen == ["/v1/metrics"]
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.post(url, content=b"{}", verify=client_context(other.cert), timeout=10)
        plain = httpx.post(url.replace("https://", "http://", 1), content=b"{}", timeout=10)
        assert plain.status_code == 400 and "HTTPS port" in plain.text
        assert seen == ["/v1/metrics"]


def test_with_a_client_ca_only_its_certificates_get_through(tmp_path: Path) -> None:
    ca, clients, other = (
        make_ca(tmp_path / "ca"),
        make_ca(tmp_path / "clients", "clients"),
        make_ca(tmp_path / "other", "other"),
    )
    mine, foreign = clients.issue("agent"), other.issue("agent")
    with _lb(tmp_path, ca, client_ca=clients.cert) as (base, seen):
        url = f"{base}/v1/metrics"

        def post(pair: tuple[Path, Path] | None) -> httpx.Response:
            ctx = client_context(ca.cert, *(pair or (None, None)))
            return httpx.post(url, content=b"{}", verify=ctx, timeout=10)

        assert post(mine).status_code == 202
        for refused in (post(None), post(foreign)):
            assert refused.status_code == 400, refused.text
            assert "certificate" in refused.text.lower(), refused.text
        assert seen == ["/v1/metrics"]
