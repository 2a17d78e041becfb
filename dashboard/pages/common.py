"""Pieces every page uses: the navigation bar with its CSRF-safe logout form, and formatting."""

from __future__ import annotations

from typing import Any

from dash import dcc, html
from flask import has_request_context, session

from apm.query_state import format_age, format_time

__all__ = ["ago", "banner", "labelled", "navbar", "state_badge", "when"]


def navbar(active: str) -> html.Div:
    csrf = session.get("csrf", "") if has_request_context() else ""
    links = [
        ("Queries", "/"),
        ("Charts", "/chart"),
        ("Dashboards", "/dashboards"),
        ("Alerts", "/alerts"),
        ("Health", "/health"),
    ]
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
