"""Runs ``apm aggregator run`` as a background process, for ``apm run`` and the e2e tests."""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from apm.stack.supervisor import ManagedProcess

__all__ = ["metrics_up", "start_aggregator"]


def metrics_up(port: int, host: str = "127.0.0.1") -> bool:
    """True once the job serves /metrics (it does so before Spark starts streaming)."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=1) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def start_aggregator(home: Path, *, name: str = "aggregator", metrics: Sequence[str] = (),
                     shard: str | None = None, metrics_port: int = 9102,
                     keyspace: str | None = None, env: Mapping[str, str] | None = None,
                     extra_args: Sequence[str] = ()) -> ManagedProcess:
    """Starts the job with its checkpoint under ``home``; returns the ManagedProcess (pid file
    and log in ``home``). Wait with ``proc.wait_healthy(lambda: metrics_up(port), ...)``."""
    marker = f"apm-aggregator-{name}"
    proc = ManagedProcess(name, Path(home), marker=marker)
    command = [sys.executable, "-m", "apm.cli", "aggregator", "run", "--instance", marker,
               "--checkpoint-dir", str(Path(home) / "checkpoint"),
               "--metrics-port", str(metrics_port), *extra_args]
    if metrics:
        command += ["--metrics", ",".join(metrics)]
    if shard:
        command += ["--shard", shard]
    if keyspace:
        command += ["--keyspace", keyspace]
    proc.start(command, env=dict(env or {}))
    return proc
