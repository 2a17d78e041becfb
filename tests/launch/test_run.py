"""`apm run`'s foreground wait: it returns once the platform is gone, and stops it on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch import run

pytestmark = pytest.mark.unit


def test_returns_when_nothing_of_the_platform_is_running(tmp_path: Path, capsys):
    # `make down` from another terminal leaves no component: nothing to wait for.
    assert run._attach(tmp_path, settings=None) == 0  # type: ignore[arg-type]
    assert "stopped from elsewhere" in capsys.readouterr().err


def test_waits_while_a_component_runs_and_sigterm_stops_the_platform(tmp_path: Path, monkeypatch):
    stopped: list[str] = []
    monkeypatch.setattr(run, "_running", lambda home: {"ingest": True})
    monkeypatch.setattr(run, "_stop_platform", lambda home: stopped.append("platform"))
    from launch.stack import control

    monkeypatch.setattr(control, "down", lambda settings: stopped.append("stack"))
    timer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os, signal, time; time.sleep(1.0); os.kill({os.getpid()}, signal.SIGTERM)",
        ]
    )
    began = time.monotonic()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert run._attach(tmp_path, settings=None) == 0  # type: ignore[arg-type]
    finally:
        signal.signal(signal.SIGTERM, previous)
        timer.wait()
    assert stopped == ["platform", "stack"]
    assert time.monotonic() - began >= 0.9  # it did wait for the signal
