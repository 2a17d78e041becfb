"""`apm stack` as an operator meets it: bad input fails fast and cleanly, up is idempotent,
down leaves nothing behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from launch.probe import free_port
from launch.supervisor import ManagedProcess, port_in_use

APM = [sys.executable, "-m", "apm.cli"]


def _apm(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # The timeout only guards against a hang; the contract is "fails within seconds".
    return subprocess.run(
        [*APM, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=240
    )


@pytest.mark.unit
def test_stale_pid_file_is_noticed_and_removed(tmp_path: Path):
    proc = ManagedProcess("kafka", tmp_path, marker="-Dapm.stack=kafka")
    proc.pidfile.write_text(str(os.getpid()))  # alive, but not a Kafka JVM
    assert proc.pid() is None
    assert not proc.pidfile.exists()
    proc.pidfile.write_text("not a pid")
    assert proc.pid() is None


@pytest.mark.unit
def test_port_in_use_detects_a_listener():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert port_in_use("127.0.0.1", sock.getsockname()[1])
    assert not port_in_use("127.0.0.1", free_port())


@pytest.mark.integration
def test_up_with_a_taken_port_fails_with_cause_and_log(stack, tmp_path: Path):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        done = _apm(
            ["stack", "up"], {"APM_STACK_VAR_DIR": str(tmp_path), "APM_STACK_KAFKA_PORT": str(port)}
        )
    assert done.returncode == 1
    assert f"port {port}" in done.stderr and "already in use" in done.stderr
    assert str(tmp_path / "kafka" / "kafka.log") in done.stderr
    assert not list(tmp_path.glob("*/*.pid"))


@pytest.mark.integration
def test_up_without_a_jdk_fails_clearly(tmp_path: Path):
    done = _apm(
        ["stack", "up"],
        {"APM_STACK_VAR_DIR": str(tmp_path), "APM_STACK_JAVA": str(tmp_path / "no-java")},
    )
    assert done.returncode == 1 and "no JDK" in done.stderr


@pytest.mark.integration
def test_failed_jar_resolution_names_the_log(tmp_path: Path):
    done = _apm(
        ["stack", "fetch"],
        {
            "APM_STACK_VAR_DIR": str(tmp_path),
            "APM_STACK_JAR_CACHE": str(tmp_path / "jars"),
            "APM_STACK_MVN": "false",
        },
    )
    assert done.returncode == 1
    assert "mvn failed for kafka" in done.stderr and "mvn-kafka.log" in done.stderr


@pytest.mark.integration
def test_private_stack_up_is_idempotent_and_down_leaves_no_process(stack, tmp_path: Path):
    env = {
        "APM_STACK_VAR_DIR": str(tmp_path),
        "APM_STACK_KAFKA_PORT": str(free_port()),
        "APM_STACK_KAFKA_CONTROLLER_PORT": str(free_port()),
        "APM_STACK_CASSANDRA_PORT": str(free_port()),
        "APM_STACK_CASSANDRA_STORAGE_PORT": str(free_port()),
        "APM_STACK_CASSANDRA_JMX_PORT": str(free_port()),
        "APM_STACK_CASSANDRA_HEAP": "512m",
        "APM_STACK_KAFKA_HEAP": "256m",
    }
    try:
        first = _apm(["stack", "up"], env)
        assert first.returncode == 0, first.stderr
        pids = {p.parent.name: int(p.read_text()) for p in tmp_path.glob("*/*.pid")}
        assert set(pids) == {"kafka", "cassandra"}
        again = _apm(["stack", "up"], env)
        assert again.returncode == 0 and "starting" not in again.stderr
        assert {p.parent.name: int(p.read_text()) for p in tmp_path.glob("*/*.pid")} == pids
        status = _apm(["stack", "status"], env)
        assert status.returncode == 0 and status.stdout.count("healthy") == 2
    finally:
        down = _apm(["stack", "down"], env)
    assert down.returncode == 0
    for pid in pids.values():
        assert (
            not Path(f"/proc/{pid}").exists()
            or b"apm.stack" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        )
    status = _apm(["stack", "status"], env)
    assert status.returncode == 3 and status.stdout.count("stopped") == 2


@pytest.mark.integration
def test_kafka_format_replaces_a_cluster_id_the_format_tool_would_read_as_an_option(
    stack, tmp_path: Path
):
    from launch.stack.config import StackSettings
    from launch.stack.services import SERVICES

    settings = StackSettings(var_dir=tmp_path)
    (tmp_path / "kafka").mkdir(parents=True)
    (tmp_path / "kafka" / "cluster.id").write_text("-leading-dash-id0000000")
    kafka = next(s for s in SERVICES if s.name == "kafka")
    kafka.prepare(settings)  # the real kafka-storage format; it failed on such an id
    assert not (tmp_path / "kafka" / "cluster.id").read_text().startswith("-")
    assert (tmp_path / "kafka" / "data" / "meta.properties").exists()
