"""Spark's streaming progress reports -> the aggregator's counters and state figures.

``recentProgress`` is a sliding window of reports, so each report is counted once by its
(runId, batchId, timestamp) and forgotten when it leaves the window.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from aggregator.telemetry import AggregatorTelemetry

__all__ = ["DEDUP_OPERATOR", "ProgressCounter", "state_figures"]

# Spark's operatorName for the dedup operator (partials.window_partials, a flatMapGroupsWithState)
DEDUP_OPERATOR = "flatMapGroupsWithState"


class ProgressCounter:
    def __init__(self, telemetry: AggregatorTelemetry) -> None:
        self.telemetry = telemetry
        self.late_rows_total = 0
        self._counted: set[tuple[str, int, str]] = set()

    def feed(self, progresses: Iterable[Any]) -> dict[str, Any] | None:
        """Counts the reports not seen before (``StreamingQueryProgress`` objects); returns
        the newest report as a dict."""
        newest = None
        seen: set[tuple[str, int, str]] = set()
        for progress in progresses:
            report = json.loads(progress.json)
            newest = report
            key = (report["runId"], report["batchId"], report["timestamp"])
            seen.add(key)
            if key in self._counted:
                continue
            self._counted.add(key)
            self.telemetry.input_rows.inc(report.get("numInputRows", 0))
            self.telemetry.batch_seconds.observe(
                report["durationMs"].get("triggerExecution", 0) / 1000
            )
            late = sum(
                op.get("numRowsDroppedByWatermark", 0) for op in report.get("stateOperators", [])
            )
            self.late_rows_total += late
            self.telemetry.late_rows.inc(late)
        self._counted &= seen
        return newest

    def add_late(self, samples: int) -> None:
        """Samples the dedup operator dropped as later than the watermark: it drops them one
        by one inside packs (partials.window_partials), so Spark's numRowsDroppedByWatermark
        does not see them."""
        self.late_rows_total += samples
        self.telemetry.late_rows.inc(samples)


def state_figures(report: dict[str, Any]) -> tuple[int, int, int]:
    """(open windows, dedup state rows, state memory bytes) of one progress report. A dedup
    row holds one (metric, server bucket, block)'s samples (partials.window_partials)."""
    ops = report.get("stateOperators") or []
    windows = sum(
        op.get("numRowsTotal") or 0 for op in ops if op.get("operatorName") != DEDUP_OPERATOR
    )
    keys = sum(
        op.get("numRowsTotal") or 0 for op in ops if op.get("operatorName") == DEDUP_OPERATOR
    )
    return windows, keys, sum(op.get("memoryUsedBytes") or 0 for op in ops)
