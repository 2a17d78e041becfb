"""The agent's .deb on a clean bookworm root, joined to this machine only by a veth pair with
two link-local addresses (tests/support/cleanhost.py): installed with dpkg -i and no network,
run with the unit's ExecStart, user, environment and umask in its own network namespace, it
pushes to an ingest this test starts on the host side of the veth, which publishes to the
shared Kafka. Its samples arrive under the clean host's own name within 10 s; then the veth is
cut for 30 s, and after it returns every second is in Kafka, once (deduplicated by metric,
server and second; a resent sample carries the same value)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest

from agent.version import version_number
from apm.agentversion import version_text
from apm.kafka import end_offsets
from apm.model import topic_for
from dashboard.agents import KafkaAgentVersions
from tests.support.cleanhost import unit_service, veth_netns
from tests.support.kafka import read_samples

pytestmark = pytest.mark.e2e

METRICS = ["agent.version", "agent.rss", "agent.spool.depth"]
ARRIVAL_S = 10.0
OUTAGE_S = 30.0


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_clean_host_pushes_through_a_veth_and_survives_a_30s_cut(
    build_deb, clean_host, tmp_path: Path, kafka_bootstrap: str
) -> None:
    from ingest.auth import add_key
    from launch import processes
    from launch.probe import free_port

    deb = build_deb()
    host = clean_host()
    host.install(deb)
    topics = [topic_for(m) for m in METRICS]
    log = tmp_path / "agent.log"
    with veth_netns() as link:
        port = free_port(link.host_addr)
        key = add_key(tmp_path / "keys", "clean-host")
        since = end_offsets(kafka_bootstrap, topics)
        ingest = processes.ingest(port, tmp_path / "keys", kafka_bootstrap, host=link.host_addr)
        ingest_proc = ingest.start(tmp_path / "ingest")
        # What the user does after the install: the URL and key in the 0600 config, and a
        # fragment (a shorter backoff cap only so the test need not wait 30 s at the end).
        conf = host.path("/etc/apm/agent.toml")
        conf.write_text(
            conf.read_text().replace(
                '# ingest_url = "https://ingest.example.internal/v1/metrics"',
                f'ingest_url = "{processes.ingest_url(port, link.host_addr)}/v1/metrics"',
            )
            + f'api_key = "{key}"\n'
        )
        host.path("/etc/apm/agent.d/90-test.toml").write_text("[agent]\nbackoff_cap_s = 2.0\n")
        service = unit_service(host.path("/lib/systemd/system/apm-agent.service").read_text())
        argv = host.command(
            shlex.split(service["ExecStart"][0]),
            user=service["User"][0],
            link=link,
            env=dict(e.split("=", 1) for e in service["Environment"]),
            umask=service["UMask"][0],
        )
        with log.open("wb") as out:
            agent = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            started = time.monotonic()
            first: list[tuple[str, str, float, float]] = []
            while not first and time.monotonic() - started < ARRIVAL_S:
                time.sleep(0.5)
                first = read_samples(kafka_bootstrap, topics[:1], since, host.hostname)
            assert first, f"nothing from {host.hostname} in {ARRIVAL_S} s:\n{log.read_text()}"
            assert first[0][3] == version_number(deb.name.split("_")[1])
            # What the health page's Agents card shows (docs/agent.md): this host, this version.
            seen = KafkaAgentVersions(kafka_bootstrap, lookback_s=60).versions()
            assert seen[host.hostname].version == version_text(first[0][3])
            assert deb.name.split("_")[1].startswith(seen[host.hostname].version)

            time.sleep(3)
            link.cut()
            cut_at = time.time()
            time.sleep(OUTAGE_S)
            link.restore()
            back_at = time.time()
            deadline = time.monotonic() + 90
            while True:
                time.sleep(3)
                rows = read_samples(kafka_bootstrap, topics, since, host.hostname)
                seconds: dict[str, dict[int, set[float]]] = defaultdict(lambda: defaultdict(set))
                for topic, _server, ts, value in rows:
                    seconds[topic][int(ts)].add(value)
                newest = min((max(s) for s in seconds.values()), default=0)
                if newest >= back_at + 5 or time.monotonic() > deadline:
                    break
        finally:
            _stop(agent)
            ingest_proc.stop()
    assert agent.returncode in (0, -signal.SIGTERM), log.read_text()
    assert newest >= back_at + 5, f"no second after the link returned:\n{log.read_text()}"
    oldest = min(min(s) for s in seconds.values())
    for topic in topics:
        missing = sorted(set(range(oldest, newest + 1)) - set(seconds[topic]))
        assert not missing, f"{topic}: seconds never arrived: {missing}"
        changed = {ts: v for ts, v in seconds[topic].items() if len(v) > 1}
        assert not changed, f"{topic}: one second, different values: {changed}"
    assert oldest < cut_at - 2 and newest > back_at + 2
    depth = seconds[topic_for("agent.spool.depth")]
    assert max(max(v) for v in depth.values()) >= OUTAGE_S * 2 / 3, "the cut spooled nothing"
