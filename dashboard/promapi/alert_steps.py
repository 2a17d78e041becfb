"""The step mapping of ``ALERTS`` over a range, pure (no I/O): an alert's stored state changes
(:class:`Change`, from ``alert_history`` rows) to the steps at which each of its series has
value 1, and to the series on at some time in an interval. Reading the history is
:mod:`.alert_range`'s."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dashboard.promapi.alerts import alertstate
from dashboard.promapi.evaluate import LimitError

__all__ = ["Budget", "Change", "SeriesKey", "change_of", "on_between", "step_points"]

SeriesKey = tuple[str, str, str | None]  # (instance, alertstate, severity)


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


class Budget:
    """Rows read and points answered, shared by the reads in flight (hence the lock)."""

    def __init__(self, left: int) -> None:
        self.left = left
        self._lock = threading.Lock()

    def spend(self, n: int = 1) -> None:
        with self._lock:
            self.left -= n
            left = self.left
        if left < 0:
            raise LimitError(
                "the ALERTS range read or answered more than APM_DASHBOARD_PROM_MAX_POINTS "
                "history rows and points; narrow the selector, shorten the range or raise the step"
            )


def step_points(
    changes: Iterable[Change],
    times: range,
    budget: Budget | None = None,
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


def on_between(changes: Iterable[Change], start_ms: int, end_ms: int) -> set[SeriesKey]:
    """The series on at some time in ``[start_ms, end_ms]``: each alert's at the start (its
    last change at or before it), and each one it changed to up to the end."""
    at_start: dict[str, SeriesKey | None] = {}
    out: set[SeriesKey] = set()
    for c in sorted(changes):
        if c.at > end_ms:
            break
        state = alertstate(c.state)
        key = None if state is None else (c.instance, state, c.severity)
        if c.at <= start_ms:
            at_start[c.instance] = key
        elif key is not None:
            out.add(key)
    return out | {k for k in at_start.values() if k is not None}
