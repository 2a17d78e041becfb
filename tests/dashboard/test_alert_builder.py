"""The rule builder's inline check: what the user types is refused with the rulebook's own
message (the API's 422 text), before any click; Create stores exactly what was typed and a
refusal stores nothing; Preview folds the recovery lines, keep-firing-for and no-data policy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from alerting.rulebook import Rulebook
from alerting.rules import RuleError
from apm.query import WindowResult
from dashboard.pages.alert_builder import NO_SERVERS, PRISTINE, _figure, check, submit, typed
from dashboard.pages.alert_builder_fields import FIELDS, rule_body
from tests.support.alert_tables import MemoryAlertTables, MemoryQueries

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


class StoredWindows(MemoryQueries):
    """Stored queries with their results, for the preview (storage.Repository's edge)."""

    def __init__(self) -> None:
        super().__init__()
        self.results: list[WindowResult] = []

    def read_results(self, query_id: str, start: float, end: float) -> Iterator[WindowResult]:
        for r in self.results:
            if r.query_id == query_id and start <= r.window_start < end:
                yield r


@pytest.fixture
def queries() -> StoredWindows:
    queries = StoredWindows()
    queries.add("q1", "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg, max")
    return queries


@pytest.fixture
def book(queries: StoredWindows) -> Rulebook:
    return Rulebook(queries, MemoryAlertTables())


def form(**over: Any) -> dict[str, Any]:
    """The controls' values as the form starts, a valid rule typed, with ``over`` changed."""
    fields = {
        "kind": "threshold",
        "name": "cpu high",
        "query": "q1",
        "function": "avg",
        "cmp": ">",
        "warn": "80",
        "crit": "",
        "warn_rec": "",
        "crit_rec": "",
        "for_s": "30",
        "keep": "0",
        "policy": "keep",
        "windows": "3",
        "servers": "*",
        "silent_after": "60",
        "labels": "",
        "annotation": "",
        "receivers": [],
    }
    assert set(fields) == set(FIELDS.values())  # every control of the form is typed here
    fields.update(over)
    return fields


def typed_in(**over: Any) -> dict[str, Any]:
    fields = form(**over)
    return typed(*(fields[p] for p in FIELDS.values()))  # in the callbacks' order


def api_message(book: Rulebook, raw: dict[str, Any]) -> str:
    with pytest.raises(RuleError) as refused:
        book.validate(raw)
    return f"{refused.value.at}: {refused.value.detail}"


SILENT = {"kind": "server_silent", "query": None, "function": None, "warn": ""}


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
        # recovery lines
        {"warn_rec": "NaN"},
        {"warn_rec": "1e999"},
        {"warn_rec": "85"},  # on the firing side of warning 80 for '>'
        {"cmp": "<", "warn_rec": "75"},  # on the firing side of warning 80 for '<'
        {"crit_rec": "90"},  # no critical threshold
        {"crit": "90", "crit_rec": "95"},
        {"crit": "90", "crit_rec": "ninety"},
        # keep firing for
        {"keep": "-1"},
        {"keep": "2.5"},
        {"keep": str(8 * 86_400)},
        {"keep": "soon"},
        # the no-data policy and its windows
        {"windows": "0"},
        {"windows": "10001"},
        {"windows": "2.5"},
        {"windows": "many"},
        {"policy": "panic"},  # a request not made by the dropdown
        # labels
        {"labels": "bad-name=x"},
        {"labels": "1st=x"},
        {"labels": ", ".join(f"l{i}=v" for i in range(33))},
        {"labels": "team=" + "x" * 1025},
        # receivers (a request not made by the checklist)
        {"receivers": ["pager"]},
        {"receivers": ["email", "email"]},
        # server silent
        {**SILENT, "silent_after": "0"},
        {**SILENT, "silent_after": "1e9"},
        {**SILENT, "silent_after": "NaN"},
        {**SILENT, "silent_after": "a minute"},
        {**SILENT, "servers": "w" * 201},
        {**SILENT, "labels": "bad-name=x"},
        {**SILENT, "annotation": "{server.__dict__}"},
        {**SILENT, "name": ""},
        {"kind": "cron"},  # a request not made by the dropdown
    ],
)
def test_each_refusal_is_the_apis_message_and_stores_nothing(
    book: Rulebook, over: dict[str, Any]
) -> None:
    raw = typed_in(**over)
    message, css = check(lambda: book, raw)
    assert css == "error"
    assert message == api_message(book, raw)
    assert submit(book, True, raw, NOW) == (message, None)
    assert book.tables.rules() == {}


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ("team", "labels: 'team' is not name=value (team=web)"),
        ("team=web, =x", "labels: '=x' is not name=value (team=web)"),
        ("team=web, team=db", "labels: 'team' is given twice"),
    ],
)
def test_labels_that_cannot_be_read_are_refused_naming_the_field(labels: str, message: str) -> None:
    with pytest.raises(RuleError) as refused:
        typed_in(labels=labels)
    assert f"{refused.value.at}: {refused.value.detail}" == message


