"""Evaluating one request against storage: select the series, check the limits before any
result is read, then read each query's windows once (all its functions come from them), or
each server's of a ``BY server`` query, as :mod:`.plan` plans. ``max_points`` bounds the
points answered (series x steps); the samples budget (:mod:`.budget`) the series selected and
the samples read, planned before reading and counted while reading (windows of an older
definition of a query, of another length, count too).

A ``BY server`` query's series (one per server, labelled ``server``) are those of the servers
with results in the time asked, listed in one call a query and narrowed by the ``server``
matchers before any read.

``ALERTS`` series (:mod:`.alerts`) come from ``alerts``, the rule listing with each alert's
newest state, for instant queries and the series and label endpoints; a range query's come
from the alert history (:mod:`.alert_range`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from apm.query import StoredQuery, WindowResult
from dashboard.promapi.alert_range import AlertRange
from dashboard.promapi.alerts import alert_labels
from dashboard.promapi.budget import Samples, SamplesError
from dashboard.promapi.evaluate import (
    Deadline,
    LimitError,
    Series,
    Servers,
    check_points,
    matching,
    points,
    read_window,
    select,
    steps,
)
from dashboard.promapi.plan import Span, by_query, per_window, plan, reads_of
from dashboard.promapi.promql_eval import LOOKBACK_MS
from dashboard.promapi.promql_run import PromqlRunner
from dashboard.promapi.promql_shift import moved, shifted
from dashboard.promapi.promql_tree import Bare, Expr
from dashboard.promapi.selector import ALERTS, METRIC, Constant, Selector
from dashboard.promapi.server_reads import collect, read_servers
from dashboard.promapi.shape import Point, format_time, format_value, matrix, vector
from dashboard.promapi.store import Store

__all__ = ["Evaluator"]


def _check_alerts(found: int, max_series: int) -> None:
    if found > max_series:
        raise LimitError(
            f"the selector matches more than {max_series} ALERTS series "
            "(APM_DASHBOARD_PROM_MAX_SERIES); narrow it, e.g. by alertname"
        )


class Evaluator:
    def __init__(
        self,
        store: Store,
        alerts: Callable[[], Sequence[Mapping[str, Any]]] = list,
        history: AlertRange | None = None,
    ) -> None:
        self._repo, self._limits, self._guard = store.repo, store.limits, store.guard
        self._on_points = store.on_points
        self._alerts, self._history = alerts, history
        self._promql = PromqlRunner(store, self.series)

    def series(
        self,
        selectors: Sequence[Selector],
        deadline: Deadline,
        span: tuple[int, int],
        samples: Samples | None = None,
    ) -> list[Series]:
        """The ``apm_query`` series any of ``selectors`` matches; a ``BY server`` query's are
        those of its servers with a window that can give a point in ``span`` ([start, end],
        unix ms). At most ``max_series`` (the /series endpoint) or, for a query, as many as
        ``samples`` has left: each series loads at least one sample."""
        if not any(s.may_name(METRIC) for s in selectors):
            return []
        queries = self._guard("list_queries", self._repo.list_queries)
        listed = self._lister(span)
        if samples is None:
            return select(queries, selectors, self._limits.max_series, deadline, listed)
        left = samples.left

        def too_many() -> SamplesError:
            return SamplesError(f"the selector matches more than {left} series")

        return select(queries, selectors, left, deadline, listed, too_many)

    def every(
        self, selectors: Sequence[Selector], deadline: Deadline, span: tuple[int, int]
    ) -> Iterator[Series]:
        """As :meth:`series`, one at a time and without ``max_series``: for the label
        endpoints, which keep only names or values (10,000 servers make one value each)."""
        if not any(s.may_name(METRIC) for s in selectors):
            return iter(())
        queries = self._guard("list_queries", self._repo.list_queries)
        return matching(queries, selectors, deadline, self._lister(span))

    def _lister(self, span: tuple[int, int]) -> Servers:
        def listed(query: StoredQuery) -> list[str]:
            lo, hi = read_window(query.query.window_seconds * 1000, *span)
            list_servers = self._repo.list_result_servers
            return self._guard("list_result_servers", lambda: list_servers(query.id, lo, hi))

        return listed

    def alert_series(
        self, selectors: Sequence[Selector], deadline: Deadline, span: tuple[int, int] | None = None
    ) -> list[dict]:
        """The label sets of the ``ALERTS`` series any of ``selectors`` matches: now, or with a
        ``span`` (unix ms) those on at some time in it, from the history."""
        if not any(s.may_name(ALERTS) for s in selectors):
            return []
        deadline.check()
        if span is not None:
            return self._alerts_between(selectors, span, deadline)
        found = [
            labels
            for labels in alert_labels(self._guard("alerts", self._alerts))
            if any(s.matches(labels) for s in selectors)
        ]
        _check_alerts(len(found), self._limits.max_series)
        return found

    def _alerts_between(
        self, selectors: Sequence[Selector], span: tuple[int, int], deadline: Deadline
    ) -> list[dict]:
        if self._history is None:
            return []
        found: dict[tuple, dict] = {}  # one selector's series may match another's too
        for s in selectors:
            if s.may_name(ALERTS):
                limits = (self._limits.max_series, self._limits.max_points)
                for labels in self._history.series(s, *span, deadline, *limits):
                    found[tuple(sorted(labels.items()))] = labels
        _check_alerts(len(found), self._limits.max_series)
        return list(found.values())

    def range_query(
        self,
        expr: Selector | Constant | Expr,
        start_ms: int,
        end_ms: int,
        step_ms: int,
        deadline: Deadline,
        lookback_ms: int = LOOKBACK_MS,
    ) -> dict[str, object]:
        """``lookback_ms`` is the look-back of instant selectors inside an expression; a bare
        selector keeps the one-window look-back (docs/interop.md)."""
        times = steps(start_ms, end_ms, step_ms)
        if isinstance(expr, Bare):
            own = shifted(expr.shift, times, (start_ms, end_ms))
            read = self._selected(expr.selector, own, len(times), deadline)
            rows = moved(read, expr.shift, times)
            self._on_points(sum(len(p) for _, p in rows))
            return matrix(rows)
        if not isinstance(expr, Selector | Constant):
            return self._promql.range_query(expr, times, deadline, lookback_ms, end_ms)
        if isinstance(expr, Constant):
            self._on_points(len(times))
            return matrix([({}, [(t, expr.value) for t in times])])
        rows = self._selected(expr, times, len(times), deadline)
        if self._history is not None and expr.may_name(ALERTS):
            left = self._limits.max_points - sum(len(p) for _, p in rows)
            rows += self._history.query(expr, times, deadline, self._limits.max_series, left)
        self._on_points(sum(len(p) for _, p in rows))
        return matrix(rows)

    def _selected(
        self, expr: Selector, times: range, answered: int, deadline: Deadline
    ) -> list[tuple[dict[str, str], list[Point]]]:
        """A bare selector's ``apm_query`` points at ``times``, within the limits for an
        answer of ``answered`` steps."""
        samples = Samples(self._limits.max_samples)
        found = self.series([expr], deadline, (times[0], times[-1]), samples)
        check_points(len(found), answered, self._limits.max_points)
        samples.plan(reads_of(found, times), "windows read x the series each feeds")
        return self._read(found, times, deadline, samples)

    def instant_query(
        self,
        expr: Selector | Constant | Expr,
        t_ms: int,
        deadline: Deadline,
        lookback_ms: int = LOOKBACK_MS,
    ) -> dict[str, object]:
        if isinstance(expr, Bare):
            times = steps(t_ms, t_ms, 1)
            own = shifted(expr.shift, times, (t_ms, t_ms))
            read = moved(self._selected(expr.selector, own, 1, deadline), expr.shift, times)
            rows = [(labels, p[0]) for labels, p in read if p]
            self._on_points(len(rows))
            return vector(rows)
        if not isinstance(expr, Selector | Constant):
            return self._promql.instant_query(expr, t_ms, deadline, lookback_ms)
        if isinstance(expr, Constant):
            return {"resultType": "scalar", "result": [format_time(t_ms), format_value(expr.value)]}
        samples = Samples(self._limits.max_samples)
        found = self.series([expr], deadline, (t_ms, t_ms), samples)
        read = self._read(found, steps(t_ms, t_ms, 1), deadline, samples)
        rows = [(labels, p[0]) for labels, p in read if p]
        rows += [(labels, (t_ms, 1.0)) for labels in self.alert_series([expr], deadline)]
        self._on_points(len(rows))
        return vector(rows)

    def _read(
        self, found: Sequence[Series], times: range, deadline: Deadline, samples: Samples
    ) -> list[tuple[dict[str, str], list[Point]]]:
        rows: list[tuple[dict[str, str], list[Point]]] = []
        for qid, group in by_query(found).items():
            deadline.check()
            query = group[0].query
            width = query.query.window_seconds * 1000
            spend = partial(samples.spend, per_window(group))
            if not query.query.by_server:
                read = partial(self._collect, qid, plan(width, times), spend, deadline)
                got = points(
                    self._guard("read_results", read), query, [s.fn for s in group], times, deadline
                )
                rows += [(dict(s.labels), got[s.fn]) for s in group]
                continue
            servers = list(dict.fromkeys(s.server for s in group))
            span = read_window(width, times[0], times[-1])
            windows = read_servers(
                self._repo,
                self._guard,
                qid,
                servers,
                group[0].fleet,
                width,
                span,
                spend,
                deadline,
            )
            for s in group:
                got = points(windows[s.server], query, [s.fn], times, deadline)
                rows.append((dict(s.labels), got[s.fn]))
        return rows

    def _collect(
        self, qid: str, reads: Span | list[float], spend: Callable[[], None], deadline: Deadline
    ) -> list[WindowResult]:
        if isinstance(reads, tuple):
            return collect(partial(self._repo.read_results, qid, *reads), spend, deadline)
        return collect(partial(self._repo.read_results_at, qid, reads), spend, deadline)
