"""Sparse results made rows: one point per label set and step (a second is Prometheus'
"vector cannot contain metrics with the same labelset"), and rows only within max_points."""

from __future__ import annotations

import pytest

from dashboard.promapi.evaluate import LimitError
from dashboard.promapi.promql_rows import ExecutionError, Sparse, dense, put

pytestmark = pytest.mark.unit


def test_two_points_of_one_label_set_at_a_step_are_refused() -> None:
    found: Sparse = {}
    put(found, {"a": "1"}, 0, 1.0)
    put(found, {"a": "1"}, 1, 2.0)
    assert dense(found, 2, 2) == [({"a": "1"}, [1.0, 2.0])]
    with pytest.raises(ExecutionError, match="same labelset"):  # as Prometheus' rangeEval
        put(found, {"a": "1"}, 1, 3.0)


def test_dense_refuses_past_max_points() -> None:
    found: Sparse = {(("i", str(i)),): ({"i": str(i)}, {0: 1.0}) for i in range(11)}
    assert len(dense(found, 10, 110)) == 11
    with pytest.raises(LimitError, match="11 series x 10 steps"):
        dense(found, 10, 109)
