"""One threshold rule's windows: which are complete, which are still open to late data, and the
refold of the open ones from the checkpoint over the stored results (see alerting/evaluator.py
for the order of writes). Rules on one query share one read of its results per cycle.

An alert is one *instance* of a rule: "" for a query's one series, a server's name for a series
of a ``BY server`` query (alerting/servers.py), whose results are read by window for every
server at once (alerting/server_reads.py)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from alerting.machine import AlertState, Observation, fold
from alerting.rules import Rule
from alerting.server_reads import ServerReads
from alerting.settings import AlertingSettings
from apm.query import StoredQuery, WindowResult
from storage.alerts import HistoryRow

__all__ = ["PREFETCH_THREADS", "Windows", "state_of"]

# Concurrent result reads per cycle (the Cassandra driver's session is thread-safe).
PREFETCH_THREADS = 16


class Results(Protocol):
    def read_results(self, query_id: str, start: float, end: float) -> Any: ...
    def read_window_servers(self, query_id: str, window_start: float) -> Any: ...


def state_of(d: dict[str, Any] | None) -> AlertState:
    return AlertState(**d) if d else AlertState()


class Windows:
    def __init__(self, results: Results, settings: AlertingSettings) -> None:
        self.results, self.settings = results, settings
        self._cache: dict[tuple[str, float, float], dict[float, WindowResult]] = {}
        self.server_reads = ServerReads(results, settings)  # of BY server queries
        self._encoded: dict[tuple[str, str, float, float], list[Any]] = {}

    def new_cycle(self) -> None:
        self._cache.clear()
        self.server_reads.new_cycle()
        self._encoded.clear()

    def values(
        self,
        rule: Rule,
        stored: StoredQuery | None,
        first: float,
        last: float,
        ws: int,
        instance: str = "",
        row: dict[str, Any] | None = None,
    ) -> list[Any]:
        """One input per window from ``first`` to ``last``, as the alert's row stores them: its
        value, None (no samples), or ``!`` + an error (the query is gone, or does not compute
        the function). ``instance``: a server of a ``BY server`` query (its alert's ``row``
        gives the windows not read this cycle: alerting/server_reads.py). Rules on one query's
        one series and function share one list per cycle (read only: the row keeps a slice);
        Observations are made only for the windows folded (:func:`_obs`)."""
        if stored is None:
            return [f"!query {rule.query_id} does not exist (deleted?)"] * len(
                _count(first, last, ws)
            )
        if instance:  # its own: windows not read this cycle come from the alert's own row
            return self._server_values(rule, first, last, ws, instance, row or {})
        key = (rule.query_id, rule.function, first, last)
        made = self._encoded.get(key)
        if made is not None:
            return made
        else:
            ckey = (rule.query_id, first, last)
            if ckey not in self._cache:  # rules on one query share the read within a cycle
                self._cache[ckey] = {
                    r.window_start: r
                    for r in self.results.read_results(rule.query_id, first, last + ws)
                }
            got = self._cache[ckey]
        f, missing = rule.function, f"!query {rule.query_id} does not compute {rule.function}"
        out: list[Any] = []
        for i in _count(first, last, ws):
            r = got.get(first + i * ws)
            if r is None or r.samples == 0:
                out.append(None)
            else:
                v = r.values.get(f)
                out.append(missing if v is None else float(v))
        self._encoded[key] = out
        return out

    def _first(
        self,
        row: dict[str, Any],
        stored: StoredQuery | None,
        body: dict,
        ws: int,
        last: float,
        now: float,
    ) -> float:
        through, start = row.get("through"), row.get("start")
        if start is not None:  # refold from the first open window, as before
            return float(start)
        if through is not None:
            return float(through) + ws
        active = stored.active_from if stored and stored.active_from else 0.0
        start_from = max(float(body.get("created_at", now)), active)
        return max(
            math.floor(start_from / ws) * ws, last - (self.settings.backfill_windows - 1) * ws
        )

    def bounds(
        self, stored: StoredQuery | None, row: dict[str, Any], now: float, body: dict[str, Any]
    ) -> tuple[int, float, float, float]:
        """The window size, the newest complete window, and the windows to read this cycle."""
        ws = stored.query.window_seconds if stored else int(row.get("window_seconds", 60))
        last: float = math.floor((now - self.settings.settle_s) / ws) * ws - ws
        first = self._first(row, stored, body, ws, last, now)
        return ws, last, first, min(last, first + (self.settings.max_windows_per_cycle - 1) * ws)

    def prefetch(self, reads: set[tuple[str, float, float, int]]) -> None:
        """Reads the results of several (query, first, last, window) ranges at once: one
        cycle's reads overlap instead of queueing one after another."""

        def read(key: tuple[str, float, float, int]) -> None:
            qid, first, last, ws = key
            rows = self.results.read_results(qid, first, last + ws)
            self._cache[(qid, first, last)] = {r.window_start: r for r in rows}

        with ThreadPoolExecutor(max_workers=PREFETCH_THREADS) as pool:
            list(pool.map(read, [k for k in reads if k[:3] not in self._cache]))

    def _server_values(
        self, rule: Rule, first: float, last: float, ws: int, server: str, row: dict[str, Any]
    ) -> list[Any]:
        reads = self.server_reads
        if reads.read_windows(rule.query_id) is None:  # not planned: read the whole range
            reads.prefetch({(rule.query_id, first, last, ws, None)})
        read, got = reads.read_windows(rule.query_id) or set(), reads.series(rule.query_id, server)
        old, start = row.get("open") or [], row.get("start")
        f, missing = rule.function, f"!query {rule.query_id} does not compute {rule.function}"
        out: list[Any] = []
        for i in _count(first, last, ws):
            t = first + i * ws
            if t not in read:  # not read again this cycle: as the alert last saw it
                j = -1 if start is None else round((t - start) / ws)
                out.append(old[j] if 0 <= j < len(old) else None)
                continue
            r = got.get(t)
            if r is None or r.samples == 0:
                out.append(None)
            else:
                v = r.values.get(f)
                out.append(missing if v is None else float(v))
        return out

    def refold(
        self,
        rule: Rule,
        stored: StoredQuery | None,
        row: dict[str, Any],
        now: float,
        body: dict[str, Any],
        instance: str = "",
    ) -> tuple[dict[str, Any], list[HistoryRow], list[AlertState], float]:
        """The alert's new row, the history rows to write, the states of the windows folded
        this cycle, and how far behind the newest complete window the evaluation is.

        The row keeps the open windows' *values*; only from the first one whose value changed
        (late data) or is new is the fold redone, from the stored state before it."""
        s = self.settings
        ws, last, first, upto = self.bounds(stored, row, now, body)
        checkpoint = state_of(row.get("checkpoint"))
        new_values = (
            self.values(rule, stored, first, upto, ws, instance, row) if upto >= first else []
        )
        n = len(new_values)
        old_values: list[Any] = row.get("open", []) if row.get("start") == first else []
        k = len(old_values)
        if new_values[:k] != old_values:  # refined: find the first window that changed
            pairs = enumerate(zip(old_values, new_values, strict=False))
            k = next((i for i, (a, b) in pairs if a != b), min(k, n))
        if k == len(old_values):  # nothing refined: go on from the newest state
            before = state_of(row.get("latest")) if old_values else checkpoint
        else:  # window k was refined by late data: refold from the state before it
            before = (
                fold(rule, checkpoint, _obs(first, ws, new_values, 0, k))[-1] if k else checkpoint
            )
        folded = _obs(first, ws, new_values, k, n)
        tail = fold(rule, before, folded)
        # History keeps the transitions. After a refinement every row from the refined window
        # on is rewritten, so a transition that no longer happens is overwritten, not left.
        refined = k < len(old_values)
        history, prev = [], before
        for o, st in zip(folded, tail, strict=True):
            changed = st.state != prev.state
            if changed or refined:
                d = dict(vars(st))
                history.append(HistoryRow(rule.id, o.window_start, instance, st.state, changed, d))
            prev = st
        # Windows past the lateness horizon are final: fold them into the checkpoint.
        horizon = now - s.settle_s - s.lateness_s
        m = max(0, min(n, math.floor((horizon - first) / ws)))
        through = row.get("through")
        if m:
            final = (
                tail[m - k - 1]
                if m > k
                else fold(rule, checkpoint, _obs(first, ws, new_values, 0, m))[-1]
            )
            checkpoint, through = final, first + (m - 1) * ws
        latest = tail[-1] if tail else state_of(row.get("latest")) if row else checkpoint
        new_row = {
            "checkpoint": dict(vars(checkpoint)),
            "through": through,
            "start": first + m * ws if m < n else None,
            "open": new_values[m:],
            "latest": dict(vars(latest)),
            "window_seconds": ws,
            "evaluated_through": upto if upto >= first else row.get("evaluated_through"),
        }
        if instance:  # a server's newest window with samples: gone after a silent hour
            seen = [i for i, v in enumerate(new_values) if v is not None and not isinstance(v, str)]
            new_row["seen"] = first + seen[-1] * ws if seen else row.get("seen", first)
        lag = max(0.0, last - upto) if upto >= first else 0.0
        return new_row, history, tail, lag


def _count(first: float, last: float, ws: int) -> range:
    return range(max(0, int((last - first) // ws) + 1))


def _obs(first: float, ws: int, values: list[Any], lo: int, hi: int) -> list[Observation]:
    """The Observations of windows ``lo`` to ``hi`` (excluded) of ``values`` (as
    :meth:`Windows.values` gives them) from ``first``."""
    out = []
    for i in range(lo, hi):
        v = values[i]
        if isinstance(v, str):  # "!" + an error
            out.append(Observation(first + i * ws, ws, None, v[1:]))
        else:
            out.append(Observation(first + i * ws, ws, v))
    return out
