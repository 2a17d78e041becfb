"""PromQL's ``sort(v)`` and ``sort_desc(v)``, as Prometheus 2.x computes them: the samples of
an instant vector ordered by value, ascending or descending, NaN last in both (Prometheus sorts
with "NaN first" and reverses); the labels, ``__name__`` included, are kept and the values are
unchanged. Ties are in no particular order in Prometheus (Go's ``sort.Sort`` is not stable);
here they keep their label order.

Only an instant query has an order: a range query's matrix is sorted by labels, so over more
than one step both are the identity. And only the outermost ``sort``/``sort_desc`` of an
expression orders the answer (:func:`ordered`): inside an expression the order is the
operator's."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from dashboard.promapi.promql_rows import Row
from dashboard.promapi.promql_tree import Sort

__all__ = ["SORTS", "ordered", "sort_rows"]

SORTS = ("sort", "sort_desc")


def _key(desc: bool) -> Callable[[Row], tuple[int, float]]:
    def key(row: Row) -> tuple[int, float]:
        v = row[1][0]
        if v is None:  # no point at the step: dropped from the answer, placed last
            return (2, 0.0)
        if math.isnan(v):
            return (1, 0.0)
        return (0, -v if desc else v)

    return key


def sort_rows(desc: bool, rows: Sequence[Row], steps: int) -> list[Row]:
    """``rows`` ordered by their value at the one step of an instant query; over more steps,
    as they are."""
    if steps != 1:
        return list(rows)
    return sorted(rows, key=_key(desc))


def ordered(expr: object) -> bool:
    """Whether an instant query of ``expr`` answers in the order its rows come in (its
    outermost node is ``sort``/``sort_desc``), rather than sorted by labels."""
    return isinstance(expr, Sort)
