"""`apm run`'s foreground supervision: it restarts dead components, returns once the platform
was stopped from elsewhere (`make down`), and stops everything on SIGTERM. No real sleeping:
the loop's sleep is injected."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from launch import run
from launch.restarts import Component, Restarter, RestartPolicy

pytestmark = pytest.mark.unit


def test_returns_when_the_platform_was_stopped_from_elsewhere(tmp_path: Path, capsys):
    # `make down` from another terminal marks the stop before it stops anything.
    (tmp_path / run.DOWN_MARKER).touch()
    assert run._attach(tmp_path, settings=None) == 0  # type: ignore[arg-type]
    assert "stopped from elsewhere" in capsys.readouterr().err


def test_a_component_that_dies_while_attached_is_restarted(tmp_path: Path, capsys):
    now = [0.0]
    alive = {"ingest": True}
    starts: list[str] = []

    def start() -> None:
        starts.append("ingest")
        alive["ingest"] = True

    restarter = Restarter(
        [Component("ingest", lambda: alive["ingest"], start)],
        run._say,
        RestartPolicy(initial_s=2.0, cap_s=60.0, jitter=0.0),
        clock=lambda: now[0],
    )
    sleeps = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds
        if len(sleeps) == 2:
            alive["ingest"] = False  # it crashes
        if len(sleeps) == 8:
            (tmp_path / run.DOWN_MARKER).touch()

    assert run._attach(tmp_path, None, restarter, sleep=sleep) == 0  # type: ignore[arg-type]
    assert starts == ["ingest"] and restarter.restarts("ingest") == 1
    err = capsys.readouterr().err
    assert "ingest is not running" in err and "restarting it in 2.0s" in err
    assert "ingest: restarted (restart #1)" in err


def test_sigterm_stops_the_platform_after_supervising_until_then(tmp_path: Path, monkeypatch):
    stopped: list[str] = []
    monkeypatch.setattr(run, "_stop_platform", lambda home: stopped.append("platform"))
    from launch.stack import control

    monkeypatch.setattr(control, "down", lambda settings: stopped.append("stack"))
    ticks: list[int] = []

    class Counting(Restarter):
        def tick(self) -> None:
            ticks.append(1)

    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises here, as in a real sleep

    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert run._attach(tmp_path, None, Counting([], run._say), sleep=sleep) == 0  # type: ignore[arg-type]
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stopped == ["platform", "stack"]
    # It supervised until the signal came (three ticks, three sleeps), and no longer.
    assert len(ticks) == 3 and len(sleeps) == 3


def test_stop_platform_marks_the_stop_first_and_is_bounded(tmp_path: Path, monkeypatch):
    seen: list[bool] = []
    from launch import supervisor

    def stop_all(procs, grace_s, **kw):  # type: ignore[no-untyped-def]
        seen.append((tmp_path / run.DOWN_MARKER).exists())
        assert grace_s == run.STOP_GRACE_S
        return {p.name: "killed" for p in procs}

    monkeypatch.setattr(supervisor, "stop_all", stop_all)
    run._stop_platform(tmp_path)
    assert seen == [True]


def test_components_cover_what_run_starts(tmp_path: Path) -> None:
    (tmp_path / "ingest.key").write_text("secret-key-value\n")
    names = [c.name for c in run._components(tmp_path, "127.0.0.1:9092", fleet=True)]
    assert sorted(names) == sorted(run._platform(tmp_path))
    no_fleet = [c.name for c in run._components(tmp_path, "127.0.0.1:9092", fleet=False)]
    assert "loadgen" not in no_fleet and len(no_fleet) == len(names) - 1
    assert all(not c.alive() for c in run._components(tmp_path, "x", fleet=True))


def test_the_dashboard_gets_the_evaluators_receivers(tmp_path: Path, monkeypatch) -> None:
    """Its test-notify sends to the same receivers the evaluator notifies."""
    monkeypatch.setattr("launch.alertmanager.BINARY", "/usr/bin/prometheus-alertmanager")
    specs = run._platform(tmp_path)
    receivers = {k: v for k, v in specs["alerting"].env.items() if "_URL" in k}
    assert receivers == {"APM_ALERTING_ALERTMANAGER_URL": "http://127.0.0.1:9095"}
    assert receivers.items() <= specs["dashboard"].env.items()
