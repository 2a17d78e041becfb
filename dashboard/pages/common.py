"""Pieces every page uses: the navigation bar with its CSRF-safe logout form and who is signed
in, the class of the controls that write, and formatting."""

from __future__ import annotations

from typing import Any

from dash import dcc, html
from flask import g, has_request_context, session

from apm.query_state import format_age, format_time
from dashboard.roles import ADMIN, VIEWER

__all__ = [
    "WRITES",
    "ago",
    "banner",
    "labelled",
    "may_write",
    "navbar",
    "role_class",
    "state_badge",
    "when",
]

# The class of every control and form that changes something (create, edit, delete, share,
# silence): dashboard/assets/style.css hides them under .role-viewer. Hiding is for the eye
# only; dashboard.permits refuses the write itself, whatever the page shows.
WRITES = "writes"


def _signed_in() -> tuple[str, str]:
    """The request's user and role (dashboard.auth sets them); outside a request, as when a
    test or the benchmark builds a layout, an admin's view."""
    if not has_request_context():
        return "", ADMIN
    return str(g.get("apm_user") or ""), str(g.get("apm_role") or ADMIN)


def _who() -> str:
    user, role = _signed_in()
    return f"{user} ({role})" if user else ""


def role_class() -> str:
    """The class of the page's root: ``role-viewer``, ``role-editor`` or ``role-admin``."""
    return f"role-{_signed_in()[1]}"


def may_write() -> bool:
    """Whether the request's role may change things (an editor or an admin): what a page
    offers in its words, as ``role_class`` does in its controls."""
    return _signed_in()[1] != VIEWER


def navbar(active: str) -> html.Div:
    csrf = session.get("csrf", "") if has_request_context() else ""
    links = [
        ("Queries", "/"),
        ("Charts", "/chart"),
        ("Dashboards", "/dashboards"),
        ("Alerts", "/alerts"),
        ("Health", "/health"),
    ]
    if _signed_in()[1] == ADMIN:
        links.append(("Users", "/users"))
    return html.Div(
        className="nav",
        children=[
            html.Span("APM", className="brand"),
            *[
                dcc.Link(
                    label,
                    href=href,
                    id=f"nav-{label.lower()}",
                    className="active" if label.lower() == active else "",
                )
                for label, href in links
            ],
            html.Span(_who(), id="signed-in"),
            html.Form(
                method="POST",
                action="/logout",
                className="logout",
                children=[
                    dcc.Input(type="hidden", name="csrf_token", value=csrf),
                    html.Button("Log out", id="logout", type="submit"),
                ],
            ),
        ],
    )


def when(ts: float | None) -> str:
    return "never" if ts is None else format_time(ts)


def ago(seconds: float | None) -> str:
    return "unknown" if seconds is None else format_age(seconds)


def banner(message: str | None) -> html.Div:
    return html.Div(message or "", className="banner" if message else "banner hidden")


def state_badge(state: str) -> html.Span:
    """A query's state (apm.query_state.STATES) as a badge; dashboard/assets/style.css colours
    each state's class."""
    return html.Span(state, className=f"badge state-{state}")


def labelled(label: str, control: Any) -> html.Div:
    """A form field: its label above its control."""
    return html.Div(className="field", children=[html.Label(label), control])
