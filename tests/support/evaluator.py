"""The alert evaluator as a process the tests start (``apm alert run``), on a keyspace of
their own and short timings, and a poll for what it does."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from launch.probe import free_port

__all__ = ["evaluator_env", "start_evaluator", "wait_for"]


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def evaluator_env(keyspace: str, **settings: Any) -> dict[str, str]:
    """The environment of an evaluator on ``keyspace``: a 0.3 s cycle, no settle, an hour of
    lateness and backfill, no re-notify, a 2 s lease; ``settings`` add APM_ALERTING_<NAME>."""
    timings = {
        "interval_s": 0.3,
        "settle_s": 0,
        "lateness_s": 3600,
        "renotify_s": 100_000,
        "backfill_windows": 1000,
        # A restarted evaluator waits out its killed predecessor's lease: keep it short.
        "lease_ttl_s": 2,
    }
    env = {f"APM_ALERTING_{k.upper()}": str(v) for k, v in {**timings, **settings}.items()}
    return {**os.environ, "APM_STORAGE_KEYSPACE": keyspace, **env}


def start_evaluator(env: dict[str, str], log: IO[bytes]) -> tuple[subprocess.Popen, int]:
    """The process, and the port of its /metrics."""
    port = free_port()
    cmd = [sys.executable, "-m", "apm.cli", "alert", "run"]
    env = {**env, "APM_ALERTING_METRICS_PORT": str(port)}
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=log), port
