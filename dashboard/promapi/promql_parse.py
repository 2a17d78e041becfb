"""PromQL beyond a bare selector, parsed by ``promql-parser`` (PyPI; a binding of the Rust
``promql-parser`` crate, the grammar of Prometheus' own parser) and converted into the small
tree (:mod:`.promql_tree`) :mod:`.promql_eval` evaluates:

* ``<fn>_over_time(selector[range])`` for avg, min, max, sum, count, last, stddev, stdvar,
  and ``quantile_over_time(φ, selector[range])``;
* subqueries ``fn_over_time(expr[range:step])`` and ``[range:]`` (:class:`Subquery`), with
  ``offset`` and ``@`` as a range selector's; nowhere else;
* ``offset`` and ``@`` on any selector (:class:`Shift`, applied by :mod:`.promql_shift`; a
  bare selector with them is a :class:`Bare`, read with its own look-back);
* ``absent(v)`` and ``absent_over_time(selector[range])`` (:class:`Absent`, its labels
  those of the selector's ``=`` matchers, :func:`~.promql_checks.absent_labels`);
* ``sum``, ``avg``, ``min``, ``max``, ``count``, ``stddev``, ``stdvar``, ``quantile`` (φ a
  number) and ``count_values`` with ``by``/``without``, ``topk`` and ``bottomk`` (``k`` a
  number);
* ``abs``, ``round`` (with or without ``to_nearest``), ``clamp``, ``clamp_min`` and
  ``clamp_max`` of a vector, their parameters numbers (:mod:`.promql_elementwise`);
* ``sort`` and ``sort_desc`` of a vector (:mod:`.promql_sort`), ``label_replace`` and
  ``label_join`` (:mod:`.promql_labels`; their errors are 422 ``execution`` as
  Prometheus', raised here before anything is read);
* ``+ - * / % ^`` and ``== != < > <= >=`` (with or without ``bool``) between any two of a
  vector and a scalar, ``and``/``or``/``unless`` between vectors, with ``on``/``ignoring``
  and ``group_left``/``group_right`` (:class:`Matching`), unary minus, parentheses.

Each selector is checked by :func:`~.selector.parse_selector` (the metric, the labels, RE2
regular expressions; :mod:`.promql_checks`). Anything else (another function or operator,
strings) is refused with :class:`SelectorError` naming it, as a
400 ``bad_data``. The tree's classes are :mod:`.promql_tree`'s, imported from there.
"""

from __future__ import annotations

import json
from datetime import timedelta

import promql_parser as pp

from dashboard.promapi.promql_checks import (
    absent_labels,
    regex_error,
    selector_of,
    shift_of,
    unsupported,
)
from dashboard.promapi.promql_elementwise import PARAMS
from dashboard.promapi.promql_functions import binary, compare
from dashboard.promapi.promql_labels import RELABEL, label_name, relabeller
from dashboard.promapi.promql_sort import SORTS
from dashboard.promapi.promql_tree import (
    AGGREGATIONS,
    ARITHMETIC,
    COMPARISONS,
    OVER_TIME,
    SET_OPERATORS,
    Absent,
    Aggregate,
    Bare,
    Binary,
    Elementwise,
    Expr,
    Matching,
    Node,
    Number,
    OverTime,
    Relabel,
    Sort,
    Subquery,
    Vector,
)
from dashboard.promapi.selector import (
    ALERTS,
    METRIC,
    Constant,
    Selector,
    SelectorError,
    check_length,
    parse_expr,
)

__all__ = ["MAX_DEPTH", "parse_promql"]

_CARDS = {
    "VectorMatchCardinality.OneToOne": "one-to-one",
    "VectorMatchCardinality.ManyToOne": "many-to-one",
    "VectorMatchCardinality.OneToMany": "one-to-many",
    "VectorMatchCardinality.ManyToMany": "many-to-many",
}
MAX_DEPTH = 64  # nesting, so that converting and evaluating never recurse deeply


