"""Aggregation operators at each step against hand-computed values: grouping by and without
(the metric name and empty labels), sum/avg/min/max/count over the series present at a step,
topk/bottomk keeping whole label sets, NaN ranked lowest, k below 1 or above the series."""

from __future__ import annotations

import math

import pytest

from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.promql_aggregate import Row, aggregate, format_label_value, group_labels
from dashboard.promapi.promql_tree import Aggregate, Number

pytestmark = pytest.mark.unit

FOREVER = Deadline(math.inf, lambda: 0.0)
ROWS: list[Row] = [
    ({"__name__": "apm_query", "id": "a", "fn": "max"}, [1.0, 5.0, None]),
    ({"__name__": "apm_query", "id": "a", "fn": "min"}, [2.0, None, None]),
    ({"__name__": "apm_query", "id": "b", "fn": "max"}, [4.0, 3.0, 6.0]),
]


def _agg(op: str, labels: tuple[str, ...] = (), without: bool = False, **kw: float) -> Aggregate:
    grouped = bool(labels) or without
    return Aggregate(op, Number(0), labels, without, grouped, kw.get("k"))


def _by_labels(rows: list[Row]) -> dict[tuple, list[float | None]]:
    return {tuple(sorted(labels.items())): values for labels, values in rows}


def test_group_labels() -> None:
    labels = {"__name__": "apm_query", "id": "a", "fn": "max", "window": ""}
    assert group_labels(_agg("sum", ("fn", "server", "window")), labels) == {"fn": "max"}
    assert group_labels(_agg("sum", ("__name__",)), labels) == {"__name__": "apm_query"}
    assert group_labels(_agg("sum", ("id",), without=True), labels) == {"fn": "max"}


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("sum", [7.0, 8.0, 6.0]),
        ("avg", [7 / 3, 4.0, 6.0]),
        ("min", [1.0, 3.0, 6.0]),
        ("max", [4.0, 5.0, 6.0]),
        ("count", [3.0, 2.0, 1.0]),
    ],
)
def test_one_group(op: str, expected: list[float]) -> None:
    [(labels, values)] = aggregate(_agg(op), ROWS, 3, FOREVER, 10_000)
    assert labels == {} and values == pytest.approx(expected)


def test_by_and_without() -> None:
    by_fn = _by_labels(aggregate(_agg("sum", ("fn",)), ROWS, 3, FOREVER, 10_000))
    assert by_fn == {(("fn", "max"),): [5.0, 8.0, 6.0], (("fn", "min"),): [2.0, None, None]}
    without_fn = _by_labels(aggregate(_agg("max", ("fn",), without=True), ROWS, 3, FOREVER, 10_000))
    assert without_fn == {(("id", "a"),): [2.0, 5.0, None], (("id", "b"),): [4.0, 3.0, 6.0]}


def test_topk_and_bottomk_keep_the_series_labels() -> None:
    top = _by_labels(aggregate(_agg("topk", k=1), ROWS, 3, FOREVER, 10_000))
    assert top == {
        tuple(sorted(ROWS[0][0].items())): [None, 5.0, None],
        tuple(sorted(ROWS[2][0].items())): [4.0, None, 6.0],
    }
    bottom = _by_labels(aggregate(_agg("bottomk", k=2), ROWS, 3, FOREVER, 10_000))
    assert bottom == {
        tuple(sorted(ROWS[0][0].items())): [1.0, 5.0, None],
        tuple(sorted(ROWS[1][0].items())): [2.0, None, None],
        tuple(sorted(ROWS[2][0].items())): [None, 3.0, 6.0],
    }
    by_id = _by_labels(aggregate(_agg("topk", ("id",), k=1), ROWS, 3, FOREVER, 10_000))
    assert by_id[tuple(sorted(ROWS[1][0].items()))] == [2.0, None, None]  # a's first step


def test_topk_ranks_nan_lowest_and_bounds_k() -> None:
    rows: list[Row] = [({"id": "a"}, [math.nan]), ({"id": "b"}, [-1.0])]
    assert aggregate(_agg("topk", k=1), rows, 1, FOREVER, 10_000) == [({"id": "b"}, [-1.0])]
    assert aggregate(_agg("bottomk", k=1), rows, 1, FOREVER, 10_000) == [({"id": "b"}, [-1.0])]
    assert len(aggregate(_agg("topk", k=1e9), rows, 1, FOREVER, 10_000)) == 2
    assert aggregate(_agg("topk", k=0.5), rows, 1, FOREVER, 10_000) == []
    assert aggregate(_agg("topk", k=math.nan), rows, 1, FOREVER, 10_000) == []


@pytest.mark.parametrize(
    ("op", "phi", "expected"),
    [
        ("quantile", 0.5, [2.0, 4.0, 6.0]),
        ("quantile", 0.25, [1.5, 3.5, 6.0]),  # rank 0.5 between 1 and 2; 0.25 between 3 and 5
        ("quantile", 1.5, [math.inf] * 3),
        ("quantile", -1, [-math.inf] * 3),
        ("stdvar", None, [14 / 9, 1.0, 0.0]),  # population variance of 1, 2, 4
        ("stddev", None, [math.sqrt(14 / 9), 1.0, 0.0]),
    ],
)
def test_quantile_stddev_stdvar(op: str, phi: float | None, expected: list[float]) -> None:
    node = Aggregate(op, Number(0), (), False, False, phi)
    [(labels, values)] = aggregate(node, ROWS, 3, FOREVER, 10_000)
    assert labels == {} and values == pytest.approx(expected)


def test_quantile_by_group() -> None:
    node = Aggregate("quantile", Number(0), ("fn",), False, True, 0.5)
    got = _by_labels(aggregate(node, ROWS, 3, FOREVER, 10_000))
    assert got == {(("fn", "max"),): [2.5, 4.0, 6.0], (("fn", "min"),): [2.0, None, None]}


def test_count_values_counts_each_value_per_group() -> None:
    rows: list[Row] = [
        ({"__name__": "m", "id": "a", "fn": "max"}, [1.0, 2.0]),
        ({"__name__": "m", "id": "b", "fn": "max"}, [1.0, None]),
        ({"__name__": "m", "id": "b", "fn": "min"}, [0.5, 1e21]),
    ]
    plain = Aggregate("count_values", Number(0), (), False, False, None, "v")
    assert _by_labels(aggregate(plain, rows, 2, FOREVER, 10_000)) == {
        (("v", "1"),): [2.0, None],
        (("v", "2"),): [None, 1.0],
        (("v", "0.5"),): [1.0, None],
        (("v", "1000000000000000000000"),): [None, 1.0],
    }
    without = Aggregate("count_values", Number(0), ("id",), True, True, None, "v")
    got = _by_labels(aggregate(without, rows, 2, FOREVER, 10_000))
    assert got[(("fn", "max"), ("v", "1"))] == [2.0, None]
    by_fn = Aggregate("count_values", Number(0), ("fn",), False, True, None, "fn")
    got = _by_labels(aggregate(by_fn, rows, 2, FOREVER, 10_000))  # the value replaces fn, as in Go
    assert got[(("fn", "1"),)] == [2.0, None]


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, "1"), (0.1, "0.1"), (-2.5, "-2.5"), (1e-7, "0.0000001"), (math.nan, "NaN"),
     (math.inf, "+Inf"), (-math.inf, "-Inf"), (123456789.125, "123456789.125")],
)  # fmt: skip
def test_format_label_value_as_go(value: float, text: str) -> None:
    assert format_label_value(value) == text
