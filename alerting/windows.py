"""One threshold rule's windows: which are complete, which are still open to late data, and the
refold of the open ones from the checkpoint over the stored results (see alerting/evaluator.py
for the order of writes). Rules on one query share one read of its results per cycle."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Protocol

from alerting.machine import AlertState, Observation, fold
from alerting.rules import Rule
from alerting.settings import AlertingSettings
from apm.query import StoredQuery, WindowResult
from storage.alerts import HistoryRow

__all__ = ["Windows", "state_of"]


class Results(Protocol):
    def read_results(self, query_id: str, start: float, end: float) -> Any: ...


def state_of(d: dict[str, Any] | None) -> AlertState:
    return AlertState(**d) if d else AlertState()


class Windows:
    def __init__(self, results: Results, settings: AlertingSettings) -> None:
        self.results, self.settings = results, settings
        self._cache: dict[tuple[str, float, float], dict[float, WindowResult]] = {}

    def new_cycle(self) -> None:
        self._cache.clear()

    def observations(
        self, rule: Rule, stored: StoredQuery | None, first: float, last: float, ws: int
    ) -> list[Observation]:
        if stored is None:
            why = f"query {rule.query_id} does not exist (deleted?)"
            return [Observation(last, ws, None, error=why)]
        key = (rule.query_id, first, last)
        if key not in self._cache:  # rules on one query share the read within a cycle
            self._cache[key] = {
                r.window_start: r
                for r in self.results.read_results(rule.query_id, first, last + ws)
            }
        values = self._cache[key]
        out = []
        t = first
        while t <= last:
            got = values.get(t)
            if got is None or got.samples == 0:
                out.append(Observation(t, ws, None))
            elif rule.function not in got.values:
                why = f"query {rule.query_id} does not compute {rule.function}"
                out.append(Observation(t, ws, None, error=why))
            else:
                out.append(Observation(t, ws, float(got.values[rule.function])))
            t += ws
        return out

    def refold(
        self,
        rule: Rule,
        stored: StoredQuery | None,
        row: dict[str, Any],
        now: float,
        body: dict[str, Any],
    ) -> tuple[dict[str, Any], list[HistoryRow], list[AlertState], float]:
        s = self.settings
        ws = stored.query.window_seconds if stored else int(row.get("window_seconds", 60))
        last: float = math.floor((now - s.settle_s) / ws) * ws - ws  # the newest complete window
        checkpoint = state_of(row.get("checkpoint"))
        through = row.get("through")
        opened: dict[str, Any] = row.get("open", {})
        first: float
        if through is None and opened:  # refold from the first open window, as before
            first = min(float(k) for k in opened)
        elif through is None:
            active = stored.active_from if stored and stored.active_from else 0.0
            start_from = max(float(body.get("created_at", now)), active)
            first = max(math.floor(start_from / ws) * ws, last - (s.backfill_windows - 1) * ws)
        else:
            first = float(through) + ws
        upto = min(last, first + (s.max_windows_per_cycle - 1) * ws)
        obs = self.observations(rule, stored, first, upto, ws) if upto >= first else []
        states = fold(rule, checkpoint, obs)
        history, before = [], checkpoint
        for o, st in zip(obs, states, strict=True):
            d = asdict(st)
            if opened.get(str(o.window_start)) != d:
                history.append(
                    HistoryRow(rule.id, o.window_start, "", st.state, st.state != before.state, d)
                )
            before = st
        # Windows past the lateness horizon are final: fold them into the checkpoint.
        horizon = now - s.settle_s - s.lateness_s
        new_open: dict[str, Any] = {}
        for o, st in zip(obs, states, strict=True):
            if o.window_end <= horizon:
                checkpoint, through = st, o.window_start
            else:
                new_open[str(o.window_start)] = asdict(st)
        latest = states[-1] if states else state_of(row.get("latest"))
        new_row = {
            "checkpoint": asdict(checkpoint),
            "through": through,
            "open": new_open,
            "latest": asdict(latest),
            "window_seconds": ws,
            "evaluated_through": upto if upto >= first else row.get("evaluated_through"),
        }
        lag = max(0.0, last - upto) if upto >= first else 0.0
        return new_row, history, states, lag