def parse_promql(text: str) -> Selector | Constant | Expr:
    """A query's ``query``: a bare selector or constant as :func:`~.selector.parse_expr` reads
    it (its answers stay exactly as before), else the tree of a supported expression."""
    check_length(text)
    try:
        tree = pp.parse(text)
    except ValueError as exc:
        regex_error(text)  # RE2's message names the regex's problem better than Rust's
        raise SelectorError(str(exc)[:200], 0) from None
    except BaseException as exc:  # a Rust panic is pyo3's PanicException, a BaseException
        if not type(exc).__name__ == "PanicException":
            raise
        raise SelectorError(
            f"the PromQL parser failed on this query: {str(exc)[:120]}", 0
        ) from None
    if isinstance(tree, pp.VectorSelector):  # a bare selector, read as it always was
        if tree.offset is None and tree.at is None:
            return parse_expr(text)
        return Bare(selector_of(tree, f"{ALERTS} with offset or @"), shift_of(tree))
    node = _convert(tree, 0)
    if isinstance(node, Number):
        return Constant(node.value)
    return node


def _convert(tree: object, depth: int) -> Node:
    if depth > MAX_DEPTH:
        raise SelectorError(f"expressions nest at most {MAX_DEPTH} deep", 0)
    if isinstance(tree, pp.ParenExpr):
        return _convert(tree.expr, depth + 1)
    if isinstance(tree, pp.NumberLiteral):
        return Number(float(tree.val))
    if isinstance(tree, pp.UnaryExpr):  # -x, which drops the metric name as x * -1 does
        inner = _convert(tree.expr, depth + 1)
        return (
            Number(-inner.value) if isinstance(inner, Number) else Binary("*", inner, Number(-1.0))
        )
    if isinstance(tree, pp.VectorSelector):
        return Vector(selector_of(tree), shift_of(tree))
    if isinstance(tree, pp.Call):
        return _call(tree, depth)
    if isinstance(tree, pp.AggregateExpr):
        return _aggregate(tree, depth)
    if isinstance(tree, pp.BinaryExpr):
        return _binary(tree, depth)
    if isinstance(tree, pp.MatrixSelector):
        raise unsupported("a range selector outside *_over_time()")
    if isinstance(tree, pp.SubqueryExpr):
        raise unsupported("a subquery outside *_over_time()")
    if isinstance(tree, pp.StringLiteral):
        raise unsupported("a string")
    raise unsupported(type(tree).__name__)


def _call(call: pp.Call, depth: int) -> Node:
    name = call.func.name
    if name in PARAMS:
        return _elementwise(call, depth)
    if name in SORTS:  # the parser has checked its one argument is a vector
        expr = _convert(call.args[0], depth + 1)
        return Sort(expr, desc=name == "sort_desc")
    if name in RELABEL:
        return _relabel(call, depth)
    if name == "absent":  # the parser has checked its one argument is a vector
        return Absent(_convert(call.args[0], depth + 1), absent_labels(call.args[0]))
    if name == "absent_over_time":  # ... and this one's a range
        arg = call.args[0]
        return Absent(_over_time("count", name, arg, None, depth), absent_labels(arg))
    fn = name.removesuffix("_over_time")
    if fn == name or fn not in OVER_TIME:
        raise unsupported(f"the function {name}()")
    *params, arg = call.args
    param = _number(params[0], name, depth) if params else None
    return _over_time(fn, name, arg, param, depth)


def _over_time(fn: str, name: str, arg: object, param: float | None, depth: int) -> OverTime:
    if isinstance(arg, pp.SubqueryExpr):  # the parser has checked it is of a vector
        step_ms = 0 if arg.step is None else arg.step // timedelta(milliseconds=1)
        sub = Subquery(_convert(arg.expr, depth + 1), step_ms)
        range_ms = (arg.range or timedelta()) // timedelta(milliseconds=1)  # never None
        return OverTime(fn, sub, range_ms, param, shift_of(arg))
    if not isinstance(arg, pp.MatrixSelector):
        raise unsupported(f"{name}() of anything but a range selector such as {METRIC}{{...}}[5m]")
    vs = arg.vector_selector
    range_ms = round(arg.range.total_seconds() * 1000)
    return OverTime(fn, selector_of(vs), range_ms, param, shift_of(vs))


