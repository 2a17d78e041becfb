"""The dashboard's TLS settings: what a start refuses, naming the setting (apm.tls's checks, run
by DashboardSettings), and ``apm dashboard serve`` exiting 2 with that line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from dashboard.serve import settings_or_error
from dashboard.settings import DashboardSettings
from ingest.settings import IngestSettings
from tests.support.certs import Ca, make_ca

pytestmark = pytest.mark.unit

TOKEN = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Ca:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def pair(ca: Ca) -> tuple[Path, Path]:
    return ca.issue("dash")


def test_plain_http_is_the_default() -> None:
    settings = DashboardSettings(token=TOKEN)
    assert settings.tls_cert is None and not settings.https


def test_a_good_pair_and_client_ca_are_taken(ca: Ca, pair: tuple[Path, Path]) -> None:
    settings = DashboardSettings(tls_cert=pair[0], tls_key=pair[1], tls_client_ca=ca.cert)
    assert settings.https


def test_a_lone_cert_or_key_is_refused(pair: tuple[Path, Path]) -> None:
    lone = "APM_DASHBOARD_TLS_CERT and APM_DASHBOARD_TLS_KEY go together"
    with pytest.raises(ValidationError, match=lone):
        DashboardSettings(tls_cert=pair[0])
    with pytest.raises(ValidationError, match=lone):
        DashboardSettings(tls_key=pair[1])


def test_a_client_ca_without_a_pair_is_refused(ca: Ca) -> None:
    with pytest.raises(ValidationError, match="APM_DASHBOARD_TLS_CLIENT_CA needs"):
        DashboardSettings(tls_client_ca=ca.cert)


@pytest.mark.parametrize(
    ("setting", "make", "why"),
    [
        ("cert", lambda d: d / "missing.pem", "no such file"),
        ("key", lambda d: d, "is a directory"),
        ("cert", lambda d: d / "file" / "under-a-file.pem", "cannot read"),
        ("cert", lambda d: _write(d / "text.pem", "hello\n"), "not a PEM certificate"),
        (
            "key",
            lambda d: _write(d / "cert-as-key.pem", "-----BEGIN CERTIFICATE-----\n"),
            "not a PEM private key",
        ),
        ("client_ca", lambda d: d / "missing-ca.pem", "no such file"),
    ],
)
def test_a_bad_file_is_refused_naming_its_setting(
    tmp_path: Path, pair: tuple[Path, Path], ca: Ca, setting: str, make: object, why: str
) -> None:
    _write(tmp_path / "file", "")
    files = {"cert": pair[0], "key": pair[1], "client_ca": ca.cert}
    files[setting] = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(ValidationError, match=rf"APM_DASHBOARD_TLS_{setting.upper()}: .*{why}"):
        DashboardSettings(
            tls_cert=files["cert"], tls_key=files["key"], tls_client_ca=files["client_ca"]
        )


def test_a_key_of_another_certificate_is_refused(ca: Ca, pair: tuple[Path, Path]) -> None:
    _, other_key = ca.issue("other")
    with pytest.raises(ValidationError, match="the key does not match the certificate"):
        DashboardSettings(tls_cert=pair[0], tls_key=other_key)


def test_a_bundle_that_is_no_ca_is_refused(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    junk = _write(
        tmp_path / "ca.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"
    )
    with pytest.raises(
        ValidationError, match=r"APM_DASHBOARD_TLS_CLIENT_CA: .*not a usable CA bundle"
    ):
        DashboardSettings(tls_cert=pair[0], tls_key=pair[1], tls_client_ca=junk)


def test_the_ingest_names_its_own_settings(tmp_path: Path) -> None:
    cert = _write(tmp_path / "c.pem", "-----BEGIN CERTIFICATE-----\n")
    with pytest.raises(ValidationError, match=r"APM_INGEST_TLS_KEY: .*no such file"):
        IngestSettings(tls_cert=cert, tls_key=tmp_path / "k.pem")


def test_the_start_prints_one_line_naming_the_setting(tmp_path: Path) -> None:
    assert settings_or_error(tls_cert=tmp_path / "nope.pem", tls_key=tmp_path / "nope.key") == (
        f"apm dashboard: APM_DASHBOARD_TLS_CERT: {tmp_path / 'nope.pem'}: no such file"
    )


def test_apm_dashboard_serve_exits_2_before_connecting_anywhere(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "APM_DASHBOARD_TOKEN": TOKEN,
        "APM_DASHBOARD_TLS_CERT": str(tmp_path / "dash.pem"),
    }
    done = subprocess.run(
        [str(Path(sys.executable).parent / "apm"), "dashboard", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "apm dashboard: APM_DASHBOARD_TLS_CERT and APM_DASHBOARD_TLS_KEY go together (the "
        "server's certificate and its key): give both or neither"
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_refused_field_is_named_by_its_variable() -> None:
    assert settings_or_error(tls_reload_s=0) == (
        "apm dashboard: APM_DASHBOARD_TLS_RELOAD_S: Input should be greater than 0"
    )
