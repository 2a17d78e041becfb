"""Edit on the alerts page: a stored rule loaded into the builder types the same rule again
(every field, both kinds), and Save goes through ``Rulebook.update``: stored when valid, the
API's message and nothing stored when not, and no rule made from an id that is gone."""

from __future__ import annotations

from typing import Any

import pytest

from alerting.rulebook import Rulebook
from dashboard.pages.alert_builder import submit, typed
from dashboard.pages.alert_builder_fields import FIELDS
from dashboard.pages.alert_edit import form_values
from tests.support.alert_tables import MemoryAlertTables, MemoryQueries

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


@pytest.fixture
def book() -> Rulebook:
    queries = MemoryQueries()
    queries.add("q1", "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg, max")
    return Rulebook(queries, MemoryAlertTables())


def retyped(body: dict[str, Any], **over: Any) -> dict[str, Any]:
    """What the builder sends after loading ``body`` and changing ``over``."""
    values = {**form_values(body), **over}
    return typed(*(values[p] for p in FIELDS.values()))


THRESHOLD = {
    "name": "cpu high",
    "query_id": "q1",
    "function": "max",
    "comparison": "<=",
    "thresholds": {
        "warning": 20,
        "critical": 10.25,
        "warning_recovery": 30,
        "critical_recovery": 12345678.5,
    },
    "for_s": 45,
    "keep_firing_for_s": 120,
    "nodata_policy": "alert",
    "nodata_windows": 7,
    "labels": {"team": "web", "tier": "front"},
    "annotation": "{rule}: {value}",
    "receivers": ["webhook", "email"],
}
SILENT = {
    "name": "db silent",
    "kind": "server_silent",
    "servers": "db-*",
    "silent_after_s": 300,
    "labels": {"team": "db"},
    "receivers": ["alertmanager"],
}


@pytest.mark.parametrize("raw", [THRESHOLD, SILENT, {**THRESHOLD, "thresholds": {"warning": 80}}])
def test_a_loaded_rule_types_the_same_rule_again(book: Rulebook, raw: dict[str, Any]) -> None:
    rule = book.create(raw, NOW)
    body = book.tables.rules()[rule.id]  # type: ignore[attr-defined]
    assert book.validate(retyped(body), rule.id) == rule


def test_save_stores_the_edit_and_keeps_the_rule(book: Rulebook) -> None:
    rule = book.create(THRESHOLD, NOW)
    body = book.tables.rules()[rule.id]  # type: ignore[attr-defined]
    message, result = submit(book, True, retyped(body, warn="25"), NOW + 60, rule.id)
    assert (message, result) == (f"saved rule {rule.id}", None)
    (stored_id, stored), *more = book.tables.rules().items()  # type: ignore[attr-defined]
    assert stored_id == rule.id and not more  # saved in place, nothing created
    assert stored["thresholds"]["warning"] == 25.0
    assert (stored["created_at"], stored["updated_at"]) == (NOW, NOW + 60)


def test_a_refused_or_impossible_save_stores_nothing(book: Rulebook) -> None:
    rule = book.create(THRESHOLD, NOW)
    body = book.tables.rules()[rule.id]  # type: ignore[attr-defined]
    refused = submit(book, True, retyped(body, warn="NaN"), NOW, rule.id)
    assert refused == ("thresholds.warning: must be a finite number, got nan", None)
    moved = submit(book, True, retyped(body, function="avg"), NOW, rule.id)
    assert moved[0].startswith("function: an edit cannot change what a rule watches")
    assert book.tables.rules() == {rule.id: body}  # type: ignore[attr-defined]
    assert submit(book, True, retyped(body), NOW, "gone") == ("no rule gone (deleted?)", None)
    assert set(book.tables.rules()) == {rule.id}  # type: ignore[attr-defined]
