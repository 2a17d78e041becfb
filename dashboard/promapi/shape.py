"""Prometheus' response format: ``{"status": "success", "data": ...}`` or ``{"status": "error",
"errorType", "error"}``; sample values as strings formatted as Prometheus formats them, and
timestamps as unix seconds (a whole number, or with milliseconds)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal

__all__ = ["Point", "error_body", "format_time", "format_value", "matrix", "success", "vector"]

Point = tuple[int, float]  # (unix milliseconds, value)


def format_value(v: float) -> str:
    """As Prometheus' JSON does (Go's AppendFloat, shortest form): positional notation, but an
    exponent below 1e-6 or from 1e21 on; ``NaN``, ``+Inf``, ``-Inf``."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v != 0 and not 1e-6 <= abs(v) < 1e21:
        return repr(v)  # Python's shortest repr has Go's exponent form here: 1e-07, 1.5e+21
    text = format(Decimal(repr(v)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_time(ms: int) -> int | float:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def success(data: object, warnings: Sequence[str] = ()) -> dict[str, object]:
    out: dict[str, object] = {"status": "success", "data": data}
    if warnings:
        out["warnings"] = list(warnings)
    return out


def error_body(error_type: str, message: str) -> dict[str, object]:
    return {"status": "error", "errorType": error_type, "error": message}


def _sorted(rows: Sequence[tuple[Mapping[str, str], Sequence[Point]]]) -> list:
    return sorted(rows, key=lambda row: sorted(row[0].items()))


def matrix(rows: Sequence[tuple[Mapping[str, str], Sequence[Point]]]) -> dict[str, object]:
    """Series with at least one point, sorted by their labels, as Prometheus sorts a matrix."""
    return {
        "resultType": "matrix",
        "result": [
            {
                "metric": dict(labels),
                "values": [[format_time(t), format_value(v)] for t, v in points],
            }
            for labels, points in _sorted(rows)
            if points
        ],
    }


def vector(
    rows: Sequence[tuple[Mapping[str, str], Point]], keep_order: bool = False
) -> dict[str, object]:
    """Samples sorted by their labels, or, ``keep_order`` (an instant ``sort()``), as given."""
    ordered = rows if keep_order else sorted(rows, key=lambda row: sorted(row[0].items()))
    return {
        "resultType": "vector",
        "result": [
            {"metric": dict(labels), "value": [format_time(t), format_value(v)]}
            for labels, (t, v) in ordered
        ],
    }
