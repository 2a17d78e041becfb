"""The process table: every command line is one the ``apm`` parser accepts, every marker is in
its own command line (or a pid would never be recognised as ours), and ``apm run --down``
stops what ``apm run`` starts."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from apm.cli import build_parser
from launch import processes, run
from launch.probe import free_port, http_ok

pytestmark = pytest.mark.unit

SPECS = [
    processes.ingest(8080, Path("/k"), "127.0.0.1:9092"),
    processes.aggregator(Path("/c"), metrics=["cpu.util"], shard="0/2", keyspace="ks"),
    processes.dashboard(8050),
    processes.agent("http://127.0.0.1:8080/v1/metrics", "key", Path("/spool")),
    processes.loadgen("http://127.0.0.1:8080", "key", metric_prefix="x."),
    processes.alerting(9107, alertmanager_url="http://127.0.0.1:9095"),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_each_command_line_parses_and_carries_its_marker(spec: processes.ProcessSpec):
    args = build_parser().parse_args(list(spec.argv))
    assert callable(args.func)
    assert spec.marker in shlex.join(spec.command) + " "
    assert spec.command[1:3] == ["-m", "apm.cli"]


def test_alertmanager_is_run_by_launch_with_its_config_written_at_start(tmp_path: Path):
    """Debian's binary itself, not a component's CLI (launch is the top floor): building the
    spec writes nothing, starting it writes the config its command line names."""
    spec = processes.alertmanager(tmp_path / "am", 9095)
    assert spec.command[0].endswith("alertmanager") and "apm.cli" not in spec.command
    assert spec.marker in shlex.join(spec.command)
    assert "--web.listen-address=127.0.0.1:9095" in spec.command
    assert not (tmp_path / "am").exists()
    assert spec.prepare is not None and spec.prepare() == {}
    config = tmp_path / "am" / "alertmanager.yml"
    assert f"--config.file={config}" in spec.command and "receiver: default" in config.read_text()


def test_the_aggregator_gets_its_jars_from_launch_at_start():
    spec = processes.aggregator(Path("/c"))
    assert spec.prepare is processes.aggregator_jars
    assert "APM_AGGREGATOR_JARS" not in spec.env  # no fetch while the table is built


def test_secrets_go_through_the_environment_not_the_command_line():
    for spec in SPECS:
        assert "key" not in spec.argv
    assert SPECS[3].env["APM_AGENT_API_KEY"] == "key"
    assert SPECS[4].env["APM_LOADGEN_API_KEY"] == "key"


def test_run_stops_what_it_starts_with_the_same_markers(tmp_path: Path):
    started = run._platform(tmp_path, "127.0.0.1:9092", "secret")
    stopped = run._platform(tmp_path)
    assert list(started) == list(stopped)
    assert {n: s.marker for n, s in started.items()} == {n: s.marker for n, s in stopped.items()}


def test_a_spec_without_health_is_never_ready():
    assert not SPECS[4].ready()
    assert not processes.ingest(free_port(), Path("/k"), "x").ready(0.5)  # nothing listens


def test_http_ok_is_false_for_garbage_and_closed_ports():
    assert not http_ok("not a url")
    assert not http_ok(f"http://127.0.0.1:{free_port()}/", 0.5)


def test_dashboard_token_is_created_once_private(tmp_path: Path):
    first = processes.dashboard_token(tmp_path / "d")
    assert first == processes.dashboard_token(tmp_path / "d")
    assert (tmp_path / "d" / "dashboard.token").stat().st_mode & 0o077 == 0


def test_the_ingest_key_is_created_once_private_and_accepted_by_its_keys_file(tmp_path: Path):
    from ingest.auth import KeyFile

    keys, key = processes.ingest_key(tmp_path / "h", "make-run")
    assert processes.ingest_key(tmp_path / "h", "other") == (keys, key)  # once
    assert (tmp_path / "h" / "ingest.key").stat().st_mode & 0o077 == 0
    assert KeyFile(keys).check(key) and not KeyFile(keys).check(key + "x")
    keys.unlink()  # a key file without its keys file is made again, both together
    _, again = processes.ingest_key(tmp_path / "h", "make-run")
    assert again != key and KeyFile(keys).check(again)


def test_no_secret_reaches_a_command_line_that_ps_shows(tmp_path: Path):
    """`make run` (apm run) hands the ingest key to the agent and the load generator, and the
    dashboard its token, through the environment: no argv holds them, whole or in part."""
    key = "apm-secret-ingest-key-0123456789"
    table = run._platform(tmp_path, "127.0.0.1:9092", key)
    for name, spec in table.items():
        assert key not in shlex.join(spec.command), name
    assert table["loadgen"].env["APM_LOADGEN_API_KEY"] == key
    assert table["agent"].env["APM_AGENT_API_KEY"] == key
    for comp in run._components(tmp_path, "127.0.0.1:9092", fleet=True):
        assert comp.name in table  # restarts use the same table: no other command line
