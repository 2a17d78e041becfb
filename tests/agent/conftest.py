"""Factories for the agent tests: a fake psutil with canned, steppable counters, a fake clock,
a fake HTTP client that answers from a script, agent settings in a temporary directory, and an
environment without APM_AGENT_* variables."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from agent.http import HttpResponse
from agent.push import Pusher
from agent.spool import Spool
from agent.stats import AgentStats
from apm.retry import Backoff


@dataclass
class FakeClock:
    now: float = 1_763_800_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _cpu(user: float, system: float, idle: float, iowait: float) -> NS:
    return NS(
        user=user,
        nice=0.0,
        system=system,
        idle=idle,
        iowait=iowait,
        irq=0.0,
        softirq=0.0,
        steal=0.0,
        guest=0.0,
        guest_nice=0.0,
    )


def _nic(rx: float, tx: float) -> NS:
    return NS(
        bytes_recv=rx,
        bytes_sent=tx,
        packets_recv=rx / 100,
        packets_sent=tx / 100,
        errin=1.0,
        errout=0.0,
        dropin=2.0,
        dropout=0.0,
    )


@dataclass
class FakePsutil:
    """Canned host state; tests change the fields between collections."""

    cores: list[NS] = field(default_factory=lambda: [_cpu(100, 50, 800, 10), _cpu(200, 20, 700, 0)])
    load: tuple[float, float, float] = (0.5, 0.25, 0.125)
    nics: dict[str, NS] = field(default_factory=lambda: {"eth0": _nic(1e6, 5e5), "lo": _nic(0, 0)})
    disk_io: NS | None = field(
        default_factory=lambda: NS(
            read_bytes=1e9, write_bytes=2e9, read_count=1000.0, write_count=3000.0
        )
    )
    mounts: dict[str, float] = field(default_factory=lambda: {"/": 42.0, "/var/lib": 7.5})
    pid_count: int = 123
    boot: float = 1_763_790_000.0
    rss: float = 30e6
    own_cpu: float = 1.0

    def cpu_times(self, percpu: bool = False) -> Any:
        if percpu:
            return list(self.cores)
        fields = vars(self.cores[0])
        return NS(**{f: sum(getattr(c, f) for c in self.cores) for f in fields})

    def getloadavg(self) -> tuple[float, float, float]:
        return self.load

    def virtual_memory(self) -> NS:
        return NS(total=16e9, used=6e9, available=9e9, percent=43.75)

    def swap_memory(self) -> NS:
        return NS(total=2e9, used=5e8, percent=25.0)

    def disk_partitions(self, all: bool = False) -> list[NS]:
        return [NS(mountpoint=m, device="/dev/x", fstype="ext4") for m in self.mounts]

    def disk_usage(self, path: str) -> NS:
        return NS(percent=self.mounts[path])

    def disk_io_counters(self, perdisk: bool = False) -> NS | None:
        return self.disk_io

    def net_io_counters(self, pernic: bool = False) -> dict[str, NS]:
        return dict(self.nics)

    def pids(self) -> list[int]:
        return list(range(self.pid_count))

    def boot_time(self) -> float:
        return self.boot

    def net_connections(self, kind: str = "inet") -> list[NS]:
        return [NS(status="ESTABLISHED"), NS(status="LISTEN")]

    def Process(self) -> NS:
        return NS(
            cpu_times=lambda: NS(user=self.own_cpu, system=0.0),
            memory_info=lambda: NS(rss=self.rss),
        )


@dataclass
class FakeHttp:
    """Answers POSTs from ``script`` (an HttpResponse or an exception per call; the last
    entry repeats) and records every request."""

    script: list[HttpResponse | Exception] = field(
        default_factory=lambda: [HttpResponse(202, {}, b'{"accepted":1}')]
    )
    requests: list[tuple[str, bytes, dict[str, str]]] = field(default_factory=list)

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> HttpResponse:
        self.requests.append((url, body, headers))
        answer = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake_psutil() -> FakePsutil:
    return FakePsutil()


@pytest.fixture
def make_http() -> Callable[..., FakeHttp]:
    def make(*script: HttpResponse | Exception) -> FakeHttp:
        return FakeHttp(list(script)) if script else FakeHttp()

    return make


@pytest.fixture
def make_settings(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """AgentSettings with the spool under tmp_path, free of any APM_AGENT_* in the env."""
    from agent.settings import load_settings

    def make(**overrides: Any) -> Any:
        overrides.setdefault("spool_dir", tmp_path / "spool")
        overrides.setdefault("server", "test-host")
        return load_settings(None, **overrides)

    yield make


@pytest.fixture
def make_pusher(tmp_path: Path, clock: FakeClock) -> Callable[..., Pusher]:
    def make(http: Any, snapshots: int = 1, rand: Any = lambda: 0.5, **kwargs: Any) -> Pusher:
        spool = Spool(tmp_path / "spool", fsync=False)
        for i in range(snapshots):
            spool.append(
                json.dumps({"server": "h", "ts": 1000.0 + i, "metrics": {"m": float(i)}}).encode()
            )
        return Pusher(
            spool,
            http,
            "http://ingest/v1/metrics",
            "k3y",
            Backoff(0.010, 30.0, 0.2, rand=rand),
            AgentStats(clock),
            rejected_path=tmp_path / "rejected.jsonl",
            wall_clock=clock,
            **kwargs,
        )

    return make


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No APM_AGENT_* variable from the environment reaches the settings."""
    for name in list(os.environ):
        if name.startswith("APM_AGENT_"):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A private CA (tests.support.certs), one per test module."""
    from tests.support.certs import make_ca

    return make_ca(tmp_path_factory.mktemp("ca"))
