"""Who may do what: the roles and the one table of the routes and Dash callbacks that change
something, each with the least role that may call it. The login hook
(:mod:`dashboard.permits`) reads it for every request: the REST APIs, the alerting API and
the Dash callbacks alike, so that no handler checks a role itself.

- ``viewer`` reads everything: charts, dashboards, the Prometheus API, alert states;
- ``editor`` also creates, edits and deletes queries, dashboards, alert rules, silences and
  share links;
- ``admin`` also manages users and their tokens (``apm user``, ``apm token``, the users
  page) and reads the audit log, and is what the configured login
  (``APM_DASHBOARD_USER`` / ``APM_DASHBOARD_PASSWORD_HASH``) and ``APM_DASHBOARD_TOKEN`` are.

A read (GET, HEAD, OPTIONS) needs ``viewer``, but for the few in :data:`READ_ROLES`. A
state-changing route or callback missing from the table needs ``admin``: a new one is closed
until it is declared (and its test fails, tests/dashboard/test_roles.py, until it is).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ADMIN",
    "CALLBACK_ROLES",
    "EDITOR",
    "READ_ROLES",
    "ROLES",
    "ROUTE_ROLES",
    "VIEWER",
    "allows",
    "callback_role",
    "parse_role",
    "route_role",
]

VIEWER: Final = "viewer"
EDITOR: Final = "editor"
ADMIN: Final = "admin"
ROLES: Final = (VIEWER, EDITOR, ADMIN)  # each may do what the ones before it may
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})

# Flask endpoints of the state-changing (non-GET) routes.
ROUTE_ROLES: Final[dict[str, str]] = {
    # Sign-in and out are for everyone (the login hook lets /login through before any role).
    "login": VIEWER,
    "logout": VIEWER,
    "api.create_query": EDITOR,
    "api.patch_query": EDITOR,
    "api.delete_query": EDITOR,
    "alerts_api.create": EDITOR,
    # A preview evaluates a rule and stores nothing: a read sent as POST (it has a body).
    "alerts_api.preview_rule": VIEWER,
    "alerts_api.update": EDITOR,
    "alerts_api.delete": EDITOR,
    "alerts_api.silence": EDITOR,
    "alerts_api.unsilence": EDITOR,
    "alerts_api.test_notify": EDITOR,
    "dashboards_api.create": EDITOR,
    "dashboards_api.update": EDITOR,
    "dashboards_api.delete": EDITOR,
    "dashboards_api.duplicate": EDITOR,
    "dashboards_api.import_board": EDITOR,
    "dashboards_api.share": EDITOR,
    "dashboards_api.revoke": EDITOR,
    # The Prometheus API takes POST for long queries (reads); its blueprint checks credentials.
    "promapi.query_range": VIEWER,
    "promapi.query": VIEWER,
    "promapi.series": VIEWER,
    "promapi.labels": VIEWER,
    "promapi.query_exemplars": VIEWER,
    # Every Dash callback is a POST here: decided per callback below.
    "/_dash-update-component": VIEWER,
}

# The reads (GET, HEAD, OPTIONS) that need more than viewer, by Flask endpoint.
READ_ROLES: Final[dict[str, str]] = {
    "audit_api.read": ADMIN,  # who changed what: for admins only
}

# Every Dash callback, by "<module>.<function>" (:func:`callback_role`'s key).
CALLBACK_ROLES: Final[dict[str, str]] = {
    "dashboard.app.route": VIEWER,
    "dashboard.pages.query_builder.add_seen": VIEWER,
    "dashboard.pages.query_builder.show_rank": VIEWER,
    "dashboard.pages.query_builder.preview": VIEWER,
    "dashboard.pages.query_builder.create": EDITOR,
    "dashboard.pages.queries.render_list": VIEWER,
    "dashboard.pages.queries.create_from_text": EDITOR,
    "dashboard.pages.queries.act": EDITOR,  # pause, resume, delete
    "dashboard.pages.chart.set_refresh": VIEWER,
    "dashboard.pages.chart.show_custom": VIEWER,
    "dashboard.pages.chart.draw": VIEWER,
    "dashboard.pages.health.refresh": VIEWER,
    "dashboard.pages.alert_builder.queries": VIEWER,
    "dashboard.pages.alert_builder.functions": VIEWER,
    "dashboard.pages.alert_builder.kind": VIEWER,
    "dashboard.pages.alert_builder.live": VIEWER,
    "dashboard.pages.alert_builder.act": EDITOR,  # preview, create, save
    "dashboard.pages.alert_edit.request": VIEWER,
    "dashboard.pages.alert_edit.load": VIEWER,  # fills the builder's form, stores nothing
    "dashboard.pages.alert_silences.rules": VIEWER,
    "dashboard.pages.alert_silences.act": EDITOR,  # silence, expire
    "dashboard.pages.alerts.refresh": VIEWER,
    "dashboard.pages.board_list.act": EDITOR,  # create, import, duplicate, delete
    "dashboard.pages.board_edit.edit": EDITOR,  # panels, layout, rename, share, revoke
    "dashboard.pages.board.live": VIEWER,
    "dashboard.pages.board.draw": VIEWER,
    # The users page: the list of users and tokens is an admin's read, as are its writes.
    "dashboard.pages.people.show": ADMIN,
    "dashboard.pages.people.act": ADMIN,  # set a role, disable, enable, revoke a token
}


def parse_role(text: str) -> str:
    """``text`` as a role; ValueError naming the roles otherwise."""
    if text not in ROLES:
        raise ValueError(f"unknown role {text[:40]!r}: one of {', '.join(ROLES)}")
    return text


def allows(have: str, need: str) -> bool:
    """Whether role ``have`` may do what ``need`` may (an unknown role may do nothing)."""
    return have in ROLES and need in ROLES and ROLES.index(have) >= ROLES.index(need)


def route_role(method: str, endpoint: str | None) -> str:
    """The least role for ``method`` on the Flask ``endpoint``."""
    if method in _SAFE:
        return READ_ROLES.get(endpoint or "", VIEWER)
    return ROUTE_ROLES.get(endpoint or "", ADMIN)


def callback_role(name: str | None) -> str:
    """The least role for the Dash callback ``name`` (None: no such callback, ``admin``)."""
    return CALLBACK_ROLES.get(name or "", ADMIN)
