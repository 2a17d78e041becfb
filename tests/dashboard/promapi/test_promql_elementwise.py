"""``abs``, ``round``, ``clamp``, ``clamp_min`` and ``clamp_max`` against hand-computed
values, with Go's float edge cases (NaN, ±Inf, ``to_nearest`` 0 or negative), and their bad
input refused with the parser's clear errors."""

from __future__ import annotations

import math

import pytest

from dashboard.promapi.promql_elementwise import apply, elementwise
from dashboard.promapi.promql_parse import parse_promql
from dashboard.promapi.promql_tree import Elementwise
from dashboard.promapi.selector import SelectorError

pytestmark = pytest.mark.unit


def test_abs() -> None:
    f = elementwise("abs", ())
    assert [f(v) for v in (-2.5, 0.0, 3.0, -math.inf)] == [2.5, 0.0, 3.0, math.inf]
    assert math.isnan(f(math.nan))


def test_round_is_half_up_to_a_multiple() -> None:
    f = elementwise("round", ())
    assert [f(v) for v in (2.5, -2.5, 1.49, -0.2)] == [3.0, -2.0, 1.0, 0.0]
    g = elementwise("round", (0.25,))
    assert [g(v) for v in (1.1, 1.125, -1.2)] == [1.0, 1.25, -1.25]
    assert elementwise("round", (10.0,))(44.9) == 40.0
    assert elementwise("round", (-10.0,))(46.0) == 50.0  # Go: floor(-4.6 + 0.5) / -0.1
    assert elementwise("round", ())(math.inf) == math.inf
    assert math.isnan(elementwise("round", ())(math.nan))
    assert math.isnan(elementwise("round", (0.0,))(3.0))  # 1/0 is +Inf, Inf/Inf NaN


def test_clamps_follow_gos_max_and_min() -> None:
    clamp = elementwise("clamp", (1.0, 5.0))
    assert [clamp(v) for v in (-3.0, 2.0, 9.0, math.inf)] == [1.0, 2.0, 5.0, 5.0]
    assert math.isnan(clamp(math.nan))
    assert elementwise("clamp_min", (2.0,))(1.0) == 2.0
    assert elementwise("clamp_max", (2.0,))(3.0) == 2.0
    assert elementwise("clamp_min", (math.inf,))(math.nan) == math.inf  # +Inf beats NaN
    assert elementwise("clamp_max", (-math.inf,))(math.nan) == -math.inf
    assert math.isnan(elementwise("clamp_min", (math.nan,))(1.0))


def test_apply_drops_the_metric_name_and_keeps_gaps() -> None:
    rows = [({"__name__": "apm_query", "id": "1"}, [-1.0, None, 2.0])]
    assert apply("abs", (), rows) == [({"id": "1"}, [1.0, None, 2.0])]


def test_clamp_with_max_below_min_is_empty() -> None:
    assert apply("clamp", (5.0, 1.0), [({"id": "1"}, [3.0])]) == []


def test_unknown_function_is_an_error() -> None:
    with pytest.raises(ValueError, match="not an element-wise function"):
        elementwise("sqrt", ())


def test_parsed_with_their_parameters() -> None:
    node = parse_promql("round(apm_query, 0.5)")
    assert isinstance(node, Elementwise) and node.params == (0.5,)
    node = parse_promql("clamp(abs(apm_query), -(1), 2 * 3)")
    assert isinstance(node, Elementwise) and node.params == (-1.0, 6.0)
    assert isinstance(node.expr, Elementwise) and node.expr.fn == "abs"


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("abs(1)", "expected type vector"),
        ("round(apm_query, 1, 2)", "at most 2 argument"),
        ("clamp(apm_query, 1)", "expected 3 argument"),
        ("clamp_max(apm_query, apm_query)", "expected type scalar"),
        ("clamp_min(apm_query[1m], 1)", "expected type vector"),
        ("round(apm_query, time())", "not supported"),
    ],
)
def test_bad_input_is_a_clear_error(query: str, words: str) -> None:
    with pytest.raises(SelectorError, match=words):
        parse_promql(query)
