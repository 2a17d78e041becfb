"""The PromQL subset the read API evaluates: one selector over stored query results, or a
constant (so that Grafana's health check ``1+1`` passes)::

    apm_query{id="<query id>", fn="p99"}
    apm_query{metric=~"cpu\\..*", window!="1m"}
    {__name__="apm_query", fn=~"p9.*"}
    ALERTS{alertstate="firing", severity="critical"}
    1+1

A selector names the metric ``apm_query`` or ``ALERTS`` (or none, then ``__name__`` may be
matched) and matchers ``label op "value"`` with ``=``, ``!=``, ``=~``, ``!~`` on the labels of
:data:`LABELS` (``ALERTS``: :data:`ALERT_LABELS` and any rule label); strings are double-,
single- or back-quoted, with Go's escapes. Like Prometheus, a selector needs at least one
matcher that does not match the empty string. Other metric names or labels are refused with
:class:`SelectorError` and its position; functions and operators are
:mod:`dashboard.promapi.promql_parse`'s (this parser refuses them in ``match[]``).

Parsing is one left-to-right scan, linear in the text, which is capped at
:data:`MAX_EXPR_CHARS` characters and :data:`MAX_MATCHERS` matchers; regular expressions
compile through :mod:`dashboard.promapi.regex` (RE2, which never backtracks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from dashboard.promapi.regex import Regex, RegexError, compile_regex
from dashboard.promapi.scan import Scanner, SelectorError

__all__ = [
    "ALERTS",
    "ALERT_LABELS",
    "LABELS",
    "MAX_EXPR_CHARS",
    "MAX_MATCHERS",
    "METRIC",
    "Constant",
    "Matcher",
    "Selector",
    "SelectorError",
    "check_length",
    "divide",
    "parse_expr",
    "parse_selector",
]

METRIC = "apm_query"
# The labels of every series: the stored query's id, the function's result key (min, p99,
# p99.9), the query's metric and its window (10s, 1m); __name__ is always apm_query. A
# ``BY server`` query's series also carry the server they are of (a plain query's have none).
LABELS = ("__name__", "fn", "id", "metric", "window", "server")
# Prometheus' ALERTS series: 1 for each alert pending or firing now (dashboard.promapi.alerts).
ALERTS = "ALERTS"
ALERT_LABELS = ("__name__", "alertname", "alertstate", "severity", "rule_id", "server")
MAX_EXPR_CHARS = 16_384  # Grafana's multi-value variables make long alternations of ids
MAX_MATCHERS = 32
_OPS = ("=~", "!~", "!=", "=")
_EITHER = tuple(dict.fromkeys(LABELS + ALERT_LABELS[1:]))  # either metric's labels, once each
_MAX_SEEN = 10_000


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str  # =, !=, =~, !~
    value: str
    regex: Regex | None = field(default=None, compare=False)
    # Values already matched by the regex (the same metric, fn or window recurs across
    # series); bounded, so one request's memory stays bounded.
    _seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def matches(self, value: str) -> bool:
        if self.op == "=":
            return value == self.value
        if self.op == "!=":
            return value != self.value
        assert self.regex is not None
        found = self._seen.get(value)
        if found is None:
            found = self.regex.matches(value)
            if len(self._seen) < _MAX_SEEN:
                self._seen[value] = found
        return found if self.op == "=~" else not found


@dataclass(frozen=True)
class Selector:
    matchers: tuple[Matcher, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels.get(m.label, "")) for m in self.matchers)

    def may_name(self, metric: str) -> bool:
        """Whether series named ``metric`` may match (its ``__name__`` matchers allow it)."""
        return all(m.matches(metric) for m in self.matchers if m.label == "__name__")


@dataclass(frozen=True)
class Constant:
    value: float


def parse_expr(text: str) -> Selector | Constant:
    """A query's ``query`` parameter: a selector or constant arithmetic."""
    check_length(text)
    # A selector starts with a name or '{'; a constant with a digit, a point or a sign.
    if text.lstrip()[:1] in tuple("0123456789.+-"):
        return Constant(_Arithmetic(Scanner(text)).parse())
    return parse_selector(text)


