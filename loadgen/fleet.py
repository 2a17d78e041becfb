"""A synthetic fleet: N servers x M metrics, one snapshot per server per second, vectorised.

Every value comes from a seeded process, so a given (seed, servers, metrics, first second)
always yields the same samples, whatever the transport or the pacing:

- ``walk``: CPU-like, a bounded random walk pulled towards a daily sine cycle;
- ``drift``: memory-like, a slow climb with occasional drops (a GC, a restart);
- ``count``: request counters, Poisson draws around a per-server rate with the daily cycle;
- ``latency``: lognormal per-second maxima with rare spikes (milliseconds).

A few servers go silent for a while and come back; a silent server sends nothing, so it
contributes no sample to the truth either.

Values are quantised to multiples of 2**-10 (``QUANTUM``). Sums of such numbers are exact in
double precision in any order (up to 2**43), so the aggregator's sum and avg can be checked
for equality, not closeness, against :mod:`loadgen.truth`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from apm.model import Sample, metric_name_error
from loadgen.tags import ROLES, fleet_tags

__all__ = ["KINDS", "QUANTUM", "Fleet", "Tick", "metric_catalog", "server_names"]

QUANTUM = 2.0**-10
DAY = 86_400.0
KINDS = ("walk", "drift", "count", "latency")

# The first metrics are the case study's examples; past those, numbered app metrics cycle kinds.
_CATALOG: tuple[tuple[str, str], ...] = (
    ("cpu.util", "walk"),
    ("mem.used_pct", "drift"),
    ("rpc.count", "count"),
    ("rpc.latency.max", "latency"),
    ("queue.unacked", "count"),
    ("carts.nonempty", "count"),
    ("disk.util", "walk"),
    ("heap.used_pct", "drift"),
    ("db.latency.max", "latency"),
    ("http.errors", "count"),
)


def metric_catalog(count: int, prefix: str = "") -> list[tuple[str, str]]:
    """``count`` (metric name, process kind) pairs, deterministic and valid per apm.model.
    ``prefix`` (e.g. ``t1234.``) gives a test or a tenant topics of its own."""
    if count < 1:
        raise ValueError(f"metrics must be at least 1, got {count}")
    out = list(_CATALOG[:count])
    for i in range(len(out), count):
        kind = KINDS[i % len(KINDS)]
        out.append((f"app.m{i:04d}.{kind}", kind))
    out = [(prefix + name, kind) for name, kind in out]
    if (err := metric_name_error(out[0][0])) is not None:
        raise ValueError(f"bad metric prefix {prefix!r}: {err}")
    return out


def server_names(count: int) -> list[str]:
    if count < 1:
        raise ValueError(f"servers must be at least 1, got {count}")
    width = max(5, len(str(count - 1)))
    return [f"{ROLES[i % len(ROLES)]}-{i:0{width}d}" for i in range(count)]


@dataclass(frozen=True)
class Tick:
    """One second of the fleet: ``values[server, metric]``, and which servers send."""

    ts: float
    values: np.ndarray  # float64, shape (servers, metrics)
    alive: np.ndarray  # bool, shape (servers,)
    # In replay mode (LoadgenSettings.replay_seconds), which second of the cycle this is: the
    # same values as every other tick with that index, so a sink may reuse their encoding.
    replay_index: int | None = None

    @property
    def samples(self) -> int:
        return int(self.alive.sum()) * self.values.shape[1]


@dataclass
class Fleet:
    servers: int
    metrics: int
    seed: int = 42
    silent_fraction: float = 0.02
    metric_prefix: str = ""
    names: list[str] = field(init=False)
    # Each server's host tags (loadgen.tags: role, dc, env from its index and the seed).
    tags: list[dict[str, str]] = field(init=False)
    catalog: list[tuple[str, str]] = field(init=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.silent_fraction <= 1.0:
            raise ValueError(f"silent_fraction must be in [0, 1], got {self.silent_fraction}")
        self.names = server_names(self.servers)
        self.tags = fleet_tags(self.servers, self.seed)
        self.catalog = metric_catalog(self.metrics, self.metric_prefix)
        self.metric_names = [name for name, _ in self.catalog]
        self._cols = {
            k: np.array([i for i, (_, kind) in enumerate(self.catalog) if kind == k], dtype=np.intp)
            for k in KINDS
        }
        rng = np.random.default_rng([self.seed, 0])
        n = self.servers
        shape = lambda k: (n, len(self._cols[k]))  # noqa: E731 - per-kind matrix shape
        # Per-server, per-metric parameters, drawn once from the seed.
        self._phase = rng.uniform(0, DAY, size=(n, 1))
        self._walk_base = rng.uniform(15, 60, size=shape("walk"))
        self._walk_amp = rng.uniform(5, 25, size=shape("walk"))
        self._drift_rate = rng.uniform(0.001, 0.02, size=shape("drift"))
        self._count_rate = rng.gamma(2.0, 50.0, size=shape("count")) + 1.0
        self._lat_mu = rng.uniform(np.log(5.0), np.log(80.0), size=shape("latency"))
        # Silence schedule: chosen servers go quiet for `off` seconds in every `period`.
        self._silent = rng.random(n) < self.silent_fraction
        self._period = rng.integers(60, 241, size=n)
        self._off = rng.integers(10, 41, size=n)
        self._silent_phase = rng.integers(0, 241, size=n)
        # Process state, set on the first step.
        self._walk = self._walk_base.copy()
        self._drift = rng.uniform(30, 70, size=shape("drift"))
        self._last_ts: float | None = None

    def alive_at(self, ts: float) -> np.ndarray:
        """Which servers send at second ``ts`` (a pure function of the seed and ``ts``)."""
        pos = (int(ts) + self._silent_phase) % self._period
        return ~(self._silent & (pos < self._off))

    def step(self, ts: float) -> Tick:
        """The fleet at second ``ts``. Steps must come in increasing ``ts``; randomness is
        keyed by (seed, ts) so the same sequence of seconds always gives the same values."""
        ts = float(int(ts))
        if self._last_ts is not None and ts <= self._last_ts:
            raise ValueError(f"seconds must increase: {ts} after {self._last_ts}")
        self._last_ts = ts
        rng = np.random.default_rng([self.seed, 1, int(ts)])
        n = self.servers
        cycle = np.sin(2 * np.pi * (ts + self._phase) / DAY)  # (n, 1), the daily rhythm
        values = np.empty((n, self.metrics))

        cols = self._cols["walk"]
        if cols.size:
            target = self._walk_base + self._walk_amp * cycle
            step = rng.normal(0.0, 2.0, size=self._walk.shape)
            self._walk = np.clip(self._walk + 0.05 * (target - self._walk) + step, 0.0, 100.0)
            values[:, cols] = self._walk

        cols = self._cols["drift"]
        if cols.size:
            noise = rng.normal(0.0, 0.05, size=self._drift.shape)
            self._drift = self._drift + self._drift_rate + noise
            # A rare drop (restart, full GC), and always one at the ceiling.
            drop = (rng.random(self._drift.shape) < 1e-4) | (self._drift >= 95.0)
            self._drift = np.where(
                drop, rng.uniform(20, 40, size=self._drift.shape), np.clip(self._drift, 0.0, 95.0)
            )
            values[:, cols] = self._drift

        cols = self._cols["count"]
        if cols.size:
            lam = self._count_rate * (1.0 + 0.5 * cycle)
            values[:, cols] = rng.poisson(lam)

        cols = self._cols["latency"]
        if cols.size:
            lat = np.exp(self._lat_mu + rng.normal(0.0, 0.5, size=self._lat_mu.shape))
            spikes = rng.random(lat.shape) < 0.002
            lat = np.where(spikes, lat * rng.uniform(10, 50, size=lat.shape), lat)
            values[:, cols] = np.minimum(lat, 60_000.0)

        values = np.round(values / QUANTUM) * QUANTUM
        return Tick(ts, values, self.alive_at(ts))

    def __len__(self) -> int:
        return self.servers

    @property
    def kinds(self) -> dict[str, str]:
        return dict(self.catalog)

    def server_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    def silent_servers(self) -> list[str]:
        return [self.names[i] for i in np.flatnonzero(self._silent)]

    def samples(self, tick: Tick) -> list[Sample]:
        """The tick as apm.model samples (alive servers only): what a sink must deliver."""
        out: list[Sample] = []
        for i in np.flatnonzero(tick.alive).tolist():
            row = tick.values[i].tolist()
            out.extend(
                Sample(self.names[i], m, tick.ts, v)
                for m, v in zip(self.metric_names, row, strict=True)
            )
        return out

    def describe(self) -> dict[str, object]:
        return {
            "servers": self.servers,
            "metrics": self.metrics,
            "seed": self.seed,
            "silent_servers": int(self._silent.sum()),
            "metric_names": list(self.metric_names),
        }
