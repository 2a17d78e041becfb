"""``sort`` and ``sort_desc``: by value at an instant with NaN last both ways, the identity
over a range, the labels (``__name__`` too) kept, the answer's order kept only for an
outermost sort (through the whole app), bad input refused with the parser's clear errors; and
the differential harness' ordered comparison, which must tell a wrong order apart."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dashboard.promapi.promql_parse import parse_promql
from dashboard.promapi.promql_sort import ordered, sort_rows
from dashboard.promapi.promql_tree import Sort
from dashboard.promapi.selector import SelectorError
from tests.dashboard.promapi.test_promql_run import _client, repo  # noqa: F401 - a fixture
from tests.dashboard.promapi.test_routes import T0, ResultRepo, _ok
from tests.support.promql_peer import normalise, same

pytestmark = pytest.mark.unit


def _rows(*values: float | None) -> list[Any]:
    return [({"__name__": "m", "i": str(n)}, [v]) for n, v in enumerate(values)]


def _order(rows: list[Any]) -> list[str]:
    return [labels["i"] for labels, _ in rows]


def test_sort_is_ascending_with_nan_last() -> None:
    rows = _rows(3.0, math.nan, -math.inf, 1.0, math.inf, math.nan, 2.0)
    assert _order(sort_rows(False, rows, 1)) == ["2", "3", "6", "0", "4", "1", "5"]


def test_sort_desc_is_descending_with_nan_last() -> None:
    rows = _rows(3.0, math.nan, -math.inf, 1.0, math.inf, 2.0)
    assert _order(sort_rows(True, rows, 1)) == ["4", "0", "5", "3", "2", "1"]


def test_rows_without_a_point_go_last_and_labels_are_kept() -> None:
    rows = _rows(None, 5.0, 4.0)
    got = sort_rows(False, rows, 1)
    assert _order(got) == ["2", "1", "0"]
    assert got[0] == ({"__name__": "m", "i": "2"}, [4.0])


def test_over_more_than_one_step_the_rows_are_unchanged() -> None:
    rows = [({"i": "0"}, [3.0, 1.0]), ({"i": "1"}, [1.0, 3.0])]
    assert sort_rows(True, rows, 2) == rows


def test_parsed_and_only_the_outermost_sort_orders() -> None:
    node = parse_promql("sort_desc(sum by (fn) (apm_query))")
    assert isinstance(node, Sort) and node.desc and ordered(node)
    node = parse_promql("(sort(apm_query))")
    assert isinstance(node, Sort) and not node.desc and ordered(node)
    assert not ordered(parse_promql("sort(apm_query) * 2"))


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("sort(1)", "expected type vector"),
        ("sort_desc(apm_query[1m])", "expected type vector"),
        ("sort(apm_query, 1)", "expected 1 argument"),
        ('sort("a")', "expected type vector"),
        ("sort_by_label(apm_query, 'id')", "not supported"),
    ],
)
def test_bad_input_is_a_clear_error(query: str, words: str) -> None:
    with pytest.raises(SelectorError, match=words):
        parse_promql(query)


def test_the_app_answers_an_instant_sort_in_order(repo: ResultRepo) -> None:  # noqa: F811
    # qa's window i (min = i, p99 = i + 0.5) ends at T0 + 10 (i + 1); at T0 + 60: i = 5.
    # Sorted by labels, min comes before p99: each sort below must put them its own way.
    api = _client(repo)

    def ask(query: str) -> list[tuple[str, str, str]]:
        data = _ok(api.get("/api/v1/query", query_string={"query": query, "time": T0 + 60}))
        return [(r["metric"]["fn"], r["value"][1], r["metric"]["__name__"]) for r in data["result"]]

    assert ask('sort_desc(apm_query{id="qa"})') == [
        ("p99", "5.5", "apm_query"),
        ("min", "5", "apm_query"),
    ]
    assert ask('sort(apm_query{id="qa"})') == [
        ("min", "5", "apm_query"),
        ("p99", "5.5", "apm_query"),
    ]
    data = _ok(
        api.get(
            "/api/v1/query_range",
            query_string={
                "query": 'sort_desc(apm_query{id="qa"})',
                "start": T0 + 50,
                "end": T0 + 60,
                "step": 10,
            },
        )
    )
    assert [r["metric"]["fn"] for r in data["result"]] == ["min", "p99"]  # a matrix: by labels


def _vector(*pairs: tuple[str, float]) -> Any:
    result = [{"metric": {"i": i}, "value": [1, str(v)]} for i, v in pairs]
    return normalise({"resultType": "vector", "result": result})


def test_the_harness_compares_order_only_when_asked() -> None:
    a = _vector(("x", 1.0), ("y", 2.0))
    b = _vector(("y", 2.0), ("x", 1.0))
    assert same(a, b) and not same(a, b, ordered=True)
    assert same(a, a, ordered=True)
    ties = (
        _vector(("x", 1.0), ("y", 1.0), ("z", math.nan)),
        _vector(("y", 1.0), ("x", 1.0), ("z", math.nan)),
    )
    assert same(*ties, ordered=True)  # equal values may come in any order, as in Prometheus
