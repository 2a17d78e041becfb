"""Stopping real processes is bounded: one that ignores SIGTERM is killed after the grace, and
the outcome says which way each process ended (a test of a graceful exit can fail)."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest

from launch.supervisor import ManagedProcess, stop_all

pytestmark = pytest.mark.unit

_OBEYS = "import time; print('up', flush=True); time.sleep(60)"
_IGNORES = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('Shutting down (but not really)', flush=True); time.sleep(60)"
)


def _start(tmp_path: Path, name: str, code: str) -> ManagedProcess:
    marker = f"apm-test-{name}-{uuid.uuid4().hex[:8]}"
    proc = ManagedProcess(name, tmp_path, marker=marker)
    proc.start([sys.executable, "-c", code, marker])
    assert proc.pid() is not None
    return proc


def test_a_process_that_exits_on_sigterm_is_recorded_as_exited(tmp_path: Path) -> None:
    proc = _start(tmp_path, "obeys", _OBEYS)
    assert proc.stop(10)
    assert proc.last_stop == "exited" and proc.returncode == -15
    assert proc.pid() is None and not proc.stop(1)


def test_one_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    proc = _start(tmp_path, "ignores", _IGNORES)
    time.sleep(0.3)  # its handler is installed
    began = time.monotonic()
    assert proc.stop(0.5)  # True: something was running, whichever way it ended
    assert time.monotonic() - began < 5
    # What a log-based check would have believed:
    assert "shutting down" in proc.tail().lower()
    assert proc.last_stop == "killed" and proc.returncode == -9
    assert proc.pid() is None


def test_stop_all_shares_one_bounded_grace(tmp_path: Path) -> None:
    procs = [_start(tmp_path, f"ignores{i}", _IGNORES) for i in range(3)]
    procs.append(_start(tmp_path, "obeys", _OBEYS))
    time.sleep(0.3)
    began = time.monotonic()
    outcome = stop_all(procs, grace_s=1.0)
    elapsed = time.monotonic() - began
    assert outcome == {
        "ignores0": "killed",
        "ignores1": "killed",
        "ignores2": "killed",
        "obeys": "exited",
    }
    assert elapsed < 4, elapsed  # one grace for all, not one per process
    assert all(p.pid() is None for p in procs)
