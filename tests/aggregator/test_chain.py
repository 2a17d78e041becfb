"""The real chain: Kafka -> ``apm aggregator run`` (a subprocess) -> the real Cassandra, and
the crash test: kill -9 mid-stream, restart from the checkpoint, and the results converge to
exactly those of an uninterrupted run (an in-process job over the same topics)."""

from __future__ import annotations

import math
import os
import signal
import time

import pytest

from aggregator.job import Aggregator
from aggregator.settings import AggregatorSettings
from apm.ranking import rank
from launch import processes
from launch.probe import free_port
from tests.aggregator.conftest import BASE, assert_matches, expected
from tests.support.keyspaces import scratch_repository

pytestmark = pytest.mark.integration


@pytest.fixture
def repository(stack):
    with scratch_repository("aggt") as repo:
        yield repo


def _stored(repo, query_id):
    return {r.window_start: r for r in repo.read_results(query_id, BASE - 3600, BASE + 7200)}


def _series(repo, query_id, server):
    return {
        r.window_start: r
        for r in repo.read_server_results(query_id, server, BASE - 3600, BASE + 7200)
    }


def _close(got, want) -> bool:
    return got.keys() == want.keys() and all(
        got[ws].values.keys() == values.keys()
        and all(math.isclose(got[ws].values[k], v, rel_tol=1e-9) for k, v in values.items())
        for ws, values in want.items()
    )


def _wait_for(condition, timeout_s: float, proc=None) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            tail = proc.tail(30) if proc is not None else ""
            raise AssertionError(f"condition not met in {timeout_s:.0f}s\n{tail}")
        time.sleep(1.0)


def test_kill9_and_restart_converge_to_the_uninterrupted_results(
    repository, spark, fake_store, kafka_bootstrap, metric_topics, produce, fleet_rows, tmp_path
):
    metric = metric_topics()
    queries = [
        repository.save_query(
            f"FROM * SELECT {metric} WINDOW 10s COMPUTE min, max, avg, count, sum, p50, p99"
        ),
        repository.save_query(f"FROM web-1* SELECT {metric} WINDOW 1m COMPUTE p90, count"),
    ]
    # Per server, ranked: written by the executors, whose replayed batch writes them again.
    split = repository.save_query(
        f"FROM web-1* SELECT {metric} WINDOW 10s COMPUTE max, count, avg BY server TOP 2 BY max"
    )
    rows = fleet_rows(20, 120)
    clock = [("clock", BASE + 150.0, 0.0)]
    parts = [rows[i::6] for i in range(6)]  # every part touches every window
    for part in parts[:3]:
        produce(metric, part)

    port = free_port()
    home = tmp_path / "job"
    env = {
        "APM_AGGREGATOR_TRIGGER_SECONDS": "1",
        "APM_AGGREGATOR_SERVERS_TRIGGER_SECONDS": "1",
        "APM_AGGREGATOR_DRIVER_MEMORY": "768m",
    }
    spec = processes.aggregator(
        home / "checkpoint", metrics=[metric], metrics_port=port, keyspace=repository.keyspace
    )
    proc = spec.start(home, env=env, wait_s=None)
    try:
        proc.wait_healthy(spec.ready, timeout_s=120)
        _wait_for(lambda: bool(_stored(repository, queries[0].id)), 180, proc)
        # Part 3 and a resend of part 0 (already counted) arrive as the job dies: the batch
        # that reads them is replayed by the restarted job, and nothing counts twice.
        produce(metric, parts[3] + parts[0][::2])
        pid = proc.pid()
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)  # mid-stream: part 3 is arriving
        _wait_for(lambda: proc.pid() is None, 30)
        for part in parts[4:]:
            produce(metric, part)
        # A server no query selects per server moves the newest event time on: a server's
        # window is written once that passes the window's end plus the grace (v5).
        produce(metric, clock)
        proc = spec.start(home, env=env, wait_s=None)
        want = {q.id: expected(rows + clock, q.query) for q in queries}
        mine = sorted({s for s, _, _ in rows if split.query.matches(s)})
        per_server = {s: expected([r for r in rows if r[0] == s], split.query) for s in mine}

        def converged() -> bool:
            return all(_close(_stored(repository, q.id), want[q.id]) for q in queries) and all(
                _close(_series(repository, split.id, s), per_server[s]) for s in mine
            )

        _wait_for(converged, 240, proc)
        status = repository.get_status()[f"aggregator-metrics-{metric}"]
        _wait_for(
            lambda: set(repository.list_servers()) >= {f"web-{i}" for i in range(20)}, 60, proc
        )
    finally:
        proc.stop(timeout_s=30)
    assert status["active_queries"] == 3
    for server in mine:
        assert_matches(_series(repository, split.id, server), per_server[server])
    for ws in {w for windows in per_server.values() for w in windows}:
        servers = list(repository.read_window_servers(split.id, ws))
        ranked = list(repository.read_ranked(split.id, ws, ws + 1))
        assert [(r.server, r.values, r.samples) for r in ranked] == [
            (r.server, r.values, r.samples) for r in rank(split.query, servers)
        ]

    # The uninterrupted run: the same topic, a fresh checkpoint, no crash.
    for q in queries:
        fake_store.queries[q.id] = q
    job = Aggregator(
        spark,
        fake_store,
        AggregatorSettings(
            kafka_bootstrap=kafka_bootstrap,
            metrics=metric,
            checkpoint_dir=tmp_path / "ref",
            trigger_seconds=0.5,
            track_servers=False,
            metrics_port=0,
        ),
    )
    job.start()
    try:
        assert job.windows is not None
        job.windows.processAllAvailable()
    finally:
        job.stop()
    for q in queries:
        crashed, clean = _stored(repository, q.id), fake_store.of(q.id)
        assert {ws: (r.values, r.samples) for ws, r in crashed.items()} == {
            ws: (r.values, r.samples) for ws, r in clean.items()
        }
        assert_matches(crashed, want[q.id])
