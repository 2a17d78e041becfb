"""Agent settings (TOML, env override, garbage values), `apm agent install`, and the deploy/
files being what install writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.install import InstallPlan, install, render_config, render_unit
from agent.settings import ConfigError, load_settings
from apm.settings import PROJECT_ROOT

pytestmark = pytest.mark.unit


def test_toml_then_env_then_arguments(tmp_path: Path, clean_env) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(
        '[agent]\nserver = "web-042"\nstatsd_port = 9125\n'
        'statsd_timer_stats = ["p99"]\napi_key = "from-file"\n'
    )
    config.chmod(0o600)  # it holds the key: the agent refuses a file others may read
    clean_env.setenv("APM_AGENT_API_KEY", "from-env")
    settings = load_settings(config, statsd_port=9999)
    assert settings.server == "web-042"
    assert settings.api_key == "from-env"
    assert settings.statsd_port == 9999
    assert settings.statsd_timer_stats == ["p99"]


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("statsd_port = 70000\n", {}, "statsd_port"),
        ("interval_s = -1\n", {}, "interval_s"),
        ('server = "bad name!"\n', {}, "server"),
        ('ingest_url = "ftp://x"\n', {}, "ingest_url"),
        ('statsd_tags = "maybe"\n', {}, "statsd_tags"),
        ("colectors = []\n", {}, "unknown key 'colectors'"),
        ("statsd_port = [\n", {}, "not valid TOML"),
        ("", {"APM_AGENT_SPOOL_MAX_BYTES": "lots"}, "spool_max_bytes"),
        ("", {"APM_AGENT_COLLECTORS": '["cpu","cpu"]'}, "twice"),
    ],
)
def test_garbage_config_gives_a_clear_error(tmp_path: Path, clean_env, text, env, expected) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(text)
    for name, value in env.items():
        clean_env.setenv(name, value)
    with pytest.raises(ConfigError, match=expected):
        load_settings(config)


def test_a_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "nope.toml")


def test_the_cli_reports_garbage_config_without_a_traceback(
    tmp_path: Path, clean_env, capsys
) -> None:
    from apm.cli import main

    config = tmp_path / "agent.toml"
    config.write_text("interval_s = 'often'\n")
    assert main(["agent", "--config", str(config), "--once", "--print"]) == 2
    assert "interval_s" in capsys.readouterr().err


def test_install_writes_a_restarting_watchdogged_unit_and_a_loadable_config(
    tmp_path: Path, clean_env
) -> None:
    plan = InstallPlan(
        unit_dir=tmp_path / "systemd",
        config=tmp_path / "etc" / "agent.toml",
        spool_dir=tmp_path / "spool",
        ingest_url="http://ingest:8000/v1/metrics",
        api_key="secret",
    )
    done = install(plan)
    unit = (tmp_path / "systemd" / "apm-agent.service").read_text()
    assert "Restart=always" in unit and "WatchdogSec=" in unit and "Type=notify" in unit
    assert f"--config {plan.config}" in unit
    settings = load_settings(plan.config)
    assert settings.ingest_url == "http://ingest:8000/v1/metrics"
    assert settings.api_key == "secret"
    assert plan.config.stat().st_mode & 0o077 == 0  # the key is not world-readable
    plan.config.write_text(plan.config.read_text().replace("secret", "edited"))
    install(plan)  # a second install keeps the operator's config
    assert load_settings(plan.config).api_key == "edited"
    assert any("next: systemctl" in line for line in done)


def test_deploy_files_are_what_install_writes() -> None:
    plan = InstallPlan(python="/opt/apm/.venv/bin/python")
    deploy = PROJECT_ROOT / "deploy" / "systemd"
    assert (deploy / "apm-agent.service").read_text() == render_unit(plan)
    assert (deploy / "agent.toml").read_text() == render_config(plan)


def test_the_push_timeout_outlasts_the_ingest_s_answer_deadline(clean_env) -> None:
    """Issue 14, item 7: an agent that gives up before the ingest answers never sees its
    503 + Retry-After and resends a batch still being published (a duplicate)."""
    from agent.settings import INGEST_ANSWER_DEADLINE_S
    from ingest.settings import IngestSettings

    deadline = IngestSettings().answer_timeout_s
    assert deadline <= INGEST_ANSWER_DEADLINE_S, "the ingest's deadline grew: raise the agent's"
    timeout = load_settings().push_timeout_s
    # Twice the deadline: room for the upload of a 1 MiB batch, TLS and a proxy's queue.
    assert timeout >= 2 * deadline
    assert timeout == 10.0


def _service_section(unit: str) -> dict[str, list[str]]:
    """The [Service] directives of a unit file, each with every value it was given."""
    out: dict[str, list[str]] = {}
    section = None
    for line in unit.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def test_the_unit_runs_as_a_dedicated_user_in_a_sandbox() -> None:
    """Issue 14, item 14: the agent ran as root with no sandboxing."""
    plan = InstallPlan(spool_dir=Path("/var/lib/apm-agent/spool"))
    service = _service_section(render_unit(plan))
    assert service["User"] == ["apm-agent"] and service["Group"] == ["apm-agent"]
    expected = {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes",
        "ProtectControlGroups": "yes",
        "RestrictSUIDSGID": "yes",
        "CapabilityBoundingSet": "",
        "UMask": "0077",
        "StateDirectory": "apm-agent",
    }
    for key, value in expected.items():
        assert service.get(key) == [value], key
    # ProtectSystem=strict leaves only these writable: the spool and rejected.jsonl.
    assert service["ReadWritePaths"] == ["-/var/lib/apm-agent"]
    families = service["RestrictAddressFamilies"][0].split()
    assert {"AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK"} == set(families)  # HTTP, notify, TCP
    assert "ProtectProc" not in service  # proc.count and TCP states need every process seen


def test_the_config_is_0600_from_creation(tmp_path: Path, monkeypatch, clean_env) -> None:
    """Issue 14, item 14: the config was written world-readable and chmod'ed afterwards. With
    every chmod taken away, what the file is created with is what remains."""
    import os

    monkeypatch.setattr(Path, "chmod", lambda self, mode: None)
    monkeypatch.setattr(os, "chmod", lambda *a, **k: None)
    monkeypatch.setattr(os, "fchmod", lambda *a, **k: None)
    old = os.umask(0o022)
    try:
        plan = InstallPlan(
            unit_dir=tmp_path / "systemd", config=tmp_path / "etc" / "agent.toml", api_key="k"
        )
        install(plan)
        assert plan.config.stat().st_mode & 0o777 == 0o600
        install(plan, force=True)  # replaced: a new file, also 0600 from its creation
        assert plan.config.stat().st_mode & 0o777 == 0o600
        assert sorted(p.name for p in plan.config.parent.iterdir()) == ["agent.toml"]
    finally:
        os.umask(old)


def test_install_creates_the_service_user_once(monkeypatch) -> None:
    from agent import install as module

    calls = []
    monkeypatch.setattr(module.shutil, "which", lambda name: f"/usr/sbin/{name}")
    assert module.ensure_user("apm-agent-surely-absent", run=lambda *a, **k: calls.append(a[0]))
    assert calls == [
        [
            "/usr/sbin/useradd",
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "apm-agent-surely-absent",
        ]
    ]
    assert not module.ensure_user("root", run=lambda *a, **k: calls.append(a))
    assert len(calls) == 1


def test_systemd_judges_the_unit_valid_and_well_sandboxed(tmp_path: Path) -> None:
    """systemd's own checks (systemd-analyze, from Debian's systemd, which `make debs`
    installs): `verify` finds no error and `security --offline` rates the exposure "OK" (it
    was 9.6 "UNSAFE" running as root)."""
    import re
    import subprocess
    import sys

    from tests.support.debs import require

    analyze = require("systemd-analyze", "systemd")
    unit = tmp_path / "apm-agent.service"
    unit.write_text(render_unit(InstallPlan(python=sys.executable)))
    verify = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert verify.returncode == 0 and not verify.stderr.strip(), verify.stderr
    security = subprocess.run(
        [analyze, "security", "--offline=yes", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: ([0-9.]+)", security.stdout)
    # Debian's systemd (252 and later) rates a unit offline; one that cannot is a failure.
    assert security.returncode == 0 and found is not None, security.stdout + security.stderr
    assert float(found.group(1)) <= 3.0, security.stdout
