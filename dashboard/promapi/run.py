"""Evaluating one request against storage: select the series, check the limits before any
result is read, then read each query's windows once (all its functions come from them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from apm.query import WindowResult
from dashboard.ports import QueryRepository
from dashboard.promapi.evaluate import (
    Deadline,
    LimitError,
    Series,
    points,
    read_window,
    select,
    steps,
)
from dashboard.promapi.selector import Constant, Selector
from dashboard.promapi.settings import PromApiSettings
from dashboard.promapi.shape import Point, format_time, format_value, matrix, vector

__all__ = ["Evaluator"]

T = TypeVar("T")
Guard = Callable[[str, Callable[[], T]], T]


class Evaluator:
    def __init__(
        self,
        repo: QueryRepository,
        limits: PromApiSettings,
        guard: Guard,
        on_points: Callable[[int], None],
    ) -> None:
        self._repo, self._limits, self._guard, self._on_points = repo, limits, guard, on_points

    def series(self, selectors: Sequence[Selector], deadline: Deadline) -> list[Series]:
        queries = self._guard("list_queries", self._repo.list_queries)
        return select(queries, selectors, self._limits.max_series, deadline)

    def range_query(
        self,
        expr: Selector | Constant,
        start_ms: int,
        end_ms: int,
        step_ms: int,
        deadline: Deadline,
    ) -> dict[str, object]:
        times = steps(start_ms, end_ms, step_ms)
        if isinstance(expr, Constant):
            self._on_points(len(times))
            return matrix([({}, [(t, expr.value) for t in times])])
        found = self.series([expr], deadline)
        if len(found) * len(times) > self._limits.max_points:
            raise LimitError(
                f"{len(found)} series x {len(times)} steps is more than "
                f"{self._limits.max_points} points (APM_DASHBOARD_PROM_MAX_POINTS); "
                "narrow the selector, shorten the range or raise the step"
            )
        rows = self._read(found, times, deadline)
        self._on_points(sum(len(p) for _, p in rows))
        return matrix(rows)

    def instant_query(
        self, expr: Selector | Constant, t_ms: int, deadline: Deadline
    ) -> dict[str, object]:
        if isinstance(expr, Constant):
            return {"resultType": "scalar", "result": [format_time(t_ms), format_value(expr.value)]}
        found = self.series([expr], deadline)
        rows = [
            (labels, p[0]) for labels, p in self._read(found, steps(t_ms, t_ms, 1), deadline) if p
        ]
        self._on_points(len(rows))
        return vector(rows)

    def _read(
        self, found: Sequence[Series], times: range, deadline: Deadline
    ) -> list[tuple[dict[str, str], list[Point]]]:
        by_query: dict[str, list[Series]] = {}
        for s in found:
            by_query.setdefault(s.query.id, []).append(s)
        rows: list[tuple[dict[str, str], list[Point]]] = []
        for qid, group in by_query.items():
            deadline.check()
            query = group[0].query
            lo, hi = read_window(query.query.window_seconds * 1000, times[0], times[-1])
            windows = self._guard("read_results", partial(self._collect, qid, lo, hi, deadline))
            got = points(windows, query, [s.fn for s in group], times, deadline)
            rows += [(dict(s.labels), got[s.fn]) for s in group]
        return rows

    def _collect(self, qid: str, lo: float, hi: float, deadline: Deadline) -> list[WindowResult]:
        out: list[WindowResult] = []
        for i, w in enumerate(self._repo.read_results(qid, lo, hi)):
            if i % 1000 == 999:
                deadline.check()
            out.append(w)
        return out
