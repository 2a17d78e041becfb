"""Debian's Prometheus as a PromQL reference: series written to an OpenMetrics file, imported
with ``promtool tsdb create-blocks-from openmetrics``, then ``prometheus`` started on that
data directory on a free loopback port (no scrape targets), and query answers normalised so
two servers' can be compared."""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import prometheus

__all__ = [
    "MISSING",
    "Answer",
    "Flagged",
    "normalise",
    "openmetrics",
    "reference_prometheus",
    "same",
]

MISSING = "prometheus/promtool not installed (make debs)"
# frozenset of labels -> [(t, value)]; an instant vector is one point per series.
Answer = dict[frozenset, list[tuple[float, float]]]


def openmetrics(series: Sequence[tuple[Mapping[str, str], Sequence[tuple[int, float]]]]) -> str:
    """One gauge family per metric name, each series' samples (unix ms, value) in order."""
    by_name: dict[str, list[str]] = {}
    for labels, samples in series:
        name = labels["__name__"]
        rest = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
        lines = by_name.setdefault(name, [])
        lines += [f"{name}{{{rest}}} {v!r} {t / 1000:.3f}" for t, v in samples]
    out = []
    for name, lines in by_name.items():
        out += [f"# TYPE {name} gauge", *lines]
    return "\n".join([*out, "# EOF", ""])


@dataclass(frozen=True)
class Flagged(prometheus.Prometheus):
    """Prometheus with its query look-back delta set (Debian's 2.42 has no per-query one), and
    its ``--query.max-samples`` if given."""

    lookback_delta: str | None = None
    max_samples: int | None = None

    def command(self, home: Path) -> list[str]:
        extra = [f"--query.lookback-delta={self.lookback_delta}"] if self.lookback_delta else []
        if self.max_samples is not None:
            extra.append(f"--query.max-samples={self.max_samples}")
        return [*super().command(home), *extra]


@contextmanager
def reference_prometheus(
    home: Path,
    text: str,
    port: int,
    lookback_delta: str | None = None,
    max_samples: int | None = None,
) -> Iterator[str]:
    """A Prometheus serving exactly ``text`` (OpenMetrics) on 127.0.0.1:``port``, with its
    ``--query.lookback-delta`` and ``--query.max-samples`` if given (defaults 5m, 50,000,000)
    and an evaluation_interval of 1m; its URL."""

    promtool = shutil.which("promtool")
    if promtool is None:
        raise FileNotFoundError(MISSING)
    home.mkdir(parents=True, exist_ok=True)
    source = home / "series.om"
    source.write_text(text)
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(home / "data")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    # evaluation_interval 1m, Prometheus' default: the step of a subquery that names none,
    # as the read API's APM_DASHBOARD_PROM_SUBQUERY_STEP_SECONDS default.
    config = prometheus.write_config(home, prometheus.config([], interval_s=60.0))
    server = Flagged(
        port, config, retention="10y", lookback_delta=lookback_delta, max_samples=max_samples
    )
    proc = server.start(home, wait_s=60)
    try:
        yield server.url
    finally:
        proc.stop(server.stop_timeout_s)


def normalise(data: Mapping[str, Any]) -> Answer | float:
    """A query's ``data``: a scalar's value, or each series' points by its label set, in the
    answer's order (a dict keeps it; :func:`same` compares it only when asked)."""
    kind, result = data["resultType"], data["result"]
    if kind == "scalar":
        return float(result[1])
    if kind == "vector":
        return {frozenset(r["metric"].items()): [_point(r["value"])] for r in result}
    return {frozenset(r["metric"].items()): [_point(p) for p in r["values"]] for r in result}


def _point(p: Sequence[Any]) -> tuple[float, float]:
    return float(p[0]), float(p[1])


def same(a: Answer | float, b: Answer | float, rel: float = 1e-9, ordered: bool = False) -> bool:
    """Equal label sets, timestamps and values to ``rel`` (NaN equals NaN); ``ordered`` (an
    instant ``sort()``): the series' values in the same order too. Series of equal values may
    come in any order, as Prometheus' sort is not stable, and each series' own value is
    compared anyway, so the order of values is the whole of a sort's order."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, float) and isinstance(b, float) and _close(a, b, rel)
    if a.keys() != b.keys():
        return False
    if ordered:
        values = [[v for _, v in points] for points in a.values()]
        others = [[v for _, v in points] for points in b.values()]
        if not all(
            len(x) == len(y) and all(_close(p, q, rel) for p, q in zip(x, y, strict=True))
            for x, y in zip(values, others, strict=True)
        ):
            return False
    for key, points in a.items():
        other = b[key]
        if len(points) != len(other):
            return False
        for (t1, v1), (t2, v2) in zip(points, other, strict=True):
            if t1 != t2 or not _close(v1, v2, rel):
                return False
    return True


def _close(x: float, y: float, rel: float) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y or math.isclose(x, y, rel_tol=rel, abs_tol=1e-12)
