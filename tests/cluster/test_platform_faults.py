"""Faults of the platform's own processes under load: ``kill -9`` of one ingest replica (the
load balancer routes around it; retries deliver; nothing lost or counted twice), and one
aggregator shard stopped (its metrics "not covered", its lag grows, and started again it
catches up from its checkpoint). Figures go to var/cluster/faults.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from apm.tls import client_context
from launch.probe import http_ok
from tests.cluster.conftest import Cluster
from tests.cluster.support import (
    Figures,
    converge,
    health_page,
    kill9,
    start_node,
    wait_for,
)
from tests.support.http import http_json

pytestmark = pytest.mark.cluster


def test_kill9_an_ingest_replica_the_lb_routes_around_it(cluster: Cluster, tmp_path: Path) -> None:
    probe, victim = cluster.probes["ingest"], "ingest-1"
    lb = cluster.layout.lb_url
    tls = client_context(cluster.layout.lb_tls_ca)
    figures = Figures("ingest replica kill -9")
    load = cluster.load("ingest", tmp_path, seed=14)
    load.at(15)
    killed = time.monotonic()
    kill9(cluster.layout, victim)
    streak = 0

    def routed_around() -> bool:
        nonlocal streak
        streak = streak + 1 if http_ok(f"{lb}/readyz", 2, context=tls) else 0
        return streak >= 5

    wait_for(routed_around, 30, "the load balancer answers through the other replica")
    figures.recover_s = round(time.monotonic() - killed, 1)
    figures.recovery = f"kill of {victim} until the lb answered 5 probes in a row"
    load.at(30)
    figures.notes["replica_restart_s"] = start_node(cluster.layout, victim)
    load.fault_over()
    truth = load.finish(figures)
    converge(lambda a, b: cluster.read(probe, a, b), truth, figures, cluster.layout.var)


def _status(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "apm.cli", "aggregator", "status", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **cluster.layout.env()},
    )


def _job_status(cluster: Cluster, shard: int) -> dict[str, Any]:
    run = _status(cluster, "--json")
    jobs = {j["identity"]: j for j in json.loads(run.stdout)}
    return dict(jobs[cluster.job(shard)])


def test_a_stopped_aggregator_shard_is_not_covered_and_catches_up(
    cluster: Cluster, tmp_path: Path
) -> None:
    from launch.cluster import platform

    probe = cluster.probes["shard"]
    node = f"aggregator-{probe.shard}"
    query = f"{cluster.layout.dashboard_url}/api/queries/{probe.query_id}"
    figures = Figures("aggregator shard stopped")
    load = cluster.load("shard", tmp_path, seed=15, seconds=80)
    load.at(10)
    # The lag a running shard shows under this load: caught up means back to about this.
    baseline = sum(
        int(v) for v in (cluster.status()[cluster.job(probe.shard)].get("lag") or {}).values()
    )
    figures.notes["lag_running"] = baseline
    assert platform.stop_node(cluster.layout, node)
    stopped = time.monotonic()

    def not_covered() -> bool:
        return bool(http_json(query, cluster.token, timeout=5.0)["state"] == "not-covered")

    figures.notes["not_covered_after_s"] = round(wait_for(not_covered, 90, "not-covered"), 1)
    page = health_page(cluster.layout.dashboard_url, cluster.token)
    assert "h-not-covered" in page and probe.metric in page, page[:2000]
    text = _status(cluster).stdout
    assert f"{cluster.job(probe.shard)}: NOT RUNNING" in text, text
    assert f"not covered: {probe.metric}" in text, text
    first = _job_status(cluster, probe.shard)
    assert first["lag_from"] == "checkpoint", first
    time.sleep(8)
    second = _job_status(cluster, probe.shard)
    assert second["lag_total"] > first["lag_total"], (first, second)
    figures.notes.update(
        lag_stopped_first=first["lag_total"], lag_stopped_later=second["lag_total"]
    )
    figures.notes["stopped_s"] = round(time.monotonic() - stopped, 1)
    restarted = time.monotonic()
    platform.start_node(cluster.layout, node, wait_s=300)
    load.fault_over()

    def caught_up() -> bool:
        status = cluster.status().get(cluster.job(probe.shard)) or {}
        lag = status.get("lag") or {}
        fresh = float(status.get("updated_at") or 0) > time.time() - 10
        behind = sum(int(v) for v in lag.values())
        return (
            fresh
            and behind <= max(50, 2 * baseline)
            and probe.metric in (status.get("reads") or [])
        )

    wait_for(caught_up, 300, f"{node} caught up")
    figures.recover_s = round(time.monotonic() - restarted, 1)
    figures.recovery = (
        f"restart of {node} until its lag is back to its running level (from its checkpoint)"
    )
    truth = load.finish(figures)
    converge(lambda a, b: cluster.read(probe, a, b), truth, figures, cluster.layout.var)
    assert http_json(query, cluster.token, timeout=5.0)["state"] != "not-covered"
