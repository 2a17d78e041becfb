"""The example Ansible role (deploy/ansible/): the playbook passes ``ansible-playbook
--syntax-check``, and the settings fragment its template renders is one the agent loads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from agent.settings import AgentSettings, load_settings
from apm.settings import PROJECT_ROOT
from tests.support.certs import make_ca

pytestmark = pytest.mark.integration

ANSIBLE = PROJECT_ROOT / "deploy" / "ansible"


def test_the_playbook_passes_the_syntax_check() -> None:
    result = subprocess.run(
        ["ansible-playbook", "--syntax-check", "-i", "inventory.example", "site.yml"],
        cwd=ANSIBLE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


TEMPLATE = ANSIBLE / "roles" / "apm_agent" / "templates" / "50-ansible.toml.j2"


def _render(variables: dict[str, object]) -> str:
    """The fragment the role's template renders with ``variables`` (over the role's defaults),
    by Ansible itself."""
    defaults = yaml.safe_load(
        (ANSIBLE / "roles" / "apm_agent" / "defaults" / "main.yml").read_text()
    )
    result = subprocess.run(
        [
            "ansible",
            "localhost",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-m",
            "ansible.builtin.debug",
            "-a",
            f"msg={{{{ lookup('template', '{TEMPLATE}') }}}}",
            "-e",
            json.dumps({**defaults, "playbook_dir": str(ANSIBLE), **variables}),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    plays = json.loads(result.stdout)["plays"]
    return str(plays[0]["tasks"][0]["hosts"]["localhost"]["msg"])


def _load(rendered: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> AgentSettings:
    """The agent's settings from an empty agent.toml and the rendered fragment."""
    for name in list(os.environ):
        if name.startswith("APM_AGENT_"):
            monkeypatch.delenv(name)
    config = home / "agent.toml"
    config.write_text("[agent]\n")
    config.chmod(0o600)
    (home / "agent.d").mkdir()
    fragment = home / "agent.d" / "50-ansible.toml"
    fragment.write_text(rendered)
    fragment.chmod(0o600)
    return load_settings(config)


def test_the_rendered_fragment_is_a_valid_agent_config(tmp_path: Path, monkeypatch) -> None:
    variables = {
        "apm_agent_ingest_url": "https://ingest.example.internal/v1/metrics",
        "apm_agent_api_key": 'k"3y',
        "apm_agent_settings": {"statsd_tags": "drop", "interval_s": 2.0, "collectors": ["cpu"]},
        "apm_agent_tags": {"role": "web", "dc": "eu-1", "team": 'caf\u00e9 "north"'},
    }
    settings = _load(_render(variables), tmp_path, monkeypatch)
    assert settings.ingest_url == variables["apm_agent_ingest_url"]
    assert settings.api_key == 'k"3y'
    assert (settings.statsd_tags, settings.interval_s, settings.collectors) == (
        "drop",
        2.0,
        ["cpu"],
    )
    assert settings.tags == variables["apm_agent_tags"]
    assert settings.tls_ca is None and settings.tls_cert is None


def test_the_tls_variables_name_the_files_the_role_copies(tmp_path: Path, monkeypatch) -> None:
    """A private CA and a client certificate, no API key (an ingest where the certificate
    stands in for it): the fragment names the files where the role puts them, and the agent
    loads them (it checks each file and that the key matches the certificate)."""
    ca = make_ca(tmp_path / "ca")
    cert, key = ca.issue("agent", cn="web-1")
    tls_dir = tmp_path / "tls"
    tls_dir.mkdir()
    for src, dest in ((ca.cert, "ca.pem"), (cert, "agent.pem"), (key, "agent.key")):
        shutil.copy(src, tls_dir / dest)
    variables = {
        "apm_agent_ingest_url": "https://ingest.example.internal/v1/metrics",
        "apm_agent_api_key": "",
        "apm_agent_tls_ca_src": str(ca.cert),
        "apm_agent_tls_cert_src": str(cert),
        "apm_agent_tls_key_src": str(key),
        "apm_agent_tls_dir": str(tls_dir),
    }
    rendered = _render(variables)
    assert "api_key" not in rendered
    home = tmp_path / "home"
    home.mkdir()
    settings = _load(rendered, home, monkeypatch)
    assert settings.api_key == ""
    assert (settings.tls_ca, settings.tls_cert, settings.tls_key) == (
        tls_dir / "ca.pem",
        tls_dir / "agent.pem",
        tls_dir / "agent.key",
    )
