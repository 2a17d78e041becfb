"""End to end: the load generator, a real agent and plain HTTP pushes -> ingest -> Kafka ->
Spark aggregator -> Cassandra, read back through the dashboard's REST API and compared with
what was sent. The aggregator runs as `make run` starts it (no --metrics, no --shard): it reads
exactly the topics of the queries stored in this test's keyspace."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.http import http_json, metric_value

pytestmark = pytest.mark.e2e


@dataclass
class Platform:
    ingest_url: str
    api_key: str
    dashboard_url: str
    dashboard_token: str
    aggregator_metrics: str
    kafka_bootstrap: str
    metric_prefix: str  # this run's metric names start with it
    keyspace: str
    home: Path


@pytest.fixture(scope="module")
def platform(stack, tmp_path_factory) -> Iterator[Platform]:
    from ingest.auth import add_key
    from launch import processes
    from launch.probe import free_port

    home = tmp_path_factory.mktemp("e2e")
    keyspace = f"e2e_{uuid.uuid4().hex[:8]}"
    prefix = f"e2e{uuid.uuid4().hex[:6]}."
    # The broker is shared with every other test; the job reads only the topics of the queries
    # in this keyspace, as `make run`'s does in its own.
    env = {"APM_STORAGE_KEYSPACE": keyspace, "APM_KAFKA_BOOTSTRAP": stack.kafka_bootstrap}
    os.environ.update(env)  # the launchers' children inherit it
    started = []
    try:
        metrics_port = free_port()
        aggregator_spec = processes.aggregator(
            home / "aggregator" / "checkpoint", metrics_port=metrics_port, keyspace=keyspace
        )
        aggregator = aggregator_spec.start(home / "aggregator", env=env, wait_s=None)
        started.append(aggregator)
        key = add_key(home / "keys")
        ingest_port = free_port()
        started.append(
            processes.ingest(ingest_port, home / "keys", stack.kafka_bootstrap).start(
                home / "ingest"
            )
        )
        token = uuid.uuid4().hex
        dash_port = free_port()
        started.append(
            processes.dashboard(dash_port).start(
                home / "dashboard", env={**env, "APM_DASHBOARD_TOKEN": token}
            )
        )
        aggregator.wait_healthy(aggregator_spec.ready, 180)
        yield Platform(
            f"http://127.0.0.1:{ingest_port}",
            key,
            f"http://127.0.0.1:{dash_port}",
            token,
            f"http://127.0.0.1:{metrics_port}/metrics",
            stack.kafka_bootstrap,
            prefix,
            keyspace,
            home,
        )
    finally:
        for proc in reversed(started):
            proc.stop(30)
        for name in env:
            os.environ.pop(name, None)


def test_results_equal_the_generators_truth(platform: Platform, tmp_path: Path):
    prefix = platform.metric_prefix
    text = (
        f"FROM web-*, db-* SELECT {prefix}cpu.util WINDOW 10s "
        "COMPUTE min, max, avg, count, sum, p50, p99"
    )
    created = http_json(
        f"{platform.dashboard_url}/api/queries", platform.dashboard_token, {"text": text}
    )
    query_id = created["id"]
    # The same selection per server, ranked: its rows are written by the executors (Java
    # driver), so this checks that path as `make run` starts it.
    split = http_json(
        f"{platform.dashboard_url}/api/queries",
        platform.dashboard_token,
        {"text": f"{text.split(' COMPUTE ')[0]} COMPUTE count, max BY server TOP 3 BY max"},
    )

    # Samples no active query wants are dropped by design: wait until the job evaluates it.
    deadline = time.monotonic() + 300  # Spark's first plan takes minutes on a busy 2-core box
    while (
        metric_value(platform.aggregator_metrics, "apm_aggregator_active_queries", timeout=2) or 0
    ) < 2:
        assert time.monotonic() < deadline, "the aggregator never picked up the query"
        time.sleep(1)

    start = (math.floor(time.time()) // 10) * 10 - 120  # two minutes back: within lateness
    truth_file = tmp_path / "truth.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "apm.cli",
            "loadgen",
            "--servers",
            "40",
            "--metrics",
            "3",
            "--metric-prefix",
            prefix,
            "--duration",
            "60s",
            "--start",
            str(start),
            "--target",
            platform.ingest_url,
            "--api-key",
            platform.api_key,
            "--seed",
            "7",
            "--silent-fraction",
            "0.1",
            "--query",
            text,
            "--expect",
            str(truth_file),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(run.stdout)
    assert summary["lost"] == 0 and summary["rejected"] == 0
    truth = json.loads(truth_file.read_text())
    expected = {w["window_start"]: w for w in truth["windows"]}
    assert len(expected) == 6 and truth["servers_matched"] > 0

    url = f"{platform.dashboard_url}/api/queries/{query_id}/results?from={start}&to={start + 60}"
    deadline = time.monotonic() + 180
    while True:
        got = {w["window_start"]: w for w in http_json(url, platform.dashboard_token)["windows"]}
        if set(got) == set(expected) and all(
            got[s]["samples"] == expected[s]["samples"] for s in expected
        ):
            break
        assert time.monotonic() < deadline, (
            f"windows not complete: got {[(s, w['samples']) for s, w in sorted(got.items())]}, "
            f"expected {[(s, w['samples']) for s, w in sorted(expected.items())]}"
        )
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
    # A server's window is written when the job's newest event time passes its end plus the
    # grace (v5): the fleet's run ended, so a sample of a server the queries do not select
    # moves it past the last window, as the rest of a fleet would.
    clock = {"server": "clock", "ts": start + 90.0, "metrics": {f"{prefix}cpu.util": 0.0}}
    _push(platform, [clock])
    _check_per_server(platform, split["id"], expected)


def _push(platform: Platform, snapshots: list[dict]) -> None:
    req = urllib.request.Request(
        f"{platform.ingest_url}/v1/metrics",
        data=json.dumps({"snapshots": snapshots}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {platform.api_key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as reply:
        assert reply.status == 202


def _check_per_server(platform: Platform, query_id: str, expected: dict[float, dict]) -> None:
    """Each window's per-server rows add up to the plain query's truth (counts sum to its
    samples, the largest max is its max), and its ranking is apm.ranking's over them."""
    from apm.query import parse
    from apm.ranking import rank
    from storage.repository import Repository
    from storage.settings import StorageSettings

    query = parse(
        f"FROM web-*, db-* SELECT {platform.metric_prefix}cpu.util WINDOW 10s "
        "COMPUTE count, max BY server TOP 3 BY max"
    )
    deadline = time.monotonic() + 180
    with Repository.connect(StorageSettings(keyspace=platform.keyspace)) as repo:
        while True:  # the ranking is written right after its window's rows: wait for both
            rows = {s: list(repo.read_window_servers(query_id, s)) for s in expected}
            counts = {s: sum(r.samples for r in rows[s]) for s in expected}
            ranked = {s: list(repo.read_ranked(query_id, s, s + 1)) for s in expected}
            want = {s: rank(query, rows[s]) for s in expected}
            done = all(counts[s] == expected[s]["samples"] for s in expected)
            if done and all(
                [(r.server, r.values) for r in ranked[s]] == [(r.server, r.values) for r in want[s]]
                for s in expected
            ):
                break
            assert time.monotonic() < deadline, (
                f"per-server windows or rankings not complete: {counts}, "
                f"{[(s, [r.server for r in ranked[s]]) for s in expected]}"
            )
            time.sleep(2)
        for start_s, truth in expected.items():
            servers = rows[start_s]
            assert all(r.values["count"] == r.samples for r in servers)
            assert max(r.values["max"] for r in servers) == truth["values"]["max"]


