"""The example Ansible role (deploy/ansible/): the playbook passes ``ansible-playbook
--syntax-check``, and the settings fragment its template renders is one the agent loads."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.settings import load_settings
from apm.settings import PROJECT_ROOT

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


def test_the_rendered_fragment_is_a_valid_agent_config(tmp_path: Path, monkeypatch) -> None:
    template = ANSIBLE / "roles" / "apm_agent" / "templates" / "50-ansible.toml.j2"
    variables = {
        "apm_agent_ingest_url": "https://ingest.example.internal/v1/metrics",
        "apm_agent_api_key": 'k"3y',
        "apm_agent_settings": {"statsd_tags": "drop", "interval_s": 2.0, "collectors": ["cpu"]},
        "apm_agent_tags": {"role": "web", "dc": "eu-1", "team": 'caf\u00e9 "north"'},
    }
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
            f"msg={{{{ lookup('template', '{template}') }}}}",
            "-e",
            json.dumps(variables),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    plays = json.loads(result.stdout)["plays"]
    rendered = plays[0]["tasks"][0]["hosts"]["localhost"]["msg"]
    for name in list(os.environ):
        if name.startswith("APM_AGENT_"):
            monkeypatch.delenv(name)
    config = tmp_path / "agent.toml"
    config.write_text("[agent]\n")
    config.chmod(0o600)
    (tmp_path / "agent.d").mkdir()
    fragment = tmp_path / "agent.d" / "50-ansible.toml"
    fragment.write_text(rendered)
    fragment.chmod(0o600)
    settings = load_settings(config)
    assert settings.ingest_url == variables["apm_agent_ingest_url"]
    assert settings.api_key == 'k"3y'
    assert (settings.statsd_tags, settings.interval_s, settings.collectors) == (
        "drop",
        2.0,
        ["cpu"],
    )
    assert settings.tags == variables["apm_agent_tags"]
