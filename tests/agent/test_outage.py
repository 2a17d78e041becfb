"""The agent against the real ingest and Kafka: the ingest is stopped for 60 s, the agent is
killed and restarted in the middle of the outage, then the ingest comes back. Every second
the agent collected, of every metric, must reach Kafka."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from apm.kafka import end_offsets
from apm.model import topic_for
from launch.supervisor import ManagedProcess
from tests.support.kafka import read_samples

pytestmark = pytest.mark.integration

METRICS = [
    "load.1",
    "load.5",
    "load.15",
    "mem.total",
    "mem.used",
    "mem.available",
    "mem.util",
    "swap.total",
    "swap.used",
    "swap.util",
    "agent.rss",
    "agent.cpu",
    "agent.spool.depth",
    "agent.spool.bytes",
    "agent.spool.dropped",
    "agent.push.retries",
    "agent.push.rejected",
    "agent.push.age",
    "agent.collector.errors",
    "agent.statsd.packets",
    "agent.statsd.malformed",
]
OUTAGE_S = 60.0
_COLLECTED = re.compile(r"collected ts=(\d+)")


def _start_agent(home: Path, config: Path) -> ManagedProcess:
    proc = ManagedProcess("agent", home, marker=str(config))
    proc.start([sys.executable, "-m", "apm.cli", "-v", "agent", "run", "--config", str(config)])
    return proc


def _collected(log: Path) -> list[int]:
    return [int(m.group(1)) for m in _COLLECTED.finditer(log.read_text(errors="replace"))]


def _kill(proc: ManagedProcess) -> None:
    pid = proc.pid()
    assert pid is not None, f"agent died: {proc.tail()}"
    os.killpg(pid, signal.SIGKILL)  # no chance to flush anything: the spool must already hold it
    deadline = time.monotonic() + 10
    while proc.pid() is not None and time.monotonic() < deadline:
        os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)


def test_ingest_outage_with_agent_restart_loses_no_second(
    tmp_path: Path, kafka_bootstrap: str, unique_name
) -> None:
    from ingest.auth import add_key
    from launch import processes
    from launch.probe import free_port

    server = unique_name("agent-outage")
    key = add_key(tmp_path / "keys", "agent-tests")
    port = free_port()
    topics = [topic_for(m) for m in METRICS]
    since = end_offsets(kafka_bootstrap, topics)
    config = tmp_path / "agent.toml"
    config.write_text(
        f'[agent]\nserver = "{server}"\ningest_url = "{processes.ingest_url(port)}/v1/metrics"\n'
        f'api_key = "{key}"\nspool_dir = "{tmp_path / "spool"}"\n'
        'collectors = ["load", "memory", "agent"]\nstatsd_enabled = false\n'
        "backoff_cap_s = 5.0\n"
    )  # a shorter cap only so the test need not wait 30 s at the end
    config.chmod(0o600)  # it holds the key
    spec = processes.ingest(port, tmp_path / "keys", kafka_bootstrap)
    ingest = spec.start(tmp_path / "ingest")
    agent = _start_agent(tmp_path, config)
    try:
        time.sleep(10)
        ingest.stop()
        outage_began = time.monotonic()
        time.sleep(OUTAGE_S / 2)
        _kill(agent)
        first_run = _collected(agent.log)
        agent = _start_agent(tmp_path, config)
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - outage_began)))
        ingest = spec.start(tmp_path / "ingest")
        deadline = time.monotonic() + 90
        while True:
            time.sleep(3)
            collected = set(_collected(agent.log))
            rows = [
                (topic, ts, value)
                for topic, _server, ts, value in read_samples(
                    kafka_bootstrap, topics, since, server
                )
            ]
            seen: dict[str, set[int]] = defaultdict(set)
            for topic, ts, _value in rows:
                seen[topic].add(int(ts))
            missing = {t: sorted(collected - seen[t]) for t in topics if collected - seen[t]}
            if not missing or time.monotonic() > deadline:
                break
    finally:
        agent.stop()
        ingest.stop()
    second_run = sorted(set(collected) - set(first_run))
    assert len(first_run) >= 30 and len(second_run) >= 30, (first_run, second_run)
    assert second_run[0] > max(first_run)  # the restart really happened mid-outage
    assert not missing, f"collected but not in Kafka: {missing}"
    depth = [v for t, _ts, v in rows if t == topic_for("agent.spool.depth")]
    assert max(depth) >= OUTAGE_S / 4, "the outage never backed up the spool"
