"""The users page, for admins: every user with its role, state and how it signs in, and every
API token with its user, role, expiry and last use. An admin sets a user's role, disables or
enables it, and revokes a token here, as ``apm user`` and ``apm token`` do, through the same
directories (:mod:`dashboard.users`, :mod:`dashboard.api_tokens`) and their checks.

Both callbacks, the listing included, are ``admin`` in :mod:`dashboard.roles`: a lower role's
forged call is a 403 from :mod:`dashboard.permits`, and its /users page only says who may use
it. Creating users and tokens stays with ``apm user add`` and ``apm token create`` (a
password and a token's secret are not for a web form's history)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dash import Dash, Input, Output, State, ctx, dcc, html
from flask import g

from dashboard.api_tokens import TokenDirectory
from dashboard.guard import StorageUnavailable
from dashboard.pages.common import labelled, navbar, when
from dashboard.roles import ADMIN, ROLES, VIEWER
from dashboard.users import NO_PASSWORD, UserDirectory, UserError

__all__ = ["layout", "register"]

Users = Callable[[], UserDirectory | None]
Tokens = Callable[[], TokenDirectory | None]

_OK, _ERROR = "banner ok", "banner"


def layout() -> html.Div:
    if g.get("apm_role", ADMIN) != ADMIN:
        return html.Div(
            [
                navbar("users"),
                html.P(
                    "Managing users and tokens is for admins (an admin can: apm user set-role).",
                    id="pe-admins-only",
                ),
            ]
        )
    return html.Div(
        [
            navbar("users"),
            html.Div(
                id="pe-form",
                className="form",
                children=[
                    labelled("User", dcc.Input(id="pe-user", type="text", maxLength=64)),
                    labelled(
                        "Role", dcc.RadioItems(list(ROLES), VIEWER, id="pe-role", inline=True)
                    ),
                    html.Button("Set role", id="pe-set-role"),
                    html.Button("Disable", id="pe-disable"),
                    html.Button("Enable", id="pe-enable"),
                    labelled("Token id", dcc.Input(id="pe-token", type="text", maxLength=16)),
                    html.Button("Revoke token", id="pe-revoke"),
                ],
            ),
            html.Div(id="pe-message", className="banner hidden"),
            html.Div(id="pe-body"),
        ]
    )


def _users_table(directory: UserDirectory) -> html.Table:
    head = html.Tr([html.Th(h) for h in ("user", "role", "state", "signs in with", "changed")])
    rows = [
        html.Tr(
            [
                html.Td(u.name),
                html.Td(u.role),
                html.Td("disabled" if u.disabled else "enabled"),
                html.Td("the auth proxy" if u.password_hash == NO_PASSWORD else "a password"),
                html.Td(when(u.updated_at)),
            ],
            id=f"pe-user-{u.name}",
        )
        for u in directory.list()
    ]
    return html.Table([head, *rows], id="pe-users")


def _token_state(t: Any, now: float) -> str:
    if t.revoked_at is not None:
        return "revoked"
    if t.expires_at is not None and t.expires_at <= now:
        return "expired"
    return "active"


def _tokens_table(tokens: TokenDirectory, now: float) -> html.Table:
    head = html.Tr(
        [html.Th(h) for h in ("id", "user", "role", "label", "expires", "last use", "state")]
    )
    rows = [
        html.Tr(
            [
                html.Td(t.id),
                html.Td(t.user),
                html.Td(t.role),
                html.Td(t.label),
                html.Td(when(t.expires_at)),
                html.Td(when(t.last_used_at)),
                html.Td(_token_state(t, now)),
            ],
            id=f"pe-token-{t.id}",
        )
        for t in tokens.list()
    ]
    return html.Table([head, *rows], id="pe-tokens")


def register(app: Dash, clock: Callable[[], float], users: Users, tokens: Tokens) -> None:
    @app.callback(Output("pe-body", "children"), Input("pe-message", "children"))
    def show(_: object) -> html.Div:
        people, keys = users(), tokens()
        if people is None or keys is None:
            return html.Div("no user store: users need Cassandra", className="banner")
        try:
            return html.Div(
                [
                    html.H3("Users"),
                    _users_table(people),
                    html.H3("API tokens"),
                    _tokens_table(keys, clock()),
                ]
            )
        except StorageUnavailable as exc:
            return html.Div(f"users unavailable: {exc}", className="banner")

    @app.callback(
        Output("pe-message", "children"),
        Output("pe-message", "className"),
        Input("pe-set-role", "n_clicks"),
        Input("pe-disable", "n_clicks"),
        Input("pe-enable", "n_clicks"),
        Input("pe-revoke", "n_clicks"),
        State("pe-user", "value"),
        State("pe-role", "value"),
        State("pe-token", "value"),
        prevent_initial_call=True,
    )
    def act(*args: Any) -> tuple[str, str]:
        name, role, token_id = (str(a or "").strip() for a in args[4:])
        people, keys = users(), tokens()
        if people is None or keys is None:
            return "no user store: users need Cassandra", _ERROR
        which = ctx.triggered_id
        at = time.strftime("%H:%M:%S", time.gmtime(clock()))
        try:
            if which == "pe-revoke":
                keys.revoke(token_id)
                return f"{at}: token {token_id} revoked", _OK
            if which in ("pe-disable", "pe-set-role") and name == g.get("apm_user"):
                return "you cannot change your own user here (another admin can)", _ERROR
            if which == "pe-set-role":
                people.set_role(name, role)
                return f"{at}: {name} is now {role}", _OK
            people.set_disabled(name, which == "pe-disable")
            return f"{at}: {name} is {'disabled' if which == 'pe-disable' else 'enabled'}", _OK
        except UserError as exc:
            return str(exc), _ERROR
        except StorageUnavailable as exc:
            return f"not done: {exc}", _ERROR
