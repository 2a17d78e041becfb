"""Request bodies in the ingest contract: ``POST /v1/metrics``, JSON ``{"snapshots": [...]}``,
gzip-encoded, with a Bearer key. Several servers per request, as a relay would send."""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import orjson

from loadgen.fleet import Tick

# The timestamp a template carries until ``stamp`` puts the real one in: a float orjson writes
# as these exact bytes, and which no generated value or name can contain (values are written
# with far fewer integer digits, names hold no digits run this long followed by ".25").
_SENTINEL_TS = 99999999999.25
_SENTINEL = orjson.dumps(_SENTINEL_TS)

__all__ = ["Batch", "Request", "build_request", "split_tick", "stamp", "template"]


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
    tags: Sequence[Mapping[str, str]] | None = None,
) -> Request:
    """The HTTP body and headers for ``batch``. Values go out as JSON doubles, which orjson
    writes in shortest round-trip form, so the ingest reads back the exact generated value.
    ``tags`` (by server index, loadgen.tags) go with each server's snapshot when given."""
    ts = float(batch.ts)
    rows = batch.values.tolist()
    snapshots: list[dict[str, object]] = [
        {"server": names[i], "ts": ts, "metrics": dict(zip(metric_names, row, strict=True))}
        for i, row in zip(batch.servers.tolist(), rows, strict=True)
    ]
    if tags is not None:
        for snapshot, i in zip(snapshots, batch.servers.tolist(), strict=True):
            snapshot["tags"] = tags[i]
    body = orjson.dumps({"snapshots": snapshots})
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if gzip_level > 0:
        # mtime=0 keeps the body a pure function of the batch (reproducible requests).
        body = gzip.compress(body, compresslevel=gzip_level, mtime=0)
        headers["Content-Encoding"] = "gzip"
    return Request(body, headers, batch.samples, len(snapshots))


def template(
    batch: Batch,
    names: Sequence[str],
    metric_names: Sequence[str],
    api_key: str,
    tags: Sequence[Mapping[str, str]] | None = None,
) -> Request:
    """``batch``'s request as plain JSON with a placeholder timestamp, for ``stamp`` to reuse:
    the replay mode encodes each second of its cycle once."""
    plain = build_request(
        Batch(_SENTINEL_TS, batch.servers, batch.values), names, metric_names, api_key, 0, tags
    )
    if plain.body.count(_SENTINEL) != plain.snapshots:
        raise ValueError("the timestamp placeholder is not unique in the body")
    return plain


def stamp(plain: Request, ts: float, gzip_level: int = 1) -> Request:
    """``template``'s request at ``ts``: the same bytes as ``build_request`` would make."""
    body = plain.body.replace(_SENTINEL, orjson.dumps(float(ts)))
    headers = dict(plain.headers)
    if gzip_level > 0:
        body = gzip.compress(body, compresslevel=gzip_level, mtime=0)
        headers["Content-Encoding"] = "gzip"
    return Request(body, headers, plain.samples, plain.snapshots)
