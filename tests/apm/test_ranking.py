"""apm.ranking against numpy: the order, ties, servers without a value, and "others"."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.query import WindowResult, parse
from apm.ranking import OTHERS, rank

pytestmark = pytest.mark.unit

QUERY = "FROM * SELECT cpu WINDOW 10s COMPUTE avg, min, max, count, sum, p99 BY server"


def _rows(values: dict[str, list[float]]) -> list[WindowResult]:
    out = []
    for server, vs in values.items():
        v = np.array(vs)
        fns = {"avg": v.mean(), "min": v.min(), "max": v.max(), "count": float(len(v))}
        fns |= {"sum": v.sum(), "p99": np.percentile(v, 99)}
        out.append(WindowResult("q", 0.0, 10, fns, len(v), 1.0, server))
    return out


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9]{0,3}", fullmatch=True),
        st.lists(st.integers(-50, 50).map(float), min_size=1, max_size=6),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 5),
    st.booleans(),
)
def test_the_ranking_and_others_equal_numpy_over_the_same_samples(values, n, bottom):
    q = parse(f"{QUERY} {'BOTTOM' if bottom else 'TOP'} {n} BY avg")
    got = rank(q, _rows(values))
    means = {s: np.mean(v) for s, v in values.items()}
    order = sorted(means, key=lambda s: ((means[s] if bottom else -means[s]), s))
    assert [r.server for r in got[:n]] == order[:n]
    assert [r.rank for r in got] == list(range(1, len(got) + 1))
    rest = order[n:]
    if not rest:
        assert all(r.server != OTHERS for r in got)
        return
    others = got[-1]
    assert others.server == OTHERS
    pooled = np.array([x for s in rest for x in values[s]])
    assert others.samples == len(pooled)
    assert others.values["avg"] == pytest.approx(pooled.mean(), abs=1e-9)
    assert others.values["min"] == pooled.min() and others.values["max"] == pooled.max()
    assert others.values["count"] == len(pooled)
    assert others.values["sum"] == pytest.approx(pooled.sum(), abs=1e-9)
    assert "p99" not in others.values, "a percentile does not fold from per-server results"


def test_ties_rank_by_server_name_and_a_server_without_a_value_goes_to_others():
    q = parse(f"{QUERY} TOP 2 BY max")
    rows = _rows({"b": [5.0], "a": [5.0], "c": [7.0]})
    rows.append(WindowResult("q", 0.0, 10, {"avg": 1.0}, 1, 1.0, "d"))  # no max
    got = rank(q, rows)
    assert [(r.rank, r.server) for r in got] == [(1, "c"), (2, "a"), (3, OTHERS)]
    assert got[-1].samples == 2  # b and d
    assert rank(parse(QUERY), rows) == [], "no TOP, no ranking"
    assert rank(q, []) == []


def test_a_fold_past_the_double_range_is_left_out_not_stored_as_inf():
    q = parse(f"{QUERY} BOTTOM 1 BY max")  # a ranks; b and c fold into others
    rows = _rows({"a": [1.0], "b": [1.7e308], "c": [1.7e308]})
    others = rank(q, rows)[-1]
    assert others.server == OTHERS and others.samples == 2
    assert "sum" not in others.values and others.values["max"] == 1.7e308
    assert others.values["avg"] == 1.7e308
