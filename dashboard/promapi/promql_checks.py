"""What the parts of an expression must be (:mod:`.promql_parse`): each selector, converted
from ``promql-parser``'s, is checked as a bare selector is (:func:`~.selector.parse_selector`:
the metric, the labels, RE2 regular expressions) and may not be ``ALERTS``; its ``offset`` and
``@`` are read by :func:`shift_of`, which refuses what Prometheus refuses (an ``@`` time
past its int64 milliseconds) and what the binding cannot give exactly (a time before 1970);
``absent``'s labels are a selector's (:func:`absent_labels`); anything not evaluated is
refused with one message naming it, a 400 ``bad_data`` (:func:`unsupported`)."""

from __future__ import annotations

import json
from datetime import timedelta

import promql_parser as pp

from dashboard.promapi.promql_tree import NO_SHIFT, Shift
from dashboard.promapi.selector import (
    ALERTS,
    METRIC,
    Selector,
    SelectorError,
    parse_expr,
    parse_selector,
)

__all__ = ["absent_labels", "regex_error", "selector_of", "shift_of", "unsupported"]

_MAX_AT_MS = 2**63 - 1  # Prometheus keeps times as int64 milliseconds
_OPS = {"MatchOp.Equal": "=", "MatchOp.NotEqual": "!=", "MatchOp.Re": "=~", "MatchOp.NotRe": "!~"}


_INSIDE = f"{ALERTS} inside functions and operators ({ALERTS} is a bare selector)"


def selector_of(vs: pp.VectorSelector, alerts: str = _INSIDE) -> Selector:
    """``vs`` as the read API's selector, checked as a bare one is (its ``offset`` and ``@``
    aside: :func:`shift_of`)."""
    if vs.matchers.or_matchers:
        raise unsupported("'or' inside a selector")
    parts = [f"{m.name}{_OPS[str(m.op)]}{json.dumps(m.value)}" for m in vs.matchers.matchers]
    selector = parse_selector(f"{vs.name or ''}{{{', '.join(parts)}}}")
    if not selector.may_name(METRIC):
        raise unsupported(alerts)
    return selector


def shift_of(node: pp.VectorSelector | pp.SubqueryExpr) -> Shift:
    """``node``'s ``offset`` and ``@``."""
    if node.offset is None and node.at is None:
        return NO_SHIFT
    offset_ms = 0 if node.offset is None else node.offset // timedelta(milliseconds=1)
    at: int | str | None = None
    if node.at is not None:
        kind = str(node.at.type)
        at = {"AtModifierType.Start": "start", "AtModifierType.End": "end"}.get(kind)
        if at is None:
            at = _at_ms(node.at)
    return Shift(offset_ms, at)


def _at_ms(at: pp.AtModifier) -> int:
    # The binding's str() is "@ <seconds to 3 decimals>" (its datetime overflows past year
    # 9999), its int64 clamped at u64's largest, and a time before 1970 "@ 0.000".
    ms = round(float(str(at).removeprefix("@ ")) * 1000)
    if ms > _MAX_AT_MS:
        raise SelectorError(f"timestamp out of bounds for @ modifier: {str(at)[2:]}", 0)
    if ms == 0:
        try:
            at.at  # noqa: B018  (the binding panics reading a time before 1970)
        except BaseException as exc:
            if type(exc).__name__ != "PanicException":
                raise
            raise unsupported("an @ time before 1970") from None
    return ms


def absent_labels(arg: object) -> tuple[tuple[str, str], ...]:
    """The labels ``absent(arg)`` answers with, as Prometheus 2.42's
    ``createLabelsForAbsentFunction``: of a selector (a range selector's too; not in
    parentheses), the ``=`` matchers' labels and values, the first of each name, less any name
    that another matcher also names, and less ``__name__``; of anything else none."""
    vs = arg.vector_selector if isinstance(arg, pp.MatrixSelector) else arg
    if not isinstance(vs, pp.VectorSelector):
        return ()
    out: dict[str, str] = {}
    others: list[str] = []
    for m in vs.matchers.matchers:
        if m.name == "__name__":
            continue
        if str(m.op) == "MatchOp.Equal" and not out.get(m.name):  # "" is no label yet
            out[m.name] = m.value
        else:
            others.append(m.name)
    for name in others:
        out.pop(name, None)
    return tuple(sorted((k, v) for k, v in out.items() if v))  # an empty value is no label


def regex_error(text: str) -> None:
    """Raises the selector's regex error in ``text``, if any: RE2's message names the
    problem better than the Rust parser's."""
    try:
        parse_expr(text)
    except SelectorError as exc:
        if "regular expression" in exc.detail:
            raise
    return


def unsupported(what: str) -> SelectorError:
    """The one refusal of anything not evaluated, naming ``what``."""
    return SelectorError(
        f"{what} is not supported; the read API evaluates selectors (with offset and @), "
        "*_over_time() (of subqueries too), aggregations (not group), abs, round, clamp*, "
        "sort*, label_*, absent* and operators but atan2 (docs/interop.md)",
        0,
    )
