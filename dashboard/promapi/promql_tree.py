"""The PromQL the read API evaluates, as a small tree of frozen dataclasses:
:mod:`.promql_parse` makes it from ``promql-parser``'s, :mod:`.promql_eval` evaluates it."""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.promapi.selector import Selector

__all__ = [
    "AGGREGATIONS",
    "ARITHMETIC",
    "COMPARISONS",
    "NO_SHIFT",
    "OVER_TIME",
    "SET_OPERATORS",
    "Absent",
    "Aggregate",
    "Bare",
    "Binary",
    "Elementwise",
    "Expr",
    "Matching",
    "Node",
    "Number",
    "OverTime",
    "Relabel",
    "Shift",
    "Sort",
    "Subquery",
    "Vector",
]

OVER_TIME = ("avg", "min", "max", "sum", "count", "last", "quantile", "stddev", "stdvar")
AGGREGATIONS = (
    *("sum", "avg", "min", "max", "count", "stddev", "stdvar"),
    *("quantile", "topk", "bottomk", "count_values"),
)
ARITHMETIC = ("+", "-", "*", "/", "%", "^")
COMPARISONS = ("==", "!=", "<", ">", "<=", ">=")
SET_OPERATORS = ("and", "or", "unless")


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class Shift:
    """A selector's ``offset`` and ``@``: it is evaluated at ``at`` (unix ms, or the query's
    ``"start"``/``"end"``) for every step if given, else at each step, less ``offset_ms``
    (negative: later). :mod:`.promql_shift` applies it."""

    offset_ms: int = 0
    at: int | str | None = None


NO_SHIFT = Shift()


@dataclass(frozen=True)
class Vector:
    """An instant selector: each series' point at a step, with PromQL's look-back."""

    selector: Selector
    shift: Shift = NO_SHIFT


@dataclass(frozen=True)
class Bare:
    """A bare selector with ``offset`` or ``@``: read as a bare selector is (its one-window
    look-back, :mod:`.evaluate`) at the shifted times."""

    selector: Selector
    shift: Shift


@dataclass(frozen=True)
class Subquery:
    """``expr[range:step]`` inside a ``*_over_time()`` (whose ``range_ms`` and ``shift`` are
    the subquery's): ``expr`` evaluated at every multiple of ``step_ms`` (0: the API's default
    subquery step) in the range, those points the function's samples."""

    expr: Node
    step_ms: int = 0


@dataclass(frozen=True)
class OverTime:
    fn: str  # one of OVER_TIME
    selector: Selector | Subquery
    range_ms: int
    param: float | None = None  # quantile_over_time's φ
    shift: Shift = NO_SHIFT


@dataclass(frozen=True)
class Absent:
    """``absent(v)`` (or, over a range, ``absent_over_time``: ``expr`` is then a
    ``count_over_time``): 1 with ``labels`` at each step where ``expr`` has no point."""

    expr: Node
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Aggregate:
    op: str  # one of AGGREGATIONS
    expr: Node
    labels: tuple[str, ...] = ()
    without: bool = False
    grouped: bool = False  # by/without given (sum() with neither is one group)
    param: float | None = None  # topk/bottomk's k, quantile's φ
    value_label: str = ""  # count_values' label


@dataclass(frozen=True)
class Matching:
    """How two vectors' series match: ``on(labels)`` or ``ignoring(labels)``, the
    cardinality (``group_left``: many-to-one, ``group_right``: one-to-many, set operators:
    many-to-many) and the labels ``group_x(...)`` copies from the "one" side."""

    on: bool = False
    labels: tuple[str, ...] = ()
    card: str = "one-to-one"
    include: tuple[str, ...] = ()


@dataclass(frozen=True)
class Binary:
    op: str  # one of ARITHMETIC, COMPARISONS or SET_OPERATORS
    lhs: Node
    rhs: Node
    bool_: bool = False
    matching: Matching | None = None  # between two vectors only


@dataclass(frozen=True)
class Elementwise:
    """A function of each sample (:mod:`.promql_elementwise`) with its scalar parameters."""

    fn: str
    expr: Node
    params: tuple[float, ...] = ()


@dataclass(frozen=True)
class Sort:
    """``sort(expr)`` or, ``desc``, ``sort_desc(expr)`` (:mod:`.promql_sort`)."""

    expr: Node
    desc: bool = False


@dataclass(frozen=True)
class Relabel:
    """``label_replace``/``label_join`` (:mod:`.promql_labels`) with its string arguments."""

    fn: str
    expr: Node
    args: tuple[str, ...]


Node = Number | Vector | OverTime | Aggregate | Binary | Elementwise | Sort | Relabel | Absent
# What parse_promql makes beyond what selector.parse_expr reads:
Expr = OverTime | Aggregate | Binary | Vector | Elementwise | Sort | Relabel | Absent | Bare
