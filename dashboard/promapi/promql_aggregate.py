"""PromQL's aggregation operators at each step, as Prometheus 2.x computes them: ``sum``,
``avg``, ``min``, ``max``, ``count``, ``stddev``, ``stdvar``, ``quantile(φ, ...)`` over the
groups ``by``/``without`` make (the output keeps the grouping labels only),
``count_values("label", ...)`` (one series per distinct value, the value as a label), and
``topk``/``bottomk`` (the output keeps each chosen series' labels; NaN ranks lowest, ties in no
particular order)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.promql_functions import over_time, quantile, stdvar
from dashboard.promapi.promql_rows import Row, Sparse, dense
from dashboard.promapi.promql_tree import Aggregate

__all__ = ["Row", "aggregate", "format_label_value", "group_labels"]

_SIMPLE = {"sum": "sum", "avg": "avg", "min": "min", "max": "max", "count": "count"}


def group_labels(node: Aggregate, labels: Mapping[str, str]) -> dict[str, str]:
    """The labels of the group a series falls in (empty values are no labels)."""
    if node.without:
        drop = {*node.labels, "__name__"}
        return {k: v for k, v in labels.items() if k not in drop and v != ""}
    return {k: labels[k] for k in node.labels if labels.get(k, "") != ""}


def format_label_value(v: float) -> str:
    """A value as ``count_values`` writes it: Go's ``FormatFloat(v, 'f', -1, 64)``, the
    shortest digits that read back as ``v``, never an exponent."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    text = format(Decimal(repr(v)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _reduce(node: Aggregate, here: list[float]) -> float:
    if node.op in _SIMPLE:
        return over_time(_SIMPLE[node.op], here)
    if node.op == "quantile":
        return quantile(math.nan if node.param is None else node.param, here)
    variance = stdvar(here)
    return math.sqrt(variance) if node.op == "stddev" else variance


def aggregate(
    node: Aggregate, rows: Sequence[Row], steps: int, deadline: Deadline, max_points: int
) -> list[Row]:
    if node.op == "count_values":  # a series per distinct value: refused past max_points
        return dense(_count_values(node, rows, deadline), steps, max_points)
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
            values.append(_reduce(node, here) if here else None)
        out.append((keys[key], values))
    return out


def _count_values(node: Aggregate, rows: Sequence[Row], deadline: Deadline) -> Sparse:
    """Each step's values counted per group, the group's labels plus ``label=<value>``
    (``by`` keeps that label whatever it names, as Prometheus adds it to the grouping)."""
    label = node.value_label
    by = node if node.without else Aggregate(node.op, node.expr, (*node.labels, label), False, True)
    found: Sparse = {}
    for labels, values in rows:
        deadline.check()
        for step, v in enumerate(values):
            if v is None:
                continue
            group = group_labels(by, {**labels, label: format_label_value(v)})
            key = tuple(sorted(group.items()))
            counts = found.setdefault(key, (group, {}))[1]
            counts[step] = counts.get(step, 0.0) + 1.0
    return found


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
