"""One evaluation cycle: every rule on every completed window of its query, in event time.

Per alert the durable row holds a *checkpoint* (the state after the last window past the
lateness horizon, which late data can no longer change), the states of the windows after it
(still open to late data) and what was last notified. Each cycle refolds the open windows from
the checkpoint over the stored results, so a window refined by late data re-evaluates it, and
writes only the history rows that changed. Order of writes: history, outbox, then the state
row; a crash anywhere replays the same fold and rewrites the same keys.

A window is complete ``settle_s`` after its end. An evaluator that fell behind catches up at
most ``max_windows_per_cycle`` windows per rule a cycle and never skips a window; how far
behind it is shows as ``apm_alerting_lag_seconds``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from alerting.machine import AlertState, Observation, fold
from alerting.notices import Notice, decide, labels_of
from alerting.rules import Rule, RuleError, rule_from_dict
from alerting.settings import AlertingSettings
from alerting.silences import Silence, SilenceError, silence_from_dict
from apm.query import StoredQuery, WindowResult
from storage.alerts import HistoryRow, OutboxRow

__all__ = ["CycleReport", "Evaluator", "ResultsReader"]

log = logging.getLogger(__name__)


class ResultsReader(Protocol):
    def get_query(self, query_id: str) -> StoredQuery | None: ...
    def read_results(self, query_id: str, start: float, end: float) -> Iterator[WindowResult]: ...


class AlertTables(Protocol):
    def rules(self) -> dict[str, dict[str, Any]]: ...
    def silences(self) -> dict[str, tuple[dict[str, Any], list[Any]]]: ...
    def current(self) -> dict[tuple[str, str], dict[str, Any]]: ...
    def put_current(self, rows: Iterable[tuple[str, str, dict[str, Any]]]) -> None: ...
    def put_history(self, rows: Iterable[HistoryRow]) -> None: ...
    def enqueue(self, rows: Iterable[OutboxRow]) -> None: ...
    def set_suppressed(self, silence_id: str, suppressed: list[Any]) -> None: ...


@dataclass
class CycleReport:
    rules: int = 0
    windows: int = 0
    history_rows: int = 0
    notices: int = 0
    suppressed: int = 0
    errors: int = 0
    lag_s: float = 0.0  # the oldest complete window not yet evaluated, behind now
    states: dict[str, int] = field(default_factory=dict)


def _state(d: dict[str, Any] | None) -> AlertState:
    return AlertState(**d) if d else AlertState()


class Evaluator:
    def __init__(
        self,
        results: ResultsReader,
        tables: AlertTables,
        settings: AlertingSettings,
        receivers: tuple[str, ...] = (),
    ) -> None:
        self.results, self.tables, self.settings = results, tables, settings
        self.receivers = receivers
        self._cache: dict[tuple[str, float, float], dict[float, WindowResult]] = {}

    def run_once(self, now: float) -> CycleReport:
        report = CycleReport()
        self._cache.clear()
        silences = self._silences()
        suppressed: dict[str, list[Any]] = {s.id: [] for s in silences}
        current = self.tables.current()
        rows: list[tuple[str, str, dict[str, Any]]] = []
        history: list[HistoryRow] = []
        outbox: list[OutboxRow] = []
        queries: dict[str, StoredQuery | None] = {}
        for rule_id, body in sorted(self.tables.rules().items()):
            try:
                rule = rule_from_dict(body, rule_id=rule_id)
            except RuleError as exc:  # validated when stored: only a hand-edited row gets here
                log.error("rule %s no longer validates (%s): skipped", rule_id, exc)
                report.errors += 1
                continue
            if rule.query_id not in queries:
                queries[rule.query_id] = self.results.get_query(rule.query_id)
            stored = queries[rule.query_id]
            row = current.get((rule.id, ""), {})
            new_row, hist, news, lag = self._rule(rule, stored, row, now, body)
            latest = _state(new_row["latest"])
            report.rules += 1
            report.windows += len(hist)
            report.lag_s = max(report.lag_s, lag)
            history += hist
            labels = labels_of(rule, latest, "")
            hits = [s for s in silences if s.active(now) and s.matches(rule.id, labels, None)]
            if latest.active and hits:
                report.suppressed += 1
                for s in hits:
                    suppressed[s.id].append({"rule_id": rule.id, "fired_at": latest.fired_at})
            # Each new window's state in turn (a catch-up after an outage still sends the
            # firing and the resolution it passed over), else the refolded newest one.
            done = row.get("evaluated_through")
            fresh = [st for st in news if done is None or (st.window_start or 0) > done]
            notified, notices = row.get("notified"), []
            for st in fresh or [latest]:
                some, notified = decide(
                    rule,
                    "",
                    st,
                    notified,
                    now=now,
                    renotify_s=self.settings.renotify_s,
                    silenced=bool(hits),
                    query_text=stored.text if stored else rule.query_id,
                )
                notices += some
            new_row["notified"] = notified
            outbox += self._outbox(notices)
            rows.append((rule.id, "", new_row))
            report.states[latest.state] = report.states.get(latest.state, 0) + 1
        self.tables.put_history(history)
        self.tables.enqueue(outbox)
        self.tables.put_current(rows)
        for sid, items in suppressed.items():
            self.tables.set_suppressed(sid, items[-100:])
        report.history_rows, report.notices = len(history), len(outbox)
        return report

    def _silences(self) -> list[Silence]:
        out = []
        for sid, (body, _) in self.tables.silences().items():
            try:
                out.append(silence_from_dict(body, silence_id=sid))
            except SilenceError as exc:
                log.error("silence %s no longer validates (%s): skipped", sid, exc)
        return out

    def _outbox(self, notices: list[Notice]) -> list[OutboxRow]:
        return [OutboxRow(r, n.id, n.body) for n in notices for r in self.receivers]

    def _observations(
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

    def _rule(
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
        checkpoint = _state(row.get("checkpoint"))
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
        obs = self._observations(rule, stored, first, upto, ws) if upto >= first else []
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
        latest = states[-1] if states else _state(row.get("latest"))
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
