"""PromQL's aggregation operators at each step, as Prometheus 2.x computes them: ``sum``,
``avg``, ``min``, ``max``, ``count`` over the groups ``by``/``without`` make (the output keeps
the grouping labels only), and ``topk``/``bottomk`` (the output keeps each chosen series'
labels; NaN ranks lowest, ties in no particular order)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.promql_functions import over_time
from dashboard.promapi.promql_parse import Aggregate

__all__ = ["Row", "aggregate", "group_labels"]

Row = tuple[dict[str, str], list[float | None]]  # labels, a value (or None) at each step
_SIMPLE = {"sum": "sum", "avg": "avg", "min": "min", "max": "max", "count": "count"}


def group_labels(node: Aggregate, labels: Mapping[str, str]) -> dict[str, str]:
    """The labels of the group a series falls in (empty values are no labels)."""
    if node.without:
        drop = {*node.labels, "__name__"}
        return {k: v for k, v in labels.items() if k not in drop and v != ""}
    return {k: labels[k] for k in node.labels if labels.get(k, "") != ""}


def aggregate(node: Aggregate, rows: Sequence[Row], steps: int, deadline: Deadline) -> list[Row]:
    groups: dict[tuple, list[int]] = {}
    keys: dict[tuple, dict[str, str]] = {}
    for i, (labels, _) in enumerate(rows):
        group = group_labels(node, labels) if node.grouped else {}
        key = tuple(sorted(group.items()))
        groups.setdefault(key, []).append(i)
        keys[key] = group
    if node.op in ("topk", "bottomk"):
        return _top(node, rows, groups.values(), steps, deadline)
    out: list[Row] = []
    for key, members in groups.items():
        deadline.check()
        values: list[float | None] = []
        for step in range(steps):
            here = [v for i in members if (v := rows[i][1][step]) is not None]
            values.append(over_time(_SIMPLE[node.op], here) if here else None)
        out.append((keys[key], values))
    return out


def _top(
    node: Aggregate,
    rows: Sequence[Row],
    groups: Iterable[list[int]],
    steps: int,
    deadline: Deadline,
) -> list[Row]:
    param = math.nan if node.param is None else node.param
    if math.isnan(param) or param < 1:
        return []
    k = int(min(param, len(rows)))
    sign = 1.0 if node.op == "topk" else -1.0
    kept: list[list[float | None]] = [[None] * steps for _ in rows]
    for members in groups:
        deadline.check()
        for step in range(steps):
            here = [(i, v) for i in members if (v := rows[i][1][step]) is not None]
            # NaN ranks below every number for both, as Prometheus' heap does.
            here.sort(key=lambda iv: (not math.isnan(iv[1]), sign * iv[1] if iv[1] == iv[1] else 0))
            for i, v in here[-k:]:
                kept[i][step] = v
    return [
        (dict(labels), kept[i])
        for i, (labels, _) in enumerate(rows)
        if any(v is not None for v in kept[i])
    ]
