"""``ALERTS`` over a time range (``query_range``) from the alert history: at each step ``t`` an
alert's series is the state of its last change at or before ``t``, value 1 while that state
is pending or firing (:func:`~dashboard.promapi.alerts.alertstate`), no point while normal.

A history row is a change of one alert (rule, instance) at a window; its state takes effect at
the window's END, when the evaluator could decide it (Prometheus evaluates a rule over the
data up to the evaluation's time), and at the tick of a server-silent or meta alert. A range
reads, per rule whose ``alertname``/``rule_id`` the selector allows, the rows of the range (one
statement per day bucket) and, for the state at its start, walks back day by day until each of
the rule's alerts has a change at or before the start, never before the rule's creation (less
a day: the first window may start up to a window before it) nor past the history's
retention. A deleted rule is not listed, so it has no series. ``max_points`` bounds the rows
read and the points answered, ``max_series`` the series; the deadline is checked per rule."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from dashboard.promapi.alerts import HistoryReader, alertstate, series_labels
from dashboard.promapi.evaluate import Deadline, LimitError
from dashboard.promapi.selector import ALERT_LABELS, Selector
from dashboard.promapi.shape import Point
from storage.schema import BUCKET_SECONDS

__all__ = ["AlertRange", "Change", "SeriesKey", "change_of", "step_points"]

T = TypeVar("T")
Guard = Callable[[str, Callable[[], T]], T]
SeriesKey = tuple[str, str, str | None]  # (instance, alertstate, severity)
Rows = list[tuple[dict[str, str], list[Point]]]
# Labels known from the rule listing before any history is read.
_LISTED = ("__name__", "alertname", "rule_id")


@dataclass(frozen=True, order=True)
class Change:
    at: int  # unix ms the state took effect
    instance: str
    state: str  # the evaluator's state: normal, pending, firing, recovering, nodata, error
    severity: str | None = None


def change_of(row: Any) -> Change:
    """A history row (:class:`storage.alerts.HistoryRow`) as a :class:`Change`."""
    body = row.body if isinstance(row.body, Mapping) else {}
    end = body.get("window_end")
    at = end if isinstance(end, int | float) and math.isfinite(end) else row.window_start
    severity = body.get("severity")
    return Change(round(at * 1000), row.instance, row.state, str(severity) if severity else None)


class _Budget:
    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise LimitError(
                "the ALERTS range read or answered more than APM_DASHBOARD_PROM_MAX_POINTS "
                "history rows and points; narrow the selector, shorten the range or raise the step"
            )


def step_points(
    changes: Iterable[Change],
    times: range,
    budget: _Budget | None = None,
    keep: Callable[[SeriesKey], bool] = lambda _key: True,
) -> dict[SeriesKey, list[int]]:
    """The steps of ``times`` (unix ms) at which each series has value 1: the alert's state at
    ``t`` is that of its last change at or before ``t`` (none before its first change).
    ``changes`` may come in any order; ``keep`` drops series the selector does not match."""
    ordered = sorted(changes)
    shown: dict[str, SeriesKey] = {}  # instance -> the series it is on now
    out: dict[SeriesKey, list[int]] = {}
    i = 0
    for t in times:
        while i < len(ordered) and ordered[i].at <= t:
            c = ordered[i]
            state = alertstate(c.state)
            if state is None:
                shown.pop(c.instance, None)
            else:
                shown[c.instance] = (c.instance, state, c.severity)
            i += 1
        for key in shown.values():
            if keep(key):
                if budget is not None:
                    budget.spend()
                out.setdefault(key, []).append(t)
    return out


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
        if self._history is None:
            return []
        # Matchers on listed labels (and on labels ALERTS never has) choose the rules to read.
        listed = Selector(
            tuple(m for m in selector.matchers if m.label in _LISTED or m.label not in ALERT_LABELS)
        )
        listing = self._guard("alerts", self._rules)
        chosen = [r for r in listing if listed.matches(series_labels(r, "", "", None))]
        reader = self._guard("alert_history", self._history)
        now = self._clock()
        oldest = now - self._guard("alert_history", self._retention)
        budget = _Budget(max_points)
        rows: Rows = []
        for rule in chosen:
            deadline.check()
            lo = oldest
            if isinstance(created := rule.get("created_at"), int | float):
                lo = max(lo, float(created) - BUCKET_SECONDS)
            hi = now + BUCKET_SECONDS  # no history from the future (an evaluator's clock may lead)
            read = partial(self._changes, reader, rule, times, lo, hi, budget)
            rows += _series(rule, self._guard("alert_history", read), times, selector, budget)
            if len(rows) > max_series:
                raise LimitError(
                    f"the selector matches more than {max_series} ALERTS series over the "
                    "range (APM_DASHBOARD_PROM_MAX_SERIES); narrow it, e.g. by alertname"
                )
        return rows

    def _changes(
        self,
        reader: HistoryReader,
        rule: Mapping[str, Any],
        times: range,
        lo: float,
        hi: float,
        budget: _Budget,
    ) -> list[Change]:
        """The rule's changes in the range, and before it back to each alert's last change at
        or before the range's start (the alerts are those of the listing)."""
        rid = str(rule.get("id"))
        start_s, end_s = times[0] / 1000, times[-1] / 1000
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
                    if c.at <= times[0]:
                        need.discard(c.instance)
            upper = lower
        return out


# The rule kinds whose alerts are per server (instance); a threshold rule has one, "".
_PER_SERVER = ("server_silent", "meta")


def _series(
    rule: Mapping[str, Any],
    changes: list[Change],
    times: range,
    selector: Selector,
    budget: _Budget,
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
