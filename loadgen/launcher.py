"""Runs ``apm loadgen`` as a background process, for ``apm run`` (a small synthetic fleet next
to the real agent) and for tests that want the fleet beside them::

    from loadgen.launcher import start_loadgen

    proc = start_loadgen(home, "http://127.0.0.1:8080", key, servers=200, duration="7d")
    ...
    proc.stop()           # SIGTERM: stops generating, drains what is in flight, exits
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from apm.stack.supervisor import ManagedProcess

__all__ = ["loadgen_command", "start_loadgen"]


def loadgen_command(target: str, *, servers: int = 200, metrics: int = 20,
                    duration: str = "7d", seed: int = 42, metric_prefix: str = "",
                    extra_args: Sequence[str] = ()) -> list[str]:
    """The command line of a real-time fleet; the API key goes through the environment so
    that it never shows in ``ps``."""
    command = [sys.executable, "-m", "apm.cli", "loadgen", "--target", target,
               "--servers", str(servers), "--metrics", str(metrics), "--duration", duration,
               "--seed", str(seed)]
    if metric_prefix:
        command += ["--metric-prefix", metric_prefix]
    return [*command, *extra_args]


def start_loadgen(home: Path, target: str, api_key: str, *, name: str = "loadgen",
                  servers: int = 200, metrics: int = 20, duration: str = "7d",
                  seed: int = 42, metric_prefix: str = "",
                  env: Mapping[str, str] | None = None,
                  extra_args: Sequence[str] = ()) -> ManagedProcess:
    """Starts the fleet (pid file and log in ``home``; progress lines go to the log every
    10 s). Returns at once: the fleet retries until the ingest answers."""
    proc = ManagedProcess(name, Path(home), marker=f"loadgen --target {target} ")
    proc.start(loadgen_command(target, servers=servers, metrics=metrics, duration=duration,
                               seed=seed, metric_prefix=metric_prefix, extra_args=extra_args),
               env={"APM_LOADGEN_API_KEY": api_key, "APM_LOADGEN_PROGRESS_INTERVAL_S": "10",
                    **(env or {})})
    return proc
