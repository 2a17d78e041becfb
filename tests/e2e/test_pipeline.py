"""End to end: the load generator -> ingest -> Kafka -> Spark aggregator -> Cassandra, read
back through the dashboard's REST API, compared with the generator's own truth."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


@dataclass
class Platform:
    ingest_url: str
    api_key: str
    dashboard_url: str
    dashboard_token: str
    aggregator_metrics: str
    kafka_bootstrap: str
    metric_prefix: str  # the only topics this platform's aggregator reads


def _http_json(url: str, token: str, body: dict | None = None, timeout: float = 10.0):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as reply:
        return json.loads(reply.read())


def _gauge(url: str, name: str) -> float | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    match = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


@pytest.fixture(scope="module")
def platform(stack, tmp_path_factory) -> Iterator[Platform]:
    from aggregator.launcher import metrics_up, start_aggregator
    from dashboard.launcher import start_dashboard
    from ingest.auth import add_key
    from ingest.launcher import free_port, start_ingest

    home = tmp_path_factory.mktemp("e2e")
    keyspace = f"e2e_{uuid.uuid4().hex[:8]}"
    prefix = f"e2e{uuid.uuid4().hex[:6]}."
    # The broker is shared with every other test: read only this run's topics.
    env = {"APM_STORAGE_KEYSPACE": keyspace, "APM_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
           "APM_AGGREGATOR_TRIGGER_SECONDS": "2",
           "APM_AGGREGATOR_TOPIC_PATTERN": re.escape(f"apm.metric.{prefix}") + ".+"}
    os.environ.update(env)  # the launchers' children inherit it
    started = []
    try:
        metrics_port = free_port()
        aggregator = start_aggregator(home / "aggregator", metrics_port=metrics_port,
                                      keyspace=keyspace, env=env)
        started.append(aggregator)
        key = add_key(home / "keys")
        ingest_port = free_port()
        started.append(start_ingest(ingest_port, home / "keys", stack.kafka_bootstrap,
                                    home / "ingest"))
        token = uuid.uuid4().hex
        dash_port = free_port()
        started.append(start_dashboard(home / "dashboard", dash_port,
                                       env={**env, "APM_DASHBOARD_TOKEN": token}))
        aggregator.wait_healthy(lambda: metrics_up(metrics_port), 180)
        yield Platform(f"http://127.0.0.1:{ingest_port}", key, f"http://127.0.0.1:{dash_port}",
                       token, f"http://127.0.0.1:{metrics_port}/metrics", stack.kafka_bootstrap,
                       prefix)
    finally:
        for proc in reversed(started):
            proc.stop(30)
        for name in env:
            os.environ.pop(name, None)


def test_results_equal_the_generators_truth(platform: Platform, tmp_path: Path):
    prefix = platform.metric_prefix
    text = (f"FROM web-*, db-* SELECT {prefix}cpu.util WINDOW 10s "
            "COMPUTE min, max, avg, count, sum, p50, p99")
    created = _http_json(f"{platform.dashboard_url}/api/queries", platform.dashboard_token,
                         {"text": text})
    query_id = created["id"]

    # Samples no active query wants are dropped by design: wait until the job evaluates it.
    deadline = time.monotonic() + 300  # Spark's first plan takes minutes on a busy 2-core box
    while (_gauge(platform.aggregator_metrics, "apm_aggregator_active_queries") or 0) < 1:
        assert time.monotonic() < deadline, "the aggregator never picked up the query"
        time.sleep(1)

    start = (math.floor(time.time()) // 10) * 10 - 120  # two minutes back: within lateness
    truth_file = tmp_path / "truth.json"
    run = subprocess.run(
        [sys.executable, "-m", "apm.cli", "loadgen", "--servers", "40", "--metrics", "3",
         "--metric-prefix", prefix, "--duration", "60s", "--start", str(start),
         "--target", platform.ingest_url, "--api-key", platform.api_key, "--seed", "7",
         "--silent-fraction", "0.1", "--query", text, "--expect", str(truth_file), "--quiet"],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(run.stdout)
    assert summary["lost"] == 0 and summary["rejected"] == 0
    truth = json.loads(truth_file.read_text())
    expected = {w["window_start"]: w for w in truth["windows"]}
    assert len(expected) == 6 and truth["servers_matched"] > 0

    url = (f"{platform.dashboard_url}/api/queries/{query_id}/results"
           f"?from={start}&to={start + 60}")
    deadline = time.monotonic() + 180
    while True:
        got = {w["window_start"]: w for w in
               _http_json(url, platform.dashboard_token)["windows"]}
        if (set(got) == set(expected)
                and all(got[s]["samples"] == expected[s]["samples"] for s in expected)):
            break
        assert time.monotonic() < deadline, (
            f"windows not complete: got {[(s, w['samples']) for s, w in sorted(got.items())]}, "
            f"expected {[(s, w['samples']) for s, w in sorted(expected.items())]}")
        time.sleep(2)

    for start_s, want in expected.items():
        have = got[start_s]["values"]
        assert have["count"] == want["values"]["count"] == want["samples"]  # no sample lost
        assert have["min"] == want["values"]["min"]
        assert have["max"] == want["values"]["max"]
        # Sums of the same doubles in another order may differ in the last bit or two.
        assert have["sum"] == pytest.approx(want["values"]["sum"], rel=1e-12)
        assert have["avg"] == pytest.approx(want["values"]["avg"], rel=1e-12)
        for key in ("p50", "p99"):
            assert have[key] == pytest.approx(want["values"][key], rel=1e-12)
            assert want["values"]["min"] <= have[key] <= want["values"]["max"]
