"""The health page's "Agents" card: which agent versions the fleet runs (from
dashboard.agents), a count per version, and each server's version, oldest versions first so
that the hosts an upgrade missed are on top."""

from __future__ import annotations

from collections import Counter

from dash import html

from dashboard.agents import AgentSeen
from dashboard.pages.common import ago, when

__all__ = ["agents_card"]

_ROWS = 200  # a 10,000-server fleet must not make a 10,000-row page


def _order(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in version.split("."))
    except ValueError:  # "unknown (...)": first, it needs a look
        return (-1,)


def agents_card(
    seen: dict[str, AgentSeen] | None, problem: str | None, now: float, lookback_s: float
) -> html.Div:
    hint = html.Div(
        f"Read from the agent.version samples of the last {lookback_s:g} s: every agent sends "
        "its version with each snapshot. A server that runs no apm agent (another StatsD, "
        "OTLP or remote_write sender) or has stopped sending is not listed here; the Servers "
        "card lists the silent ones. Packaged agents send the .deb's version.",
        className="hint",
    )
    if problem is not None or not seen:
        message = (
            html.Div(f"Agent versions unavailable: {problem}", id="h-agents-error")
            if problem is not None
            else html.Div("No agent reported a version in that time.", id="h-agents-none")
        )
        return html.Div(className="card", children=[html.H3("Agents"), message, hint])
    per_version = Counter(s.version for s in seen.values())
    versions = sorted(per_version, key=_order)
    rows = sorted(seen.items(), key=lambda kv: (_order(kv[1].version), kv[0]))
    shown, more = rows[:_ROWS], len(rows) - _ROWS
    return html.Div(
        className="card",
        children=[
            html.H3(
                f"Agents: {len(seen)} reporting, {len(per_version)} version"
                f"{'' if len(per_version) == 1 else 's'}",
                id="h-agents-count",
            ),
            html.Table(
                id="h-agent-versions",
                children=[
                    html.Tr([html.Th("version"), html.Th("servers")]),
                    *[html.Tr([html.Td(v), html.Td(f"{per_version[v]:,}")]) for v in versions],
                ],
            ),
            html.Table(
                id="h-agents",
                children=[
                    html.Tr([html.Th("server"), html.Th("version"), html.Th("reported")]),
                    *[
                        html.Tr(
                            [
                                html.Td(server),
                                html.Td(s.version),
                                html.Td(f"{when(s.ts)} ({ago(now - s.ts)})"),
                            ]
                        )
                        for server, s in shown
                    ],
                    *([html.Tr(html.Td(f"... and {more} more", colSpan=3))] if more > 0 else []),
                ],
            ),
            hint,
        ],
    )