def _elementwise(call: pp.Call, depth: int) -> Node:
    name = call.func.name
    required, optional = PARAMS[name]
    arg, *rest = call.args
    if not required <= len(rest) <= required + optional:  # promql-parser checks it too
        raise SelectorError(
            f"{name}() takes {1 + required} to {1 + required + optional} arguments", 0
        )
    expr = _convert(arg, depth + 1)
    if isinstance(expr, Number):
        raise unsupported(f"{name}() of a scalar")
    params = tuple(_number(p, name, depth) for p in rest)
    return Elementwise(name, expr, params)


def _relabel(call: pp.Call, depth: int) -> Node:
    """The parser has checked the argument types: a vector, then strings."""
    name = call.func.name
    arg, *rest = call.args
    for i, a in enumerate(rest):
        while isinstance(a, pp.ParenExpr):  # ("dst"), as Prometheus' stringFromArg unwraps
            a = a.expr
        rest[i] = a
    args = tuple(str(a.val) for a in rest if isinstance(a, pp.StringLiteral))
    if len(args) != len(rest):
        raise unsupported(f"{name}() with an argument that is not a string literal")
    relabeller(name, args)  # Prometheus' errors (regex, label names) before any read: 422
    return Relabel(name, _convert(arg, depth + 1), args)


def _aggregate(agg: pp.AggregateExpr, depth: int) -> Node:
    op = str(agg.op)
    if op not in AGGREGATIONS:
        raise unsupported(f"the aggregation {op}")
    mod = agg.modifier
    labels = tuple(mod.labels) if mod is not None else ()
    without = mod is not None and mod.type == pp.AggModifierType.Without
    value_label = ""
    if op == "count_values":  # the parser has checked that its parameter is a string
        value_label = str(agg.param.val) if isinstance(agg.param, pp.StringLiteral) else ""
        if not label_name(value_label):
            raise SelectorError(f"invalid label name {json.dumps(value_label)}", 0)
        param = None
    else:
        param = _number(agg.param, op, depth) if agg.param is not None else None
    expr = _convert(agg.expr, depth + 1)
    if isinstance(expr, Number):
        raise unsupported(f"{op}() of a scalar")
    return Aggregate(op, expr, labels, without, mod is not None, param, value_label)


def _binary(b: pp.BinaryExpr, depth: int) -> Node:
    op = str(b.op)
    if op not in ARITHMETIC + COMPARISONS + SET_OPERATORS:
        raise unsupported(f"the operator {op}")
    mod = b.modifier
    lhs, rhs = _convert(b.lhs, depth + 1), _convert(b.rhs, depth + 1)
    bool_ = bool(mod is not None and mod.return_bool)
    if not isinstance(lhs, Number) and not isinstance(rhs, Number):  # the parser checked
        return Binary(op, lhs, rhs, bool_, _matching(op, mod))  # on() etc. need two vectors
    if isinstance(lhs, Number) and isinstance(rhs, Number):  # the parser needs bool here
        if op in ARITHMETIC:
            return Number(binary(op, lhs.value, rhs.value))
        return Number(float(compare(op, lhs.value, rhs.value)))
    return Binary(op, lhs, rhs, bool_)


def _matching(op: str, mod: pp.BinModifier | None) -> Matching:
    if mod is None:
        return Matching(card="many-to-many" if op in SET_OPERATORS else "one-to-one")
    on = mod.matching is not None and mod.matching.type == pp.LabelModifierType.Include
    labels = tuple(mod.matching.labels) if mod.matching is not None else ()
    card = _CARDS[str(mod.card)]
    if op in SET_OPERATORS:
        card = "many-to-many"
    return Matching(on, labels, card, tuple(mod.group_labels or ()))


def _number(tree: object, name: str, depth: int) -> float:
    node = _convert(tree, depth + 1)
    if not isinstance(node, Number):
        raise unsupported(f"{name}() with a parameter that is not a number")
    return node.value
