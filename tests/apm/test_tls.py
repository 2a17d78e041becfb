"""apm.tls: real handshakes over loopback against a CA made by tests.support.certs."""

from __future__ import annotations

import shutil
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from apm.tls import ReloadingServerContext, watch
from tests.support.certs import Ca, make_ca

pytestmark = pytest.mark.unit


def _serve_once(
    ctx: ssl.SSLContext, errors: list[str] | None = None
) -> tuple[int, threading.Thread]:
    """Accept one connection, finish its handshake (or fail it, noting why), then close."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
            conn.settimeout(10)
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError) as exc:
                if errors is not None:
                    errors.append(str(exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return port, thread


def _peer_cert(port: int, ca: Ca, client: tuple[Path, Path] | None = None) -> bytes:
    ctx = ssl.create_default_context(cafile=str(ca.cert))
    if client is not None:
        ctx.load_cert_chain(str(client[0]), str(client[1]))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        tls.sendall(b"x")
        # TLS 1.3 reports the server's refusal of our certificate only on a read.
        tls.recv(1)
        return der


def _der(pem: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem.read_text())


def _presented(context: ssl.SSLContext, ca: Ca) -> bytes:
    """The certificate one handshake with ``context`` presents (DER)."""
    port, thread = _serve_once(context)
    seen = _peer_cert(port, ca)
    thread.join(10)
    return seen


def _two_pairs(tmp_path: Path) -> tuple[Ca, tuple[Path, Path], tuple[Path, Path], Path, Path]:
    """A CA, two pairs it signed, and the server's files holding the first pair."""
    ca = make_ca(tmp_path / "ca")
    first, second = ca.issue("first"), ca.issue("second")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    shutil.copy(first[0], cert)
    shutil.copy(first[1], key)
    return ca, first, second, cert, key


def test_a_changed_pair_is_presented_by_the_next_handshake(tmp_path: Path) -> None:
    ca, first, second, cert, key = _two_pairs(tmp_path)
    server = ReloadingServerContext(cert, key)

    assert _presented(server.context, ca) == _der(first[0])
    assert server.reload_if_changed() is False

    shutil.copy(second[0], cert)
    shutil.copy(second[1], key)
    assert server.reload_if_changed() is True
    assert _presented(server.context, ca) == _der(second[0])


def test_a_mismatched_pair_is_refused_and_the_old_one_kept(tmp_path: Path) -> None:
    ca, first, second, cert, key = _two_pairs(tmp_path)
    server = ReloadingServerContext(cert, key)
    shutil.copy(second[0], cert)  # the key is not rewritten yet
    with pytest.raises(ssl.SSLError):
        server.reload_if_changed()
    assert _presented(server.context, ca) == _der(first[0])


def test_mtls_refuses_a_client_certificate_from_another_ca(tmp_path: Path) -> None:
    ca, other = make_ca(tmp_path / "ca"), make_ca(tmp_path / "other", "other")
    server_pair = ca.issue("server")
    server = ReloadingServerContext(*server_pair, client_ca=ca.cert)

    port, thread = _serve_once(server.context)
    assert _peer_cert(port, ca, client=ca.issue("good-client")) == _der(server_pair[0])
    thread.join(10)

    errors: list[str] = []
    port, thread = _serve_once(server.context, errors)
    with pytest.raises(ssl.SSLError):
        _peer_cert(port, ca, client=other.issue("bad-client"))
    thread.join(10)
    assert len(errors) == 1 and "CERTIFICATE_VERIFY_FAILED" in errors[0], errors


def test_watch_reloads_a_changed_pair_for_the_next_handshake(tmp_path: Path) -> None:
    ca, _first, second, cert, key = _two_pairs(tmp_path)
    server = ReloadingServerContext(cert, key)
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(server, 0.05, stop), daemon=True)
    watcher.start()
    try:
        shutil.copy(second[0], cert)
        shutil.copy(second[1], key)
        deadline = time.monotonic() + 10
        while True:
            seen = _presented(server.context, ca)
            if seen == _der(second[0]) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert seen == _der(second[0])
    finally:
        stop.set()
        watcher.join(5)
