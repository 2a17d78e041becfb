"""One evaluation cycle's edges: what it reads and writes through (Protocols, I/O passed in),
what it accumulates before its writes, and what it reports (counts, lag, and the seconds each
phase took: the evaluator's cost, printed by bench/alerting_cost.py)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from alerting.silences import Silence
from apm.query import StoredQuery, WindowResult
from storage.alerts import HistoryRow, OutboxRow

__all__ = ["PHASES", "AlertTables", "Cycle", "CycleReport", "ResultsReader"]

# The phases of a cycle, in order: the rules, silences and queries read; the stored results
# read; the fold and the notices decided; the history and outbox written; the state rows written.
PHASES = ("plan", "read", "fold", "history", "state")


class ResultsReader(Protocol):
    def list_queries(self) -> list[StoredQuery]: ...
    def read_results(self, query_id: str, start: float, end: float) -> Iterator[WindowResult]: ...
    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]: ...
    def list_servers(self) -> dict[str, float]: ...
    def get_status(self) -> dict[str, dict]: ...


class AlertTables(Protocol):
    def rules(self) -> dict[str, dict[str, Any]]: ...
    def silences(self) -> dict[str, tuple[dict[str, Any], list[Any]]]: ...
    def current(self) -> dict[tuple[str, str], dict[str, Any]]: ...
    def put_current(self, rows: Iterable[tuple[str, str, dict[str, Any]]]) -> None: ...
    def put_history(self, rows: Iterable[HistoryRow]) -> None: ...
    def enqueue(self, rows: Iterable[OutboxRow]) -> None: ...
    def delete_current(self, rule_id: str) -> None: ...
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
    state_rows: int = 0  # the alert rows written (the others were unchanged in substance)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase (PHASES)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - began


@dataclass
class Cycle:
    """What one cycle accumulates before its writes."""

    now: float
    report: CycleReport
    silences: list[Silence]
    suppressed: dict[str, list[Any]]
    current: dict[tuple[str, str], dict[str, Any]]
    # rule -> server -> its alert row: the per-server alerts (alerting/servers.py) by rule
    servers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    rows: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    history: list[HistoryRow] = field(default_factory=list)
    outbox: list[OutboxRow] = field(default_factory=list)
