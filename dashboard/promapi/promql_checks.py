"""What the parts of an expression must be (:mod:`.promql_parse`): each selector, converted
from ``promql-parser``'s, is checked as a bare selector is (:func:`~.selector.parse_selector`:
the metric, the labels, RE2 regular expressions) and may not be ``ALERTS``, nor carry
``offset`` or ``@``; anything not evaluated is refused with one message naming it, a 400
``bad_data`` (:func:`unsupported`)."""

from __future__ import annotations

import json

import promql_parser as pp

from dashboard.promapi.selector import (
    ALERTS,
    METRIC,
    Selector,
    SelectorError,
    parse_expr,
    parse_selector,
)

__all__ = ["regex_error", "selector_of", "unsupported"]

_OPS = {"MatchOp.Equal": "=", "MatchOp.NotEqual": "!=", "MatchOp.Re": "=~", "MatchOp.NotRe": "!~"}


def selector_of(vs: pp.VectorSelector) -> Selector:
    """``vs`` as the read API's selector, checked as a bare one is."""
    if vs.offset is not None:
        raise unsupported("offset")
    if vs.at is not None:
        raise unsupported("the @ modifier")
    if vs.matchers.or_matchers:
        raise unsupported("'or' inside a selector")
    parts = [f"{m.name}{_OPS[str(m.op)]}{json.dumps(m.value)}" for m in vs.matchers.matchers]
    selector = parse_selector(f"{vs.name or ''}{{{', '.join(parts)}}}")
    if not selector.may_name(METRIC):
        raise unsupported(f"{ALERTS} inside functions and operators ({ALERTS} is a bare selector)")
    return selector


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
        f"{what} is not supported; the read API evaluates selectors, *_over_time(), "
        "aggregations (not group), abs, round, clamp*, sort*, label_* and operators but atan2 "
        "(docs/interop.md)",
        0,
    )
