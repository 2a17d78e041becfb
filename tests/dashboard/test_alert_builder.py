"""The rule builder's inline check: what the user types is refused with the rulebook's own
message (the API's 422 text), before any click."""

from __future__ import annotations

from typing import Any

import pytest

from alerting.rulebook import Rulebook
from alerting.rules import RuleError
from dashboard.pages.alert_builder import PRISTINE, _raw, check
from tests.support.alert_tables import MemoryAlertTables, MemoryQueries

pytestmark = pytest.mark.unit


@pytest.fixture
def book() -> Rulebook:
    queries = MemoryQueries()
    queries.add("q1", "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg, max")
    return Rulebook(queries, MemoryAlertTables())


def typed(**over: Any) -> dict[str, Any]:
    fields = {
        "name": "cpu high",
        "query": "q1",
        "function": "avg",
        "cmp": ">",
        "warn": "80",
        "crit": "",
        "for_s": "30",
        "annotation": "",
    }
    fields.update(over)
    return _raw(*fields.values())


def api_message(book: Rulebook, raw: dict[str, Any]) -> str:
    with pytest.raises(RuleError) as refused:
        book.validate(raw)
    return f"{refused.value.at}: {refused.value.detail}"


@pytest.mark.parametrize(
    "over",
    [
        {"warn": "NaN"},
        {"warn": "inf"},
        {"warn": "-1e999"},
        {"warn": "eighty"},
        {"for_s": str(3 * 365 * 86_400)},  # a `for` of years
        {"for_s": "1.5"},
        {"query": None},
        {"query": "gone"},  # a deleted query
        {"function": None},
        {"function": "p99"},  # not computed by the query
        {"annotation": "{value.__class__}"},
        {"annotation": "{"},
        {"warn": "", "crit": ""},
        {"name": ""},
        {"warn": "90", "crit": "80"},
    ],
)
def test_each_refusal_is_the_apis_message(book: Rulebook, over: dict[str, Any]) -> None:
    raw = typed(**over)
    message, css = check(lambda: book, raw)
    assert css == "error"
    assert message == api_message(book, raw)


def test_a_valid_rule_says_so_and_a_blank_form_explains_itself(book: Rulebook) -> None:
    assert check(lambda: book, typed())[1] == "ok"
    blank = typed(query=None, function=None, warn="", crit="")
    assert check(lambda: book, blank) == (PRISTINE, "hint")


def test_the_first_problem_is_named_before_a_missing_name(book: Rulebook) -> None:
    message, _ = check(lambda: book, typed(name="", warn="nan"))
    assert message.startswith("thresholds.warning:")


def test_storage_down_is_said_not_passed_as_valid() -> None:
    def down() -> Rulebook:
        raise OSError("no Cassandra")

    message, css = check(down, typed())
    assert css == "error" and "storage unavailable" in message
