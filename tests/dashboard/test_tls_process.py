"""``apm dashboard serve`` itself over HTTPS: the process a deployment runs, on the real
Cassandra (its private keyspace), with a CA made by tests.support.certs."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from launch.probe import free_port
from tests.support.certs import Ca, make_ca

pytestmark = pytest.mark.integration

TOKEN = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"


def _get(url: str, ctx: ssl.SSLContext, token: str = "") -> tuple[int, bytes, list[str]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(
        urllib.request.Request(url, headers=headers), context=ctx, timeout=10
    ) as reply:
        return reply.status, reply.read(), reply.headers.get_all("Set-Cookie") or []


@pytest.fixture(scope="module")
def process(
    stack: Any, cassandra_session: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Ca]]:
    keyspace = f"apm_dash_tls_{uuid.uuid4().hex[:8]}"  # its own: empty, dropped after
    home = tmp_path_factory.mktemp("dash-tls")
    ca = make_ca(home / "ca")
    cert, key = ca.issue("dashboard")
    port = free_port()
    env = {
        **os.environ,
        "APM_DASHBOARD_TOKEN": TOKEN,
        "APM_DASHBOARD_TLS_CERT": str(cert),
        "APM_DASHBOARD_TLS_KEY": str(key),
        "APM_STORAGE_HOSTS": stack.host,
        "APM_STORAGE_PORT": str(stack.cassandra_port),
        "APM_STORAGE_KEYSPACE": keyspace,
        "APM_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
    }
    log = (home / "dashboard.log").open("wb")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "apm"), "dashboard", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"https://localhost:{port}"
    ctx = ssl.create_default_context(cafile=str(ca.cert))
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (home / "dashboard.log").read_text()
            try:
                _get(f"{url}/healthz", ctx)
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, (home / "dashboard.log").read_text()
                time.sleep(0.5)
        yield url, ca
    finally:
        proc.send_signal(signal.SIGINT)  # serve() stops on KeyboardInterrupt
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()
        cassandra_session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


def test_the_process_serves_https_to_a_client_trusting_the_ca(process: tuple[str, Ca]) -> None:
    url, ca = process
    ctx = ssl.create_default_context(cafile=str(ca.cert))
    status, page, cookies = _get(f"{url}/login", ctx)
    assert status == 200 and b'id="login-form"' in page
    assert cookies and all("; secure" in c.lower() for c in cookies), cookies
    status, body, _ = _get(f"{url}/api/queries", ctx, TOKEN)
    assert status == 200 and json.loads(body) == []  # a new keyspace: no query yet
    status, body, _ = _get(f"{url}/metrics", ctx)
    assert status == 200 and b"apm_dashboard_" in body


def test_the_process_refuses_a_client_not_trusting_the_ca(process: tuple[str, Ca]) -> None:
    url, _ = process
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        _get(f"{url}/login", ssl.create_default_context())
