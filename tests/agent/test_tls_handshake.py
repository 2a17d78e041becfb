"""The agent's TLS over real handshakes on loopback (ssl sockets, a CA made with openssl):
the HTTP client telling an ingest that refuses the client certificate right after the
handshake from a dropped connection, ``insecure_skip_verify``, and ``apm-agent check-config
--ready`` trying the handshake."""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest

from agent.http import StdlibHttpClient
from agent.main import NOT_READY, main
from agent.runner import Agent
from agent.settings import ConfigError
from agent.tls import ClientTls, TlsFiles, TlsRefused
from tests.support.certs import Ca, make_ca

pytestmark = pytest.mark.unit

URL = "https://ingest.example.internal/v1/metrics"


def _tls_server(ca: Ca, answers: int) -> tuple[int, threading.Thread]:
    """Accepts one connection, answers ``answers`` requests with 202 (keep-alive), then
    closes it: 0 is an ingest refusing the client right after the handshake."""
    cert, key = ca.issue("server")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        with listener, contextlib.suppress(ssl.SSLError):  # a client that refused our cert
            conn = ctx.wrap_socket(listener.accept()[0], server_side=True)
            _answer(conn, answers)
            conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread


def _answer(conn: ssl.SSLSocket, answers: int) -> None:
    """Reads ``answers`` requests (headers, then Content-Length bytes), each answered 202."""
    conn.settimeout(10)
    for _ in range(answers):
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        found = re.search(rb"(?i)content-length: (\d+)", head)
        length = int(found[1]) if found else 0
        while len(body) < length:
            body += conn.recv(65536)
        conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")


def test_a_close_right_after_the_handshake_is_a_tls_refusal(ca: Ca) -> None:
    port, thread = _tls_server(ca, answers=0)
    client = StdlibHttpClient(ClientTls(TlsFiles(ca=ca.cert)))
    with pytest.raises(TlsRefused, match=f"ingest at localhost:{port} closed the connection"):
        client.post(f"https://localhost:{port}/v1/metrics", b"{}", {}, 10)
    thread.join(10)


def test_a_close_of_a_reused_connection_is_an_ordinary_failure(ca: Ca) -> None:
    port, thread = _tls_server(ca, answers=1)
    client = StdlibHttpClient(ClientTls(TlsFiles(ca=ca.cert)))
    url = f"https://localhost:{port}/v1/metrics"
    assert client.post(url, b"{}", {}, 10).status == 202
    thread.join(10)  # the server has closed the kept-alive connection
    with pytest.raises(OSError) as err:
        client.post(url, b"{}", {}, 10)
    assert not isinstance(err.value, TlsRefused)


def test_insecure_skip_verify_trusts_any_certificate_and_is_off_by_default(
    tmp_path: Path, ca: Ca
) -> None:
    stranger = make_ca(tmp_path / "stranger", name="stranger")
    for skip in (False, True):
        port, thread = _tls_server(stranger, answers=1)
        client = StdlibHttpClient(ClientTls(TlsFiles(ca=ca.cert, skip_verify=skip)))
        url = f"https://localhost:{port}/v1/metrics"
        if skip:
            assert client.post(url, b"{}", {}, 10).status == 202
        else:
            with pytest.raises(ssl.SSLCertVerificationError):
                client.post(url, b"{}", {}, 10)
        client.close()
        thread.join(10)


def test_insecure_skip_verify_is_warned_at_every_start(
    make_settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    assert make_settings().insecure_skip_verify is False
    settings = make_settings(ingest_url=URL, insecure_skip_verify=True)
    for start in (1, 2):
        with caplog.at_level(logging.WARNING, logger="agent.runner"):
            Agent(settings, statsd=False).spool.close()
        assert caplog.text.count("insecure_skip_verify is on") == start
    with pytest.raises(ConfigError, match="insecure_skip_verify given but ingest_url is not"):
        make_settings(insecure_skip_verify=True)


def _ready(tmp_path: Path, port: int, ca: Path) -> int:
    config = tmp_path / "agent.toml"
    config.write_text(
        f'[agent]\ningest_url = "https://localhost:{port}/v1/metrics"\n'
        f'api_key = "s3cret"\ntls_ca = "{ca}"\n'
    )
    config.chmod(0o600)
    return main(["check-config", "--ready", "--config", str(config)])


def test_ready_checks_the_tls_handshake(tmp_path: Path, clean_env, capsys, ca: Ca) -> None:
    port, thread = _tls_server(ca, answers=1)
    assert _ready(tmp_path, port, ca.cert) == 0
    thread.join(10)
    assert capsys.readouterr().err == ""
    stranger = make_ca(tmp_path / "stranger", name="stranger")
    port, thread = _tls_server(stranger, answers=1)
    assert _ready(tmp_path, port, ca.cert) == NOT_READY
    thread.join(10)
    err = capsys.readouterr().err
    assert f"apm-agent: not ready to push: TLS: the certificate of localhost:{port} is not" in err


def test_ready_only_notes_an_ingest_it_cannot_reach(
    tmp_path: Path, clean_env, capsys, ca: Ca
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:  # closed: nothing listens there
        port = taken.getsockname()[1]
    assert _ready(tmp_path, port, ca.cert) == 0
    err = capsys.readouterr().err
    assert f"note: the ingest at localhost:{port} cannot be reached now" in err