def _wait_until_read(platform: Platform, metric: str, timeout_s: float = 300) -> None:
    """Until the running job subscribes to ``metric`` (it polls the query table each trigger)."""
    deadline = time.monotonic() + timeout_s
    while True:
        jobs = _aggregator_status(platform)
        if any(metric in (payload.get("reads") or []) for payload in jobs.values()):
            return
        assert time.monotonic() < deadline, f"no job reads {metric}: {jobs}"
        time.sleep(1)


def _aggregator_status(platform: Platform) -> dict[str, dict]:
    from storage.repository import Repository
    from storage.settings import StorageSettings

    with Repository.connect(StorageSettings(keyspace=platform.keyspace)) as repo:
        return {k: v for k, v in repo.get_status().items() if k.startswith("aggregator")}


def _windows(platform: Platform, query_id: str, start: float, end: float) -> dict[float, dict]:
    url = f"{platform.dashboard_url}/api/queries/{query_id}/results?from={start}&to={end}"
    return {w["window_start"]: w for w in http_json(url, platform.dashboard_token)["windows"]}


def test_a_query_on_a_metric_never_seen_gets_exact_windows_from_the_running_job(platform: Platform):
    import numpy as np

    metric = f"{platform.metric_prefix}never.seen.{uuid.uuid4().hex[:6]}"  # no topic yet
    text = f"FROM * SELECT {metric} WINDOW 10s COMPUTE min, max, count, sum"
    query_id = http_json(
        f"{platform.dashboard_url}/api/queries", platform.dashboard_token, {"text": text}
    )["id"]
    _wait_until_read(platform, metric)
    rng = np.random.default_rng(11)
    start = (math.floor(time.time()) // 10) * 10 - 30  # whole windows, within the lateness
    sent: dict[float, list[float]] = {}
    for second in range(30):
        snapshots = [
            {
                "server": f"new-{s}",
                "ts": start + second + 0.5,
                "metrics": {metric: float(rng.normal(10, 3))},
            }
            for s in range(5)
        ]
        for snap in snapshots:
            sent.setdefault(start + (second // 10) * 10, []).append(snap["metrics"][metric])
        _push(platform, snapshots)
    want = {
        ws: {"min": min(v), "max": max(v), "count": float(len(v)), "sum": float(np.sum(v))}
        for ws, v in sent.items()
    }

    deadline = time.monotonic() + 180
    while True:
        got = _windows(platform, query_id, start, start + 30)
        if {ws: w["samples"] for ws, w in got.items()} == {
            ws: int(w["count"]) for ws, w in want.items()
        }:
            break
        assert time.monotonic() < deadline, f"windows {got} never became {want}"
        time.sleep(2)
    for ws, values in want.items():
        have = got[ws]["values"]
        assert (have["min"], have["max"], have["count"]) == (
            values["min"],
            values["max"],
            values["count"],
        )
        assert have["sum"] == pytest.approx(values["sum"], rel=1e-12)
    assert list(_aggregator_status(platform)) == ["aggregator"]  # no other job was started


def test_a_statsd_metric_from_a_stock_client_through_the_agent_gets_results(platform: Platform):
    from datadog.dogstatsd import DogStatsd

    from launch import processes
    from launch.probe import free_port

    metric = f"{platform.metric_prefix}app.requests"
    server = f"e2e-agent-{uuid.uuid4().hex[:6]}"
    text = f"FROM {server} SELECT {metric} WINDOW 10s COMPUTE sum, max"
    query_id = http_json(
        f"{platform.dashboard_url}/api/queries", platform.dashboard_token, {"text": text}
    )["id"]
    _wait_until_read(platform, metric)
    port = free_port()  # StatsD is UDP; a free TCP port number is free enough on loopback
    metrics_port = free_port()
    agent = processes.agent(
        f"{platform.ingest_url}/v1/metrics",
        platform.api_key,
        platform.home / f"spool-{server}",
        env={
            "APM_AGENT_SERVER": server,
            "APM_AGENT_STATSD_PORT": str(port),
            "APM_AGENT_METRICS_PORT": str(metrics_port),
            "APM_AGENT_COLLECTORS": '["cpu"]',
        },
    ).start(platform.home / f"agent-{server}")
    try:
        # The agent starts its StatsD listener before its /metrics: once that answers, no
        # datagram is sent to a closed port.
        agent.wait_healthy(
            lambda: (
                metric_value(
                    f"http://127.0.0.1:{metrics_port}/metrics",
                    "apm_agent_statsd_packets_total",
                    timeout=2,
                )
                is not None
            ),
            60,
        )
        client = DogStatsd(host="127.0.0.1", port=port, disable_telemetry=True)
        begun = time.time()
        sent = 0
        while time.time() - begun < 25:
            client.increment(metric, 3)
            sent += 3
            time.sleep(0.1)
        client.flush()
        deadline = time.monotonic() + 180
        while True:
            got = _windows(platform, query_id, begun - 60, time.time() + 60)
            total = sum(w["values"]["sum"] for w in got.values())
            if total == sent:
                break
            assert time.monotonic() < deadline, f"summed {total} of {sent} increments: {got}"
            time.sleep(2)
        assert max(w["values"]["max"] for w in got.values()) > 0
    finally:
        agent.stop(30)
