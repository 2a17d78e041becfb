"""The dashboard over HTTPS: the app create_app builds, served by dashboard.serve.make_server
(what ``apm dashboard serve`` runs) on a free port, over real sockets, against a CA made by
tests.support.certs. The storage is a fake: no page read here touches it."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from dashboard.app import build_context, create_app
from dashboard.serve import make_server
from dashboard.settings import DashboardSettings
from tests.dashboard.fakes import FakeResults
from tests.support.certs import Ca, make_ca

pytestmark = pytest.mark.unit

TOKEN = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"


@dataclass
class Https:
    port: int
    ca: Ca
    cert: Path
    key: Path

    @property
    def url(self) -> str:
        return f"https://localhost:{self.port}"

    def trusting(self, ca: Ca | None = None) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str((ca or self.ca).cert))


@contextlib.contextmanager
def _served(ca: Ca, client_ca: Path | None = None) -> Iterator[Https]:
    cert, key = ca.issue("dashboard")
    settings = DashboardSettings(
        port=0,
        token=TOKEN,
        tls_cert=cert,
        tls_key=key,
        tls_client_ca=client_ca,
        tls_reload_s=0.1,
        # Not read by these pages; nothing listens there.
        kafka_bootstrap="127.0.0.1:1",
        ingest_metrics_urls="",
        alerting_metrics_url="",
    )
    app = create_app(build_context(settings, repo=FakeResults()))
    server = make_server(settings, app.server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Https(server.port, ca, cert, key)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def https(tmp_path: Path) -> Iterator[Https]:
    with _served(make_ca(tmp_path / "ca")) as served:
        yield served


def _get(url: str, ctx: ssl.SSLContext, token: str = "") -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, context=ctx, timeout=10) as reply:
        return reply.status, reply.read()


def test_a_client_trusting_the_ca_reads_the_login_page_the_api_and_metrics(https: Https) -> None:
    ctx = https.trusting()
    status, page = _get(f"{https.url}/login", ctx)
    assert status == 200 and b'id="login-form"' in page
    status, body = _get(f"{https.url}/api/queries", ctx, TOKEN)
    assert status == 200 and json.loads(body) == []  # FakeResults holds no query
    status, body = _get(f"{https.url}/metrics", ctx)
    assert status == 200 and b"apm_dashboard_" in body


def test_a_client_not_trusting_the_ca_is_refused(https: Https, tmp_path: Path) -> None:
    other = make_ca(tmp_path / "other", "other")
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(f"{https.url}/login", https.trusting(other))
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(f"{https.url}/login", ssl.create_default_context())  # the system store


def test_plain_http_to_the_https_port_gets_no_page(https: Https) -> None:
    with pytest.raises((http.client.HTTPException, ConnectionError, urllib.error.URLError)):
        urllib.request.urlopen(f"http://localhost:{https.port}/login", timeout=10).read()


def test_a_silent_client_does_not_hold_up_the_others(https: Https) -> None:
    # The handshake runs on each connection's thread: one that never sends a ClientHello
    # must not stop accept() for everyone (werkzeug's own ssl_context= would).
    with socket.create_connection(("127.0.0.1", https.port), timeout=10):
        status, _ = _get(f"{https.url}/healthz", https.trusting())
    assert status == 200


def test_the_session_and_csrf_cookies_are_secure_over_https(https: Https) -> None:
    with httpx.Client(base_url=https.url, verify=https.trusting(), timeout=10) as client:
        form = client.get("/login")
        assert "; secure" in form.headers["set-cookie"].lower()  # the login form's session
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
        assert csrf is not None
        signed_in = client.post(
            "/login",
            data={"csrf_token": csrf.group(1), "user": "ops", "password": TOKEN, "next": "/"},
        )
    assert signed_in.status_code == 302, signed_in.text
    cookies = {c.split("=", 1)[0]: c.lower() for c in signed_in.headers.get_list("set-cookie")}
    assert set(cookies) >= {"apm_dashboard_session", "_csrf_token"}
    assert all("; secure" in c for c in cookies.values()), cookies


def test_a_replaced_certificate_serves_new_connections_and_keeps_open_ones(
    https: Https, tmp_path: Path
) -> None:
    # werkzeug closes each connection after its answer (no HTTP keep-alive), so the open
    # connection here is one whose handshake was made before the swap and whose request is
    # sent after the new pair is served: it is answered, on its first session.
    kept = http.client.HTTPSConnection(
        "localhost", https.port, context=https.trusting(), timeout=10
    )
    kept.connect()
    assert kept.sock is not None
    sock = kept.sock
    old_serial = sock.getpeercert()["serialNumber"]  # type: ignore[index]

    renewed = make_ca(tmp_path / "renewed", "renewed")
    cert, key = renewed.issue("dashboard")
    # The key first: in between, the pair does not match and the old one is kept (apm.tls).
    for new, live in ((key, https.key), (cert, https.cert)):
        shutil.copy(new, f"{live}.new")
        os.replace(f"{live}.new", live)

    deadline = time.monotonic() + 15
    while True:
        try:
            status, _ = _get(f"{https.url}/healthz", https.trusting(renewed))
            break
        except urllib.error.URLError:
            assert time.monotonic() < deadline, "the new certificate was not served"
            time.sleep(0.1)
    assert status == 200
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(f"{https.url}/healthz", https.trusting())  # the old CA no longer fits

    # Still the connection of the old handshake (http.client reconnects only when it has none).
    assert kept.sock is sock and sock.getpeercert()["serialNumber"] == old_serial  # type: ignore[index]
    assert cert.read_bytes() == https.cert.read_bytes()
    kept.request("GET", "/healthz")
    assert kept.getresponse().read() == b"ok\n"
    kept.close()


def test_with_a_client_ca_only_its_certificates_get_a_page(tmp_path: Path) -> None:
    ca, foreign = make_ca(tmp_path / "ca"), make_ca(tmp_path / "foreign", "foreign")
    with _served(ca, client_ca=ca.cert) as served:
        for presented in (None, foreign, ca):
            ctx = served.trusting()
            if presented is not None:
                ctx.load_cert_chain(*presented.issue(f"client-{presented.cert.stem}", "client"))
            if presented is ca:
                assert _get(f"{served.url}/healthz", ctx)[0] == 200
                continue
            # TLS 1.3: the refusal arrives as an alert or a close on the first read.
            with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
                _get(f"{served.url}/healthz", ctx)
