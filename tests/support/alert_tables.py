"""An in-memory stand-in for storage.alerts.AlertStore's rule, silence, state and history
tables, with the same edges (JSON-shaped bodies in, history oldest first, [start, end)), for
unit tests of the dashboard's alert pieces; the real store is tested in tests/storage."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from apm.query import StoredQuery, parse
from storage.alerts import HistoryRow

__all__ = ["MemoryAlertTables", "MemoryQueries"]


class MemoryQueries:
    def __init__(self) -> None:
        self.stored: dict[str, StoredQuery] = {}

    def add(self, query_id: str, text: str) -> StoredQuery:
        self.stored[query_id] = StoredQuery(query_id, parse(text))
        return self.stored[query_id]

    def get_query(self, query_id: str) -> StoredQuery | None:
        return self.stored.get(query_id)

    def list_servers(self) -> dict[str, float]:
        """server -> last seen (storage.Repository.list_servers); tests set ``servers``."""
        return dict(getattr(self, "servers", {}))


class MemoryAlertTables:
    def __init__(self) -> None:
        self._rules: dict[str, dict[str, Any]] = {}
        self._silences: dict[str, tuple[dict[str, Any], list[Any]]] = {}
        self._history: list[HistoryRow] = []

    def put_rule(self, rule_id: str, body: dict[str, Any], now: float) -> None:
        self._rules[rule_id] = copy.deepcopy(body)

    def update_rule(self, rule_id: str, body: dict[str, Any], now: float) -> bool:
        if rule_id not in self._rules:  # as the store's IF EXISTS
            return False
        self._rules[rule_id] = copy.deepcopy(body)
        return True

    def delete_rule(self, rule_id: str) -> None:
        self._rules.pop(rule_id, None)

    def rules(self) -> dict[str, dict[str, Any]]:
        return copy.deepcopy(self._rules)

    def put_silence(self, silence_id: str, body: dict[str, Any], now: float) -> None:
        self._silences[silence_id] = (copy.deepcopy(body), [])

    def delete_silence(self, silence_id: str) -> None:
        self._silences.pop(silence_id, None)

    def silences(self) -> dict[str, tuple[dict[str, Any], list[Any]]]:
        return copy.deepcopy(self._silences)

    def current(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {}

    def put_history(self, rows: list[HistoryRow]) -> None:
        self._history.extend(rows)

    def history(self, rule_id: str, start: float, end: float) -> Iterator[HistoryRow]:
        rows = [h for h in self._history if h.rule_id == rule_id and start <= h.window_start < end]
        yield from sorted(rows, key=lambda h: h.window_start)
