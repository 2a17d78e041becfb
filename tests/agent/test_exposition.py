from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from agent.exposition import TelemetryServer, render
from agent.spool import Spool
from agent.stats import AgentStats

pytestmark = pytest.mark.unit


@pytest.fixture
def stats_and_spool(tmp_path):
    now = [1000.0]
    stats = AgentStats(lambda: now[0])
    spool = Spool(tmp_path / "spool")
    yield stats, spool, now
    spool.close()


def test_render_reports_counters_gauges_and_push_age(stats_and_spool):
    stats, spool, now = stats_and_spool
    stats.add("retries", 3)
    stats.pushed_ok(7)
    spool.append(b'{"x":1}')
    spool.append(b'{"x":2}')
    now[0] += 4.5
    text = render(stats, spool)
    samples = dict(line.split(" ") for line in text.splitlines() if not line.startswith("#"))
    assert samples["apm_agent_push_retries_total"] == "3.0"
    assert samples["apm_agent_snapshots_pushed_total"] == "7.0"
    assert samples["apm_agent_spool_depth"] == "2.0"
    assert float(samples["apm_agent_spool_bytes"]) > 0
    assert samples["apm_agent_last_push_age_seconds"] == "4.5"
    assert "# TYPE apm_agent_spool_depth gauge" in text


def test_server_serves_metrics_and_refuses_other_paths(stats_and_spool):
    stats, spool, _ = stats_and_spool
    server = TelemetryServer(stats, spool, "127.0.0.1", 0)
    assert server.start()
    try:
        url = f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as reply:
            assert reply.status == 200
            assert b"apm_agent_spool_depth 0.0" in reply.read()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{url}/other", timeout=5)
        assert info.value.code == 404
    finally:
        server.stop()


def test_a_taken_port_is_not_fatal(stats_and_spool):
    stats, spool, _ = stats_and_spool
    first = TelemetryServer(stats, spool, "127.0.0.1", 0)
    assert first.start()
    try:
        assert not TelemetryServer(stats, spool, "127.0.0.1", first.port or 0).start()
    finally:
        first.stop()
