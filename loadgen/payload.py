"""Request bodies in the ingest contract: ``POST /v1/metrics``, JSON ``{"snapshots": [...]}``,
gzip-encoded, with a Bearer key. Several servers per request, as a relay would send."""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import orjson

from loadgen.fleet import Tick

__all__ = ["Batch", "Request", "build_request", "split_tick"]


@dataclass(frozen=True)
class Batch:
    """Some alive servers of one tick: what one request carries."""

    ts: float
    servers: np.ndarray  # int indices into the fleet
    values: np.ndarray  # (len(servers), metrics)

    @property
    def samples(self) -> int:
        return int(self.values.size)


@dataclass(frozen=True)
class Request:
    body: bytes
    headers: dict[str, str]
    samples: int
    snapshots: int


def split_tick(tick: Tick, per_request: int) -> Iterator[Batch]:
    """The alive servers of ``tick`` in groups of at most ``per_request``."""
    if per_request < 1:
        raise ValueError(f"servers per request must be at least 1, got {per_request}")
    alive = np.flatnonzero(tick.alive)
    for lo in range(0, alive.size, per_request):
        idx = alive[lo : lo + per_request]
        yield Batch(tick.ts, idx, tick.values[idx])


def build_request(
    batch: Batch,
    names: Sequence[str],
    metric_names: Sequence[str],
    api_key: str,
    gzip_level: int = 1,
) -> Request:
    """The HTTP body and headers for ``batch``. Values go out as JSON doubles, which orjson
    writes in shortest round-trip form, so the ingest reads back the exact generated value."""
    ts = float(batch.ts)
    rows = batch.values.tolist()
    snapshots = [
        {"server": names[i], "ts": ts, "metrics": dict(zip(metric_names, row, strict=True))}
        for i, row in zip(batch.servers.tolist(), rows, strict=True)
    ]
    body = orjson.dumps({"snapshots": snapshots})
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if gzip_level > 0:
        # mtime=0 keeps the body a pure function of the batch (reproducible requests).
        body = gzip.compress(body, compresslevel=gzip_level, mtime=0)
        headers["Content-Encoding"] = "gzip"
    return Request(body, headers, batch.samples, len(snapshots))