def parse_selector(text: str) -> Selector:
    """A selector (``match[]`` of the series and label endpoints, or a query)."""
    check_length(text)
    s = Scanner(text)
    matchers: list[Matcher] = []
    s.skip_space()
    name_at = s.i
    name = s.identifier()
    if name:
        s.skip_space()
        if s.peek() == "(":
            raise _unsupported(name_at, f"functions such as {name[:60]}() are not supported")
        if name not in (METRIC, ALERTS):
            raise _unsupported(
                name_at, f"unknown metric {name[:60]!r}; the metrics are {METRIC} and {ALERTS}"
            )
        matchers.append(Matcher("__name__", "=", name))
        s.skip_space()
    if s.peek() == "{":
        s.i += 1
        # Unnamed, a selector may match either metric's labels.
        # ALERTS carries its rules' own labels too, whatever their names.
        known = {METRIC: LABELS, ALERTS: None}.get(name, _EITHER)
        matchers += _matchers(s, named=bool(name), known=known)
    elif not name:
        raise _unsupported(s.i, 'expected a selector such as apm_query{id="..."}')
    s.skip_space()
    if s.peek():
        raise _unsupported(s.i, f"unexpected {s.peek()!r} after the selector")
    if not any(not m.matches("") for m in matchers):
        raise SelectorError("vector selector must contain at least one non-empty matcher", 0)
    return Selector(tuple(matchers))


def _matchers(s: Scanner, named: bool, known: tuple[str, ...] | None) -> list[Matcher]:
    """The matchers up to ``}``, on the labels ``known`` (None: any label name)."""
    out: list[Matcher] = []
    while True:
        s.skip_space()
        if s.peek() == "}":
            s.i += 1
            return out
        if len(out) == MAX_MATCHERS:
            raise SelectorError(f"at most {MAX_MATCHERS} matchers", s.i)
        at = s.i
        label = s.identifier()
        if not label or ":" in label:
            raise _unsupported(at, "expected a label name")
        if known is not None and label not in known:
            raise SelectorError(
                f"unknown label {label[:60]!r}; the labels are {', '.join(known)}"
                + (" (stored queries have no names)" if label == "name" else ""),
                at,
            )
        if label == "__name__" and named:
            raise SelectorError("metric name must not be set twice", at)
        s.skip_space()
        op = next((o for o in _OPS if s.text.startswith(o, s.i)), None)
        if op is None:
            raise _unsupported(s.i, "expected one of =, !=, =~, !~")
        s.i += len(op)
        s.skip_space()
        value_at = s.i
        value = s.string()
        regex = None
        if op in ("=~", "!~"):
            try:
                regex = compile_regex(value)
            except RegexError as exc:
                raise SelectorError(f"invalid regular expression: {exc}", value_at) from None
        out.append(Matcher(label, op, value, regex))
        s.skip_space()
        if s.peek() == ",":
            s.i += 1
        elif s.peek() != "}":
            raise _unsupported(s.i, "expected ',' or '}'")


class _Arithmetic:
    """number ((+|-|*|/) number)* with the usual precedence and unary signs, in IEEE floats
    (x/0 is ±Inf or NaN, as in PromQL)."""

    def __init__(self, s: Scanner) -> None:
        self.s = s

    def parse(self) -> float:
        value = self.sum()
        self.s.skip_space()
        if self.s.peek():
            raise _unsupported(self.s.i, f"unexpected {self.s.peek()!r}")
        return value

    def sum(self) -> float:
        value = self.product()
        while (op := self.s.op("+-")) is not None:
            right = self.product()
            value = value + right if op == "+" else value - right
        return value

    def product(self) -> float:
        value = self.unary()
        while (op := self.s.op("*/")) is not None:
            right = self.unary()
            value = value * right if op == "*" else divide(value, right)
        return value

    def unary(self) -> float:
        sign = 1.0
        while (op := self.s.op("+-")) is not None:
            sign = -sign if op == "-" else sign
        return sign * self.s.number()


def divide(a: float, b: float) -> float:
    """a / b as Go (and so Prometheus) divides floats: x/0 is +-Inf, 0/0 and NaN/0 are NaN."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def check_length(text: str) -> None:
    if len(text) > MAX_EXPR_CHARS:
        raise SelectorError(f"a query is at most {MAX_EXPR_CHARS} characters", MAX_EXPR_CHARS)


def _unsupported(at: int, message: str) -> SelectorError:
    return SelectorError(
        f'{message}; the read API\'s selectors are {METRIC}{{label op "value", ...}} and '
        f"{ALERTS}{{...}} (docs/interop.md, docs/alerting.md)",
        at,
    )