def test_a_rule_with_every_field_is_stored_exactly_as_typed(book: Rulebook) -> None:
    raw = typed_in(
        crit="90",
        warn_rec="70",
        crit_rec="85.5",
        keep="120",
        policy="alert",
        windows="5",
        labels=" team = web , tier=front,",
        annotation="{rule}: {value}",
        receivers=["webhook"],
    )
    assert check(lambda: book, raw)[1] == "ok"
    message, result = submit(book, True, raw, NOW)
    (rule_id, stored), *more = book.tables.rules().items()
    assert message == f"created rule {rule_id}" and result is None and not more
    assert stored["thresholds"] == {
        "warning": 80.0,
        "critical": 90.0,
        "warning_recovery": 70.0,
        "critical_recovery": 85.5,
    }
    assert (stored["keep_firing_for_s"], stored["for_s"]) == (120, 30)
    assert (stored["nodata_policy"], stored["nodata_windows"]) == ("alert", 5)
    assert stored["labels"] == {"team": "web", "tier": "front"}
    assert stored["annotation"] == "{rule}: {value}"
    assert stored["receivers"] == ["webhook"]


def test_blank_optional_fields_take_the_apis_defaults(book: Rulebook) -> None:
    optional = ("keep_firing_for_s", "nodata_windows", "labels", "annotation", "receivers")
    raw = typed_in(keep="", windows="", labels="", annotation="")
    assert not set(optional) & set(raw)  # left out, as a JSON body without them
    submit(book, True, raw, NOW)
    (stored,) = book.tables.rules().values()
    minimal = {"name": "x", "query_id": "q1", "function": "avg", "thresholds": {"warning": 80}}
    defaults = book.validate(minimal).to_dict()
    assert {k: stored[k] for k in optional} == {k: defaults[k] for k in optional}


def test_a_server_silent_rule_is_stored_without_a_query(book: Rulebook) -> None:
    raw = typed_in(**SILENT, servers=" db-* ", silent_after="300", labels="team=db")
    assert check(lambda: book, raw) == ("valid: Preview draws it, Create stores it", "ok")
    assert submit(book, False, raw, NOW) == (NO_SERVERS.format(glob="db-*"), None)
    book.queries.servers = {"db-1": NOW - 400, "db-2": NOW - 10, "web-1": NOW - 400}  # type: ignore[attr-defined]
    assert submit(book, False, raw, NOW) == (
        "1 of 2 would fire now: db-1 firing (silent 400s), db-2 normal (silent 10s)",
        None,
    )
    assert book.tables.rules() == {}  # a preview stores nothing
    submit(book, True, raw, NOW)
    (stored,) = book.tables.rules().values()
    assert stored["kind"] == "server_silent"
    assert (stored["servers"], stored["silent_after_s"]) == ("db-*", 300)
    assert stored["labels"] == {"team": "db"}


def _flapping(queries: StoredWindows, values: list[float | None]) -> None:
    start = NOW // 10 * 10 - 10 * len(values)
    queries.results = [
        WindowResult(
            "q1", start + 10 * i, 10, {} if v is None else {"avg": v}, int(v is not None), NOW
        )
        for i, v in enumerate(values)
    ]


def _states(book: Rulebook, **over: Any) -> list[str]:
    message, result = submit(book, False, typed_in(**over), NOW)
    assert message == "" and result is not None
    return [p["state"] for p in result["points"]][-6:]


def test_preview_holds_firing_above_the_recovery_line(
    book: Rulebook, queries: StoredWindows
) -> None:
    _flapping(queries, [95, 95, 95, 95, 75, 75])  # back under 80, still above 70
    assert _states(book, for_s="0")[-2:] == ["normal", "normal"]
    assert _states(book, for_s="0", warn_rec="70")[-2:] == ["firing", "firing"]
    assert _states(book, for_s="0", keep="60")[-2:] == ["recovering", "recovering"]
    assert book.tables.rules() == {}


def test_preview_applies_the_no_data_policy(book: Rulebook, queries: StoredWindows) -> None:
    _flapping(queries, [50, None, None, None, None, None])
    assert _states(book, policy="alert", windows="2")[-4:] == ["nodata"] * 4
    assert "nodata" not in _states(book, policy="keep", windows="2")


def test_preview_draws_the_recovery_lines(book: Rulebook, queries: StoredWindows) -> None:
    _flapping(queries, [95, 75])
    _, result = submit(book, False, typed_in(crit="90", warn_rec="70", crit_rec="85"), NOW)
    assert result is not None
    lines = {s.y0: s.line.dash for s in _figure(result).layout.shapes}
    assert lines == {80.0: None, 90.0: None, 70.0: "dot", 85.0: "dot"}


def test_a_valid_rule_says_so_and_a_blank_form_explains_itself(book: Rulebook) -> None:
    assert check(lambda: book, typed_in())[1] == "ok"
    blank = typed_in(query=None, function=None, warn="", crit="")
    assert check(lambda: book, blank) == (PRISTINE, "hint")


def test_the_first_problem_is_named_before_a_missing_name(book: Rulebook) -> None:
    message, _ = check(lambda: book, typed_in(name="", warn="nan"))
    assert message.startswith("thresholds.warning:")


def test_storage_down_is_said_not_passed_as_valid() -> None:
    def down() -> Rulebook:
        raise OSError("no Cassandra")

    message, css = check(down, typed_in())
    assert css == "error" and "storage unavailable" in message


def test_the_body_is_keyed_like_the_api(book: Rulebook) -> None:
    # rule_body by keyword and typed() in the callbacks' order describe the same rule.
    assert rule_body(**form(warn_rec="70")) == typed_in(warn_rec="70")
