"""``apm stack up|down|status``: the engines as one unit, never left half started."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial

from launch.jvm import check_java
from launch.stack.config import StackSettings
from launch.stack.jars import ENGINES, fetch
from launch.stack.services import SERVICES, Service
from launch.supervisor import ManagedProcess, StartError, port_in_use

__all__ = ["ServiceStatus", "down", "status", "up"]


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    pid: int | None
    ports: tuple[int, ...]
    healthy: bool
    log: str


def _process(service: Service, settings: StackSettings) -> ManagedProcess:
    return ManagedProcess(
        service.name, service.home(settings), marker=f"-Dapm.stack={service.name}"
    )


def _say(message: str) -> None:
    print(f"stack: {message}", file=sys.stderr, flush=True)


def up(settings: StackSettings | None = None) -> list[ServiceStatus]:
    """Starts what is not running and waits until every engine answers. Idempotent."""
    settings = settings or StackSettings()
    check_java(settings)
    fetch(settings, ENGINES)
    started: list[ManagedProcess] = []
    try:
        for service in SERVICES:
            proc = _process(service, settings)
            if proc.pid() is None:
                busy = [p for p in service.ports(settings) if port_in_use(settings.host, p)]
                if busy:
                    raise StartError(
                        f"{service.name}: port {busy[0]} on {settings.host} is "
                        f"already in use by another process; free it or set "
                        f"APM_STACK_* ports (log: {proc.log})"
                    )
                try:
                    service.prepare(settings)
                except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as exc:
                    raise StartError(f"{service.name}: preparing failed: {exc}") from exc
                _say(f"starting {service.name} (log: {proc.log})")
                t0 = time.monotonic()
                proc.start(service.command(settings))
                started.append(proc)
            else:
                t0 = time.monotonic()
            proc.wait_healthy(partial(service.healthy, settings), settings.start_timeout_s, _say)
            _say(f"{service.name} healthy after {time.monotonic() - t0:.1f}s")
    except BaseException:
        for proc in reversed(started):
            _say(f"stopping {proc.name} after a failed start")
            proc.stop(settings.stop_timeout_s)
        raise
    return status(settings)


def down(settings: StackSettings | None = None) -> None:
    settings = settings or StackSettings()
    for service in reversed(SERVICES):
        if _process(service, settings).stop(settings.stop_timeout_s):
            _say(f"stopped {service.name}")


def status(settings: StackSettings | None = None) -> list[ServiceStatus]:
    settings = settings or StackSettings()
    result = []
    for service in SERVICES:
        proc = _process(service, settings)
        pid = proc.pid()
        result.append(
            ServiceStatus(
                service.name,
                pid,
                service.ports(settings),
                pid is not None and service.healthy(settings),
                str(proc.log),
            )
        )
    return result
