"""``apm-agent`` (agent.main): check-config on good and bad files, fragments, the secret
mask, --ready, --version; and the agent.version metric's encoding."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.main import NOT_READY, check_config, main
from agent.version import VERSION, version_number

pytestmark = pytest.mark.unit


def _config(tmp_path: Path, text: str, mode: int = 0o600, name: str = "agent.toml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("text", "mode", "expected"),
    [
        ("[agent]\ncolectors = []\n", 0o600, "agent.toml: unknown key 'colectors'"),
        ("[agent]\ninterval_s = 'often'\n", 0o600, "interval_s: Input should be a valid number"),
        ('[agent]\ningest_url = "ingest:8080/v1"\n', 0o600, "ingest_url: Value error, must be"),
        ('[agent]\napi_key = "s3cret"\n', 0o644, "agent.toml: api_key: the file holds a secret"),
        ("[agent\n", 0o600, "not valid TOML"),
    ],
)
def test_check_config_refuses_bad_input_with_one_line_naming_the_key(
    tmp_path: Path, clean_env, capsys, text: str, mode: int, expected: str
) -> None:
    config = _config(tmp_path, text, mode)
    assert main(["check-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("apm-agent: "), err
    assert expected in err
    assert "s3cret" not in err
    # The service's command line refuses the same file the same way.
    assert main(["run", "--config", str(config)]) == 2
    assert expected in capsys.readouterr().err


def test_check_config_prints_effective_settings_with_the_key_masked(
    tmp_path: Path, clean_env
) -> None:
    config = _config(tmp_path, '[agent]\napi_key = "s3cret"\ninterval_s = 2.0\n')
    _config(tmp_path / "agent.d", "[agent]\ninterval_s = 5.0\n", 0o644, "20-slow.toml")
    _config(tmp_path / "agent.d", '[agent]\nserver = "web-1"\n', 0o644, "10-name.toml")
    clean_env.setenv("APM_AGENT_STATSD_PORT", "9125")
    out = io.StringIO()
    assert check_config(config, ready=False, out=out) == 0
    text = out.getvalue()
    assert "s3cret" not in text
    assert 'api_key = "********"' in text
    assert f"interval_s = 5.0  # {tmp_path / 'agent.d' / '20-slow.toml'}" in text
    assert 'server = "web-1"' in text
    assert "statsd_port = 9125  # env APM_AGENT_STATSD_PORT" in text
    assert "batch_max_snapshots = 300  # default" in text


def test_a_fragment_with_an_unknown_key_is_named(tmp_path: Path, clean_env, capsys) -> None:
    config = _config(tmp_path, "[agent]\n")
    _config(tmp_path / "agent.d", "[agent]\nintervall_s = 5.0\n", 0o600, "50-typo.toml")
    assert check_config(config, ready=False) == 2
    assert "50-typo.toml: unknown key 'intervall_s'" in capsys.readouterr().err


def test_ready_wants_an_ingest_url_and_a_key(tmp_path: Path, clean_env, capsys) -> None:
    config = _config(tmp_path, '[agent]\napi_key = "k"\n')
    assert check_config(config, ready=True, out=io.StringIO()) == NOT_READY
    assert "ingest_url not set" in capsys.readouterr().err
    config = _config(tmp_path, '[agent]\ningest_url = "http://169.254.1.1:8080/v1/metrics"\n')
    assert check_config(config, ready=True, out=io.StringIO()) == NOT_READY
    clean_env.setenv("APM_AGENT_API_KEY", "from-env")
    assert check_config(config, ready=True, out=io.StringIO()) == 0


def test_version_is_printed_and_encoded(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"apm-agent {VERSION}"
    assert version_number("1.2.3") == 1_002_003.0
    assert version_number("0.1.0") == 1_000.0
    assert version_number("1:2.10.4-1~bpo12") == 2_010_004.0
    assert version_number("7") == 7_000_000.0
    assert version_number("garbage") == 0.0
