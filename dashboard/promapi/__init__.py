"""A Prometheus-compatible read API over stored query results, enough for Grafana's Prometheus
data source: ``/api/v1/query``, ``query_range``, ``series``, ``labels``,
``label/<name>/values`` and ``status/buildinfo`` on the dashboard's server, behind the
dashboard's auth. Each function of each stored query is one series
``apm_query{id, fn, metric, window}`` (of a ``BY server`` query, one per server, labelled
``server`` too), each pending or firing alert one ``ALERTS`` series;
the selectors, the PromQL evaluated, the step model, the limits and the errors are in
docs/interop.md ("Prometheus read API out").

Modules: :mod:`~dashboard.promapi.selector` (the PromQL subset; :mod:`.scan` and the RE2-backed
:mod:`.regex`), :mod:`.params` (times, durations, steps), :mod:`.evaluate` and :mod:`.run`
(series and points from stored windows, the reads planned by :mod:`.plan`), the PromQL beyond a
selector (:mod:`.promql_parse` over promql-parser into :mod:`.promql_tree`, its selectors and
refusals in :mod:`.promql_checks`, :mod:`.promql_eval`
at each step with :mod:`.promql_functions`,
:mod:`.promql_shift` (``offset``, ``@``), :mod:`.promql_elementwise` (abs, round, clamp*),
:mod:`.promql_sort` (sort, sort_desc), :mod:`.promql_labels` (label_replace, label_join),
:mod:`.promql_aggregate`, :mod:`.promql_match`
(operators between vectors) and :mod:`.promql_rows`, :mod:`.promql_run` from storage within the
limits; both evaluators read through one :mod:`.store`), :mod:`.shape` (the JSON),
:mod:`.access` (auth), :mod:`.routes` (the blueprint and its handlers, over :mod:`.deps`, with
:mod:`.hooks`' auth, counting and errors), :mod:`.alerts` (the ``ALERTS`` series of the alert
evaluator's state) with :mod:`.alert_range` (over a range, read from the alert history) and
:mod:`.alert_steps` (its step mapping), :mod:`.budget` (the samples budget of one query and
Prometheus' error past it), :mod:`.settings` and :mod:`.telemetry`.
The per-server series of a ``BY server`` query are read by :mod:`.server_reads`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from flask import Blueprint

from dashboard.promapi.access import Access
from dashboard.promapi.routes import build_promapi
from dashboard.promapi.settings import PromApiSettings
from dashboard.promapi.store import PromRepository

if TYPE_CHECKING:
    from dashboard.context import AppContext
    from dashboard.sessions import SignedSessions
    from dashboard.signin import Tokens, Users
    from dashboard.throttle import LoginThrottle

__all__ = ["PREFIX", "Access", "PromApiSettings", "blueprint", "build_promapi"]

PREFIX = "/api/v1/"  # the paths it serves (its blueprint checks the credentials itself)


def blueprint(
    ctx: AppContext,
    sessions: SignedSessions,
    throttle: LoginThrottle,
    users: Users | None = None,
    tokens: Tokens | None = None,
    limits: PromApiSettings | None = None,
) -> Blueprint:
    """The read API over ``ctx``'s repository, with the dashboard's credentials (``sessions``
    and the login ``throttle`` are the ones the login page uses)."""
    limits = limits or PromApiSettings()
    access = Access(
        ctx.settings,
        sessions,
        throttle,
        ctx.metrics,
        limits.basic_cache_seconds,
        users=users,
        tokens=tokens,
    )
    # storage.repository.Repository has the per-server reads; dashboard.ports lists only
    # what the rest of the dashboard uses.
    repo = cast(PromRepository, ctx.repo)
    return build_promapi(repo, ctx.settings, limits, ctx.metrics, access, ctx.clock)
