"""What the read API's handlers depend on, resolved per request: the :class:`PromApi` that
:func:`~dashboard.promapi.routes.build_promapi` binds to the app when its blueprint is
registered, and the request's parsed parameters (``query``, ``match[]``, ``timeout``,
``lookback_delta``, the ``start``/``end`` span), each with Prometheus' checks and messages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from flask import current_app, request

from dashboard.promapi.access import Access
from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.params import ParamError, parse_duration, parse_span
from dashboard.promapi.promql_eval import LOOKBACK_MS
from dashboard.promapi.promql_parse import parse_promql
from dashboard.promapi.promql_tree import Expr
from dashboard.promapi.run import Evaluator
from dashboard.promapi.selector import Constant, Selector, parse_selector
from dashboard.promapi.settings import PromApiSettings
from dashboard.promapi.telemetry import PromApiTelemetry

__all__ = [
    "EXTENSION",
    "MAX_MATCH",
    "PromApi",
    "deadline",
    "expression",
    "lookback",
    "matches",
    "ms",
    "promapi",
    "recent",
    "span",
]

EXTENSION = "apm.promapi"  # the key of the app's PromApi in ``app.extensions``
MAX_MATCH = 64  # match[] parameters in one request
RECENT_MS = 86_400_000  # the span of the series and label endpoints asked without one


@dataclass(frozen=True)
class PromApi:
    evaluator: Evaluator
    limits: PromApiSettings
    access: Access
    counters: PromApiTelemetry
    max_body_bytes: int
    clock: Callable[[], float]  # the default ``time`` of an instant query
    monotonic: Callable[[], float]  # times deadlines


def promapi() -> PromApi:
    """The read API of the app serving this request."""
    return cast(PromApi, current_app.extensions[EXTENSION])


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def deadline() -> Deadline:
    """The evaluation's deadline: the limit, or a smaller ``timeout`` parameter."""
    api = promapi()
    wanted = api.limits.timeout_seconds
    if raw := request.values.get("timeout"):
        wanted = min(wanted, parse_duration(raw, "timeout"))
    return Deadline(api.monotonic() + max(0.0, wanted), api.monotonic)


def lookback() -> int:
    """The look-back of instant selectors inside an expression, in ms: ``lookback_delta``
    (as Prometheus 3 takes it; zero or less, or none: Prometheus' default, 5 minutes)."""
    raw = request.values.get("lookback_delta")
    if raw is None or not raw.strip():
        return LOOKBACK_MS
    seconds = parse_duration(raw, "lookback_delta")
    return round(seconds * 1000) if seconds * 1000 >= 1 else LOOKBACK_MS


def expression() -> Selector | Constant | Expr:
    raw = request.values.get("query")
    if raw is None or not raw.strip():
        raise ParamError('invalid parameter "query": missing')
    return parse_promql(raw)


def matches(required: bool, limit: Deadline) -> list[Selector]:
    raw = request.values.getlist("match[]")
    if required and not raw:
        raise ParamError("no match[] parameter provided")
    if len(raw) > MAX_MATCH:
        raise ParamError(f"at most {MAX_MATCH} match[] parameters")
    out = []
    for m in raw:
        # Compiling a selector's regexes may take RE2 tens of ms (32 matchers of up to
        # 10,000 instructions each): 64 of them count against the deadline.
        out.append(parse_selector(m))
        limit.check()
    return out


def span() -> tuple[int, int] | None:
    """``start`` and ``end`` of the series and label endpoints (unix ms), or None. Every
    stored plain query's series is listed whatever its windows in the span, a ``BY server``
    query's for the servers with results in it (:func:`recent` without one); ALERTS series
    are those on at some time in it, or now without one (docs/interop.md)."""
    return parse_span(request.values.get("start"), request.values.get("end"), promapi().clock())


def recent() -> tuple[int, int]:
    """The span whose servers a ``BY server`` query's series are listed for when the series
    and label endpoints are asked without one: the last day (unix ms)."""
    now = ms(promapi().clock())
    return now - RECENT_MS, now
