"""The agent's host tags (agent.tags): agent.toml and agent.d fragments merged tag by tag, the
agent's own os/arch/agent_version under the user's, check-config's verdict with the shared
rule, and every spooled snapshot carrying them."""

from __future__ import annotations

import io
import json
import platform
from pathlib import Path

import pytest

from agent.main import check_config, main
from agent.runner import Agent
from agent.settings import ConfigError, load_settings
from agent.tags import builtin_tags, host_tags, host_tags_error
from agent.version import VERSION
from apm.tags import MAX_TAGS, tags_error

pytestmark = pytest.mark.unit


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_the_agent_knows_its_os_arch_and_version_and_they_pass_the_rule():
    own = builtin_tags()
    assert own == {
        "os": platform.system().lower(),
        "arch": platform.machine().lower(),
        "agent_version": VERSION,
    }
    assert tags_error(own) is None


def test_the_user_s_tags_win_over_the_agent_s_own():
    own = {"os": "linux", "arch": "x86_64", "agent_version": "1.0.0"}
    assert host_tags({"os": "alpine", "role": "web"}, own) == {
        "agent_version": "1.0.0",
        "arch": "x86_64",
        "os": "alpine",
        "role": "web",
    }


def test_fragments_merge_tag_by_tag_later_files_win(tmp_path: Path, clean_env) -> None:
    config = _write(tmp_path / "agent.toml", '[agent]\ntags = { role = "web", dc = "eu-1" }\n')
    _write(tmp_path / "agent.d" / "10-dc.toml", '[agent.tags]\ndc = "eu-2"\nrack = "r7"\n')
    _write(tmp_path / "agent.d" / "20-env.toml", '[agent]\ntags = { env = "prod" }\n')
    settings = load_settings(config)
    assert settings.tags == {"role": "web", "dc": "eu-2", "rack": "r7", "env": "prod"}
    out = io.StringIO()
    assert check_config(config, ready=False, out=out) == 0
    want = 'tags = { "dc" = "eu-2", "env" = "prod", "rack" = "r7", "role" = "web" }'
    assert want in out.getvalue()


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ('{ Role = "web" }', "tags: Value error, Role: tag key 'Role' must match"),
        ('{ server = "web-1" }', "tag key 'server' is reserved"),
        ("{ role = 3 }", "tag 'role' must have a string value, got int"),
        ('{ role = "' + "w" * 129 + '" }', "(at most 128)"),
        ('{ role = "web\\u0007" }', "non-printable"),
    ],
)
def test_check_config_refuses_a_bad_tag_naming_it(
    tmp_path: Path, clean_env, capsys, tags: str, expected: str
) -> None:
    config = _write(tmp_path / "agent.toml", f"[agent]\ntags = {tags}\n")
    assert main(["check-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err, err
    with pytest.raises(ConfigError):
        load_settings(config)


def test_the_count_bound_includes_the_agent_s_own_tags():
    user = {f"k{i}": "v" for i in range(MAX_TAGS - len(builtin_tags()))}
    assert host_tags_error(user) is None
    assert f"more than {MAX_TAGS}" in (host_tags_error({**user, "one_more": "v"}) or "")
    # Overriding one of the agent's own does not add a tag.
    assert host_tags_error({**user, "os": "alpine"}) is None


def test_every_spooled_snapshot_carries_the_tags(
    make_settings, fake_psutil, make_http, clock
) -> None:
    agent = Agent(
        make_settings(collectors=["load"], tags={"role": "web"}),
        psutil=fake_psutil,
        clock=clock,
        http=make_http(),
        statsd=False,
    )
    clock.advance(1)
    agent.tick(clock())
    [spooled] = [json.loads(r) for r in agent.spool.peek(1000, 1 << 30)]
    assert spooled["tags"] == {**builtin_tags(), "role": "web"}
    assert "load.1" in spooled["metrics"]


def test_send_tags_false_sends_none(make_settings, fake_psutil, make_http, clock) -> None:
    agent = Agent(
        make_settings(collectors=["load"], tags={"role": "web"}, send_tags=False),
        psutil=fake_psutil,
        clock=clock,
        http=make_http(),
        statsd=False,
    )
    clock.advance(1)
    agent.tick(clock())
    [spooled] = [json.loads(r) for r in agent.spool.peek(1000, 1 << 30)]
    assert "tags" not in spooled and "load.1" in spooled["metrics"]
