"""Debian's ``prometheus-alertmanager`` as a test peer: started on a free loopback port with
clustering off and its own storage directory, routing everything to an optional webhook, and
stopped (by its pid) when the context ends. ``make debs`` installs it; a test needing it fails
(:func:`require_alertmanager`) rather than skips, so a missing peer is never a green run."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from launch.alertmanager import BINARY, command
from launch.probe import free_port

__all__ = ["ALERTMANAGER", "MISSING", "Alertmanager", "alertmanager", "require_alertmanager"]

ALERTMANAGER = BINARY
MISSING = "prometheus-alertmanager not installed (make debs)"


def require_alertmanager() -> str:
    """The binary, or the calling test fails saying how to install it."""
    if ALERTMANAGER is None:
        pytest.fail(MISSING)
    return ALERTMANAGER


@dataclass
class Alertmanager:
    url: str
    process: subprocess.Popen

    def alerts(self, active: bool = True) -> list[dict[str, Any]]:
        query = "?active=true&silenced=false&inhibited=false" if active else ""
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts{query}", timeout=10) as answer:
            return list(json.loads(answer.read()))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def start(workdir: Path, port: int | None = None, webhook_url: str = "") -> Alertmanager:
    port = port or free_port()
    cmd = command(workdir, port, webhook_url)
    log = (workdir / "alertmanager.log").open("ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=log)
    peer = Alertmanager(f"http://127.0.0.1:{port}", proc)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"alertmanager exited {proc.returncode}: see {log.name}")
        try:
            with urllib.request.urlopen(f"{peer.url}/-/ready", timeout=2):
                return peer
        except OSError:
            time.sleep(0.1)
    peer.stop()
    raise RuntimeError(f"alertmanager not ready in 30 s: see {log.name}")


@contextmanager
def alertmanager(
    workdir: Path, port: int | None = None, webhook_url: str = ""
) -> Iterator[Alertmanager]:
    peer = start(workdir, port, webhook_url)
    try:
        yield peer
    finally:
        peer.stop()
