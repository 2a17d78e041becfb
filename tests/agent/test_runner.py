"""The agent's tick: host metrics and StatsD seconds merged into spooled snapshots, a failing
collector contained and counted."""

from __future__ import annotations

import json

import pytest

from agent.collectors import CollectorContext, Registry, default_registry
from agent.runner import Agent

pytestmark = pytest.mark.unit


def _spooled(agent: Agent) -> list[dict]:
    return [json.loads(r) for r in agent.spool.peek(1000, 1 << 30)]


def test_a_tick_spools_host_metrics_with_the_statsd_second(
    make_settings, fake_psutil, make_http, clock
) -> None:
    clock.now = 1_763_800_000.25
    agent = Agent(
        make_settings(collectors=["load", "memory"]),
        psutil=fake_psutil,
        clock=clock,
        http=make_http(),
    )
    assert agent.aggregator is not None
    agent.aggregator.ingest(b"rpc.latency:84|ms\nrpc.latency:3|ms")
    clock.now = 1_763_800_001.0
    [snapshot] = agent.tick(clock())
    assert snapshot.ts == 1_763_800_001.0
    assert snapshot.metrics["load.1"] == 0.5
    assert snapshot.metrics["rpc.latency.max"] == 84.0
    assert _spooled(agent)[0]["metrics"]["mem.used"] == 6e9
    assert agent.pusher.push_once() == 0.0  # pushed, nothing left behind
    assert agent.spool.depth == 0


def test_statsd_seconds_from_a_stall_become_their_own_snapshots(
    make_settings, fake_psutil, make_http, clock
) -> None:
    clock.now = 1_763_800_000.5
    agent = Agent(
        make_settings(collectors=["load"]), psutil=fake_psutil, clock=clock, http=make_http()
    )
    assert agent.aggregator is not None
    agent.aggregator.ingest(b"hits:1|c")
    clock.advance(2)
    agent.aggregator.ingest(b"hits:5|c")
    clock.now = 1_763_800_003.0
    snapshots = agent.tick(clock())
    assert [(s.ts, s.metrics.get("hits")) for s in snapshots] == [
        (1_763_800_001.0, 1.0),
        (1_763_800_002.0, 0.0),
        (1_763_800_003.0, 5.0),
    ]
    assert "load.1" in snapshots[-1].metrics


def test_a_failing_collector_is_counted_not_fatal(
    make_settings, fake_psutil, make_http, clock, caplog
) -> None:
    class Broken:
        name = "broken"

        def __init__(self, context: CollectorContext) -> None:
            pass

        def collect(self, now: float) -> dict[str, float]:
            raise RuntimeError("sensor gone")

    class BadNames:
        name = "badnames"

        def __init__(self, context: CollectorContext) -> None:
            pass

        def collect(self, now: float) -> dict[str, float]:
            return {"ok.metric": 1.0, "bad name": 2.0, "nan.metric": float("nan")}

    registry: Registry = default_registry()
    registry.add("broken", Broken)
    registry.add("badnames", BadNames)
    agent = Agent(
        make_settings(collectors=["broken", "badnames", "load"]),
        psutil=fake_psutil,
        clock=clock,
        http=make_http(),
        registry=registry,
        statsd=False,
    )
    [snapshot] = agent.tick(float(int(clock())))
    assert snapshot.metrics == {"ok.metric": 1.0, "load.1": 0.5, "load.5": 0.25, "load.15": 0.125}
    assert agent.stats.collector_errors == 3
    assert agent.stats.collectors_failing == 1
    clock.advance(1)
    agent.tick(float(int(clock())))
    # Said once in the log, however long it keeps failing.
    assert sum("collector broken failed" in r.getMessage() for r in caplog.records) == 1
    assert agent.stats.collectors_failing == 1


def test_collection_goes_on_while_the_ingest_is_down(
    make_settings, fake_psutil, make_http, clock
) -> None:
    agent = Agent(
        make_settings(collectors=["load"]),
        psutil=fake_psutil,
        clock=clock,
        http=make_http(ConnectionRefusedError(111, "refused")),
        statsd=False,
    )
    for _ in range(5):
        clock.advance(1)
        agent.tick(float(int(clock())))
        assert agent.pusher.push_once() is not None
    assert agent.spool.depth == 5 and agent.stats.retries == 5
