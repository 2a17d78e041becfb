"""Samples whose event time disagrees with their arrival (docs/aggregator.md, "Skew and
backlogs"). A sample's arrival is its Kafka record's timestamp: when the ingest published it.

- **Ahead** (``ts > arrival + future_tolerance_seconds``): a host whose clock runs ahead. The
  ingest accepts up to 300 s ahead; if such samples reached the watermark, which follows the
  newest event time, one skewed host would take that much of everyone's lateness. They are
  set aside before the watermark (``on_time``), so no host can move it by more than the
  tolerance past the ingest's clock, and counted per metric (reason ``future``).
- **Backlog** (``ts < arrival - delay``, the delay being the watermark's: the allowed lateness
  plus the longest active window): samples that reached the platform later than the lateness
  allows, e.g. an agent's spool drained after an outage. The windows they belong to are final
  (or about to be): they are not aggregated once the watermark has passed them, and they are
  counted per metric (reason ``backlog``), so that they are never dropped unseen. While the
  job itself works off a backlog in Kafka its watermark lags too, and such a sample may still
  count in its window; it is counted as backlog either way.

The counts come from the windows stream's own decode (aggregator/seen.py, the JVM's ``Seen``
with the rules of ``counts``), so they hold for every sample the job read; they are kept since
the job started (``SetAside``), published in its status and on /metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["REASONS", "SetAside", "counts", "on_time"]

REASONS = ("future", "backlog")


def _ahead(tolerance_s: int) -> Column:
    from pyspark.sql import functions as F

    return F.col("arrival").isNotNull() & (F.col("ts") > F.col("arrival") + F.lit(tolerance_s))


def on_time(samples: DataFrame, tolerance_s: int) -> DataFrame:
    """``samples`` without those ahead of their arrival by more than ``tolerance_s``."""
    return samples.where(~_ahead(tolerance_s))


def counts(tolerance_s: int, delay_s: int) -> list[Column]:
    """Aggregate columns ``future`` and ``backlog``: how many samples of a group are ahead of
    their arrival by more than the tolerance, and behind it by more than the delay. v3's
    servers stream counted with these; the job now counts in the JVM (``Seen``), and
    tests/aggregator/test_seen.py holds it equal to these rules."""
    from pyspark.sql import functions as F

    behind = F.col("arrival").isNotNull() & (F.col("ts") < F.col("arrival") - F.lit(delay_s))
    return [
        F.count(F.when(_ahead(tolerance_s), 1)).alias("future"),
        F.count(F.when(behind, 1)).alias("backlog"),
    ]


class SetAside:
    """Per metric and reason, the samples counted since the job started; ``inc`` is told each
    addition (the job's Prometheus counter)."""

    def __init__(self, inc: Callable[[str, str, int], None] = lambda m, r, n: None) -> None:
        self.by_metric: dict[str, dict[str, int]] = {}
        self._inc = inc

    def add(self, rows: Iterable[Any]) -> None:
        """Rows (or mappings) with ``metric``, ``future`` and ``backlog``."""
        for row in rows:
            for reason in REASONS:
                n = int(row[reason] or 0)
                if n:
                    mine = self.by_metric.setdefault(row["metric"], dict.fromkeys(REASONS, 0))
                    mine[reason] += n
                    self._inc(row["metric"], reason, n)

    def totals(self) -> dict[str, int]:
        return {r: sum(m[r] for m in self.by_metric.values()) for r in REASONS}
