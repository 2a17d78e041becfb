"""The values an expression gives at each step: a :data:`Row` per series (dense, None where it
has no point), or :data:`Sparse` while an operator builds a result whose series it cannot know
in advance (an operator between vectors, ``count_values``), made rows by :func:`dense` only
within the API's ``max_points``."""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.promapi.evaluate import LimitError

__all__ = ["SAME_LABELSET", "ExecutionError", "Row", "Sig", "Sparse", "dense", "key", "put"]

Row = tuple[dict[str, str], list[float | None]]  # labels, a value (or None) at each step
Sig = tuple[tuple[str, str], ...]  # labels (or some of them) as a sorted tuple
Sparse = dict[Sig, tuple[dict[str, str], dict[int, float]]]  # key -> (labels, step -> value)


SAME_LABELSET = "vector cannot contain metrics with the same labelset"


class ExecutionError(LimitError):
    """A query Prometheus refuses while evaluating (its ``execution`` errors): 422."""


def key(labels: Mapping[str, str]) -> Sig:
    return tuple(sorted(labels.items()))


def put(found: Sparse, labels: dict[str, str], step: int, value: float) -> None:
    points = found.setdefault(key(labels), (labels, {}))[1]
    if step in points:
        raise ExecutionError(SAME_LABELSET)
    points[step] = value


def dense(found: Sparse, steps: int, max_points: int) -> list[Row]:
    """Sparse results as rows, refused past ``max_points`` cells before they are made."""
    if len(found) * steps > max_points:
        raise LimitError(
            f"the result has {len(found)} series x {steps} steps, more than {max_points} points "
            "(APM_DASHBOARD_PROM_MAX_POINTS); narrow the selectors or raise the step"
        )
    return [(labels, [points.get(s) for s in range(steps)]) for labels, points in found.values()]
