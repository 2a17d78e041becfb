"""The agent's TLS settings (agent.tls, agent.settings) and ``apm-agent check-config`` on
them: each bad file or combination is refused with one line naming the key and the file. No
engines: the CA and certificates are made with openssl (tests.support.certs)."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import pytest

from agent.main import main
from agent.settings import ConfigError, load_settings
from agent.tls import ClientTls, TlsFiles, check_files
from tests.support.certs import Ca, make_ca

pytestmark = pytest.mark.unit

URL = "https://ingest.example.internal/v1/metrics"


@pytest.fixture(scope="module")
def client(ca: Ca) -> tuple[Path, Path]:
    return ca.issue("client", cn="web-1")


@pytest.fixture(scope="module")
def other_key(ca: Ca) -> Path:
    return ca.issue("other", cn="web-2")[1]


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
