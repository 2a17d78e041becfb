"""``ALERTS`` over a time range (``query_range``) from the alert history: at each step ``t`` an
alert's series is the state of its last change at or before ``t``, value 1 while that state
is pending or firing (:func:`~dashboard.promapi.alerts.alertstate`), no point while normal.

A history row is a change of one alert (rule, instance) at a window; its state takes effect at
the window's END, when the evaluator could decide it (Prometheus evaluates a rule over the
data up to the evaluation's time), and at the tick of a server-silent or meta alert. A range
(or the span of ``/series``) reads, per rule whose ``alertname``, ``rule_id`` and own labels
the selector allows, :data:`IN_FLIGHT` rules at a time, the rows of the range (one statement
per day bucket) and, for the state at its start, walks back day by day until each of the
rule's alerts has a change at or before the start, never before the rule's creation (less a
day: the first window may start up to a window before it) nor past the history's retention.
A deleted rule is not listed, so it has no series. ``max_points`` bounds the rows read and the
points answered, ``max_series`` the series; the deadline is checked per rule."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from dashboard.promapi.alert_steps import (
    Budget,
    Change,
    SeriesKey,
    change_of,
    on_between,
    step_points,
)
from dashboard.promapi.alerts import HistoryReader, series_labels
from dashboard.promapi.evaluate import Deadline, LimitError
from dashboard.promapi.selector import Selector
from dashboard.promapi.shape import Point
from storage.schema import BUCKET_SECONDS

__all__ = ["IN_FLIGHT", "AlertRange", "Guard"]

T = TypeVar("T")
# How storage is called: a failure becomes StorageUnavailable (dashboard.api.guarded).
Guard = Callable[[str, Callable[[], T]], T]
Rows = list[tuple[dict[str, str], list[Point]]]
IN_FLIGHT = 8  # rules whose history is read at once (as Repository.read_results_at)
# Labels known only once the history is read (every other comes from the rule listing).
_READ = ("alertstate", "severity", "server")


class AlertRange:
    def __init__(
        self,
        rules: Callable[[], Sequence[Mapping[str, Any]]],
        history: Callable[[], HistoryReader] | None,
        retention_s: Callable[[], float],
        guard: Guard,
        clock: Callable[[], float],
    ) -> None:
        self._rules, self._history, self._retention = rules, history, retention_s
        self._guard, self._clock = guard, clock

    def query(
        self,
        selector: Selector,
        times: range,
        deadline: Deadline,
        max_series: int,
        max_points: int,
    ) -> Rows:
        """The ``ALERTS`` series ``selector`` matches over ``times`` (unix ms) with their
        points, reading at most ``max_points`` rows and answering at most as many points."""
        budget = Budget(max_points)
        rows: Rows = []
        for rule, changes in self._read(selector, times[0], times[-1], deadline, budget):
            rows += _series(rule, changes, times, selector, budget)
            _check(len(rows), max_series)
        return rows

    def series(
        self,
        selector: Selector,
        start_ms: int,
        end_ms: int,
        deadline: Deadline,
        max_series: int,
        max_points: int,
    ) -> list[dict[str, str]]:
        """The label sets of the ``ALERTS`` series ``selector`` matches that have a point at
        some time in ``[start_ms, end_ms]`` (``/series`` and the label endpoints)."""
        budget = Budget(max_points)
        found: list[dict[str, str]] = []
        for rule, changes in self._read(selector, start_ms, end_ms, deadline, budget):
            made = (series_labels(rule, *key) for key in on_between(changes, start_ms, end_ms))
            found += sorted(
                (m for m in made if selector.matches(m)), key=lambda m: sorted(m.items())
            )
            _check(len(found), max_series)
        return found

    def _read(
        self, selector: Selector, start_ms: int, end_ms: int, deadline: Deadline, budget: Budget
    ) -> Iterator[tuple[Mapping[str, Any], list[Change]]]:
        """Each listed rule ``selector`` may match, with its changes from the last one at or
        before ``start_ms`` to ``end_ms``."""
        if self._history is None:
            return
        # Matchers on the labels of the listing (name, id, rule labels) choose the rules to read.
        listed = Selector(tuple(m for m in selector.matchers if m.label not in _READ))
        listing = self._guard("alerts", self._rules)
        chosen = [r for r in listing if listed.matches(series_labels(r, "", "", None))]
        reader = self._guard("alert_history", self._history)
        now = self._clock()
        oldest = now - self._guard("alert_history", self._retention)
        hi = now + BUCKET_SECONDS  # no history from the future (an evaluator's clock may lead)

        def read(rule: Mapping[str, Any]) -> list[Change]:
            deadline.check()
            budget.spend(0)  # another rule's read passed the limit: this one never starts
            lo = oldest
            if isinstance(created := rule.get("created_at"), int | float):
                lo = max(lo, float(created) - BUCKET_SECONDS)
            changes = partial(self._changes, reader, rule, start_ms, end_ms, lo, hi, budget)
            return self._guard("alert_history", changes)

        # Rules are read IN_FLIGHT at a time (each read waits on Cassandra), in their order.
        pool = ThreadPoolExecutor(max_workers=IN_FLIGHT, thread_name_prefix="alerts-range")
        try:
            yield from zip(chosen, pool.map(read, chosen), strict=True)
        finally:  # past a limit or the deadline: what is not started never starts
            pool.shutdown(wait=True, cancel_futures=True)

    def _changes(
        self,
        reader: HistoryReader,
        rule: Mapping[str, Any],
        start_ms: int,
        end_ms: int,
        lo: float,
        hi: float,
        budget: Budget,
    ) -> list[Change]:
        """The rule's changes in the range, and before it back to each alert's last change at
        or before the range's start (the alerts are those of the listing)."""
        rid = str(rule.get("id"))
        start_s, end_s = start_ms / 1000, end_ms / 1000
        out = []
        if start_s < hi and end_s >= lo:
            for row in reader.history(rid, max(start_s, lo), min(end_s + 0.001, hi)):
                budget.spend()
                out.append(change_of(row))
        need = set(rule.get("instances") or {})
        if rule.get("kind") not in _PER_SERVER:
            need.add("")
        upper = min(start_s, hi)
        while need and upper > lo:
            lower = max(lo, math.floor((upper - 0.001) / BUCKET_SECONDS) * BUCKET_SECONDS)
            day = list(reader.history(rid, lower, upper))
            budget.spend(len(day))
            for row in reversed(day):  # newest first
                c = change_of(row)
                if c.instance in need:
                    out.append(c)
                    if c.at <= start_ms:
                        need.discard(c.instance)
            upper = lower
        return out


def _check(found: int, max_series: int) -> None:
    if found > max_series:
        raise LimitError(
            f"the selector matches more than {max_series} ALERTS series over the range "
            "(APM_DASHBOARD_PROM_MAX_SERIES); narrow it, e.g. by alertname"
        )


# The rule kinds whose alerts are per server (instance); a threshold rule has one, "".
_PER_SERVER = ("server_silent", "meta")


def _series(
    rule: Mapping[str, Any],
    changes: list[Change],
    times: range,
    selector: Selector,
    budget: Budget,
) -> Rows:
    """One rule's series that ``selector`` matches, with their points."""
    labels: dict[SeriesKey, dict[str, str]] = {}

    def keep(key: SeriesKey) -> bool:
        if key not in labels:
            made = series_labels(rule, *key)
            labels[key] = made if selector.matches(made) else {}
        return bool(labels[key])

    found = step_points(changes, times, budget, keep)
    return [(labels[key], [(t, 1.0) for t in at]) for key, at in found.items()]
