"""The agent's TLS settings (agent.tls, agent.settings) and ``apm-agent check-config`` on
them: each bad file or combination is refused with one line naming the key and the file; and
the HTTP client telling an ingest that refuses the client certificate after the handshake
from a dropped connection. No engines: the CA and certificates are made with openssl
(tests.support.certs), the servers are ssl sockets on loopback."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest

from agent.http import StdlibHttpClient
from agent.main import main
from agent.runner import Agent
from agent.settings import ConfigError, load_settings
from agent.tls import ClientTls, TlsFiles, TlsRefused, check_files
from tests.support.certs import Ca, make_ca

pytestmark = pytest.mark.unit

URL = "https://ingest.example.internal/v1/metrics"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Ca:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def client(ca: Ca) -> tuple[Path, Path]:
    return ca.issue("client", cn="web-1")


@pytest.fixture(scope="module")
def other_key(ca: Ca) -> Path:
    return ca.issue("other", cn="web-2")[1]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("APM_AGENT_"):
            monkeypatch.delenv(name)
    return monkeypatch


def _toml(tmp_path: Path, **values: str) -> Path:
    path = tmp_path / "agent.toml"
    body = "".join(f'{k} = "{v}"\n' for k, v in values.items())
    path.write_text("[agent]\n" + body)
    path.chmod(0o600)
    return path


def test_good_files_build_a_verifying_context(ca: Ca, client: tuple[Path, Path]) -> None:
    ctx = ClientTls(TlsFiles(ca.cert, *client)).context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    # tls_ca replaces the system roots: the test CA is the only one trusted.
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "test ca"),),)]


def test_without_tls_ca_the_system_roots_are_trusted() -> None:
    ctx = ClientTls(TlsFiles()).context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.cert_store_stats()["x509_ca"] > 0  # Debian's ca-certificates


@pytest.mark.parametrize(
    ("which", "expected"),
    [
        ("missing_ca", "tls_ca: {tmp}/nope.pem: no such file"),
        ("text_ca", "tls_ca: {tmp}/ca.txt: not a PEM certificate (no 'BEGIN CERTIFICATE' block)"),
        ("key_as_ca", "tls_ca: {tmp}/client.key: not a PEM certificate"),
        ("cert_alone", "tls_cert and tls_key go together"),
        ("key_alone", "tls_cert and tls_key go together"),
        ("cert_as_key", "tls_key: {tmp}/client.pem: not a PEM private key"),
        ("mismatch", "the key does not match the certificate"),
        ("garbled_ca", "tls_ca: {tmp}/garbled.pem: not a usable CA bundle"),
    ],
)
def test_bad_files_are_refused_naming_the_key_and_the_file(
    tmp_path: Path, ca: Ca, client: tuple[Path, Path], other_key: Path, which: str, expected: str
) -> None:
    cert, key = shutil.copy(client[0], tmp_path), shutil.copy(client[1], tmp_path)
    (tmp_path / "ca.txt").write_text("just some text\n")
    (tmp_path / "garbled.pem").write_text(
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"
    )
    files = {
        "missing_ca": TlsFiles(ca=tmp_path / "nope.pem"),
        "text_ca": TlsFiles(ca=tmp_path / "ca.txt"),
        "key_as_ca": TlsFiles(ca=Path(key)),
        "cert_alone": TlsFiles(cert=Path(cert)),
        "key_alone": TlsFiles(key=Path(key)),
        "cert_as_key": TlsFiles(cert=Path(cert), key=Path(cert)),
        "mismatch": TlsFiles(cert=Path(cert), key=other_key),
        "garbled_ca": TlsFiles(ca=tmp_path / "garbled.pem"),
    }[which]
    with pytest.raises(ValueError) as err:
        check_files(files)
    assert expected.format(tmp=tmp_path) in str(err.value)


def test_a_private_key_others_may_read_is_refused(
    tmp_path: Path, client: tuple[Path, Path]
) -> None:
    key = Path(shutil.copy(client[1], tmp_path))
    key.chmod(0o644)
    with pytest.raises(ValueError, match=r"tls_key: .*client.key: others may read this private"):
        check_files(TlsFiles(cert=client[0], key=key))
    key.chmod(0o640)
    check_files(TlsFiles(cert=client[0], key=key))


def test_tls_settings_for_an_http_url_are_refused(clean_env, tmp_path: Path, ca: Ca) -> None:
    with pytest.raises(ConfigError, match="tls_ca given but ingest_url is not https://"):
        load_settings(None, ingest_url="http://ingest:8080/v1/metrics", tls_ca=ca.cert)


def test_an_https_url_needs_no_tls_settings(clean_env, tmp_path: Path) -> None:
    settings = load_settings(None, ingest_url=URL, spool_dir=tmp_path)
    assert settings.tls_files == TlsFiles()


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"tls_ca": "{tmp}/nope.pem"}, "tls_ca: {tmp}/nope.pem: no such file"),
        ({"tls_cert": "{cert}"}, "tls_cert and tls_key go together"),
        ({"tls_cert": "{cert}", "tls_key": "{other}"}, "does not match the certificate"),
        ({"tls_ca": "{tmp}"}, "tls_ca: {tmp}: is a directory"),
        ({"ingest_url": "http://i:8080/v1/metrics", "tls_ca": "{ca}"}, "is not https://"),
        ({"tls_server_name": "not a name"}, "tls_server_name: Value error, must be a host"),
    ],
)
def test_check_config_refuses_bad_tls_settings_with_one_line(
    tmp_path: Path,
    clean_env,
    capsys,
    ca: Ca,
    client: tuple[Path, Path],
    other_key: Path,
    values: dict[str, str],
    expected: str,
) -> None:
    names = {"tmp": tmp_path, "cert": client[0], "other": other_key, "ca": ca.cert}
    values = {"ingest_url": URL, "api_key": "s3cret"} | {
        k: v.format(**names) for k, v in values.items()
    }
    config = _toml(tmp_path, **values)
    assert main(["check-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("apm-agent: "), err
    assert expected.format(**names) in err
    assert f"({config})" in err  # the file the setting came from
    assert "s3cret" not in err


def test_check_config_prints_the_tls_settings(
    tmp_path: Path, clean_env, capsys, ca: Ca, client: tuple[Path, Path]
) -> None:
    config = _toml(
        tmp_path,
        ingest_url=URL,
        tls_ca=str(ca.cert),
        tls_cert=str(client[0]),
        tls_key=str(client[1]),
    )
    assert main(["check-config", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert f'tls_ca = "{ca.cert}"  # {config}' in out
    assert f'tls_key = "{client[1]}"  # {config}' in out
    assert 'tls_server_name = ""  # default' in out


def test_check_config_marks_unset_files_as_comments(tmp_path: Path, clean_env, capsys) -> None:
    config = _toml(tmp_path, ingest_url=URL)
    assert main(["check-config", "--config", str(config)]) == 0
    assert "# tls_ca is not set  # default" in capsys.readouterr().out


def test_a_replaced_ca_file_is_used_by_the_next_context_a_broken_one_is_not(
    tmp_path: Path, ca: Ca
) -> None:
    other = make_ca(tmp_path / "other", name="other")
    trusted = tmp_path / "trusted.pem"
    shutil.copy(other.cert, trusted)
    tls = ClientTls(TlsFiles(ca=trusted))
    subjects = lambda ctx: [c["subject"] for c in ctx.get_ca_certs()]  # noqa: E731
    assert subjects(tls.context()) == [((("commonName", "test other"),),)]
    trusted.write_text("half written")
    assert subjects(tls.context()) == [((("commonName", "test other"),),)]  # the last good one
    shutil.copy(ca.cert, trusted)
    assert subjects(tls.context()) == [((("commonName", "test ca"),),)]


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
