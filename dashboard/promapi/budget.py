"""The samples budget of one PromQL evaluation, as Prometheus' ``query.max-samples``: a query
may load at most ``max_samples`` samples in all (APM_DASHBOARD_PROM_MAX_SAMPLES), counted
as the windows read x the series each feeds (a window of a query gives a sample to each of
its selected functions) plus the series x steps each selector's rows hold. The plan is
charged before a read, so a query that cannot fit is refused before reading anything; the
reads are charged as they come, so one that passes the budget stops there, never after
reading everything. Past it: 422 ``execution`` with Prometheus' own error text.

The default is measured (tracemalloc, docs/interop.md "Limits"): a sample held as a decoded
window (``WindowResult``, 118 B a sample of a 4-function window) plus its place in a series'
lists (52 B) is about 170 B, so 1,500,000 samples are about 255 MB, the envelope the 500,000
windows read that ``max_points`` bounded before (472 B a window) had."""

from __future__ import annotations

from dashboard.promapi.evaluate import LimitError

__all__ = ["MAX_SAMPLES", "TOO_MANY_SAMPLES", "Samples", "SamplesError"]

MAX_SAMPLES = 1_500_000  # the default of APM_DASHBOARD_PROM_MAX_SAMPLES
# Prometheus' ErrTooManySamples, word for word, so clients that match on it (Grafana) do.
TOO_MANY_SAMPLES = "query processing would load too many samples into memory in query execution"


class SamplesError(LimitError):
    """The query would load more than the samples budget: 422 ``execution``."""

    def __init__(self, detail: str = "") -> None:
        hint = (
            " (APM_DASHBOARD_PROM_MAX_SAMPLES); narrow the selector, shorten the range, the "
            "[range] of *_over_time() or lookback_delta"
        )
        super().__init__(TOO_MANY_SAMPLES + (f": {detail}" if detail else "") + hint)


class Samples:
    """What is left of one evaluation's budget."""

    def __init__(self, max_samples: int) -> None:
        if max_samples < 1:
            raise ValueError(f"max_samples must be at least 1, got {max_samples}")
        self.limit = self.left = max_samples

    def plan(self, samples: int, what: str = "") -> None:
        """Refuse, before reading, ``samples`` that would not fit what is left."""
        if samples > self.left:
            named = f" ({what})" if what else ""
            left = f"{self.left} left of {self.limit}"
            raise SamplesError(f"{samples} samples planned{named}, {left}")

    def spend(self, samples: int = 1) -> None:
        """Charge ``samples`` loaded; refused as soon as the budget is passed."""
        self.left -= samples
        if self.left < 0:
            raise SamplesError(f"more than {self.limit} samples read")
