"""The silence form on the alerts page: silence by rule, by label matchers (``team=web,
env=prod``) or by a server glob, from a start for a duration, optionally only inside a weekly
window (UTC); the list of silences with what each suppressed and an **Expire** button each.
It goes through the rulebook as ``POST /api/alerts/silences`` does, so a refusal is the API's
422 text, naming its field. Expiring deletes the silence (the rulebook's ``unsilence``, as
``DELETE /api/alerts/silences/{id}``): its alerts are sent again from the next evaluation."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from alerting.rulebook import Rulebook
from alerting.silences import SilenceError
from dashboard.pages.common import WRITES, labelled
from dashboard.validation import parse_time

__all__ = ["DAYS", "form", "listing", "raw_silence", "register"]

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def form() -> html.Div:
    return html.Div(
        id="si-form",
        className=WRITES,
        children=[
            html.H3("New silence"),
            html.P(
                "A silenced alert is still evaluated and recorded, but not sent; fill in at least "
                "one of rule, labels or servers (all given must match).",
                className="hint",
            ),
            labelled("rule", dcc.Dropdown(id="si-rule", options=[], placeholder="any rule")),
            labelled("labels", dcc.Input(id="si-labels", placeholder="team=web, env=prod")),
            labelled("servers", dcc.Input(id="si-servers", placeholder="server glob: web-*")),
            labelled("starts", dcc.Input(id="si-start", placeholder="now, or 2026-05-01T10:00Z")),
            labelled("for (h)", dcc.Input(id="si-hours", type="text", value="2")),
            labelled(
                "weekly (UTC)",
                html.Div(
                    [
                        dcc.Dropdown(id="si-day", options=list(DAYS), placeholder="every day?"),
                        dcc.Input(id="si-at", placeholder="02:00"),
                        dcc.Input(id="si-len", placeholder="hours, e.g. 2"),
                    ]
                ),
            ),
            labelled("comment", dcc.Input(id="si-comment", value="")),
            html.Button("Silence", id="si-create", n_clicks=0),
            html.Div(id="si-message", className="error"),
        ],
    )


def _labels(text: str | None) -> dict[str, str] | str:
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            return f"labels: {part.strip()!r} is not name=value"
        out[key.strip()] = value.strip()
    return out


def raw_silence(
    rule: str | None,
    labels: str | None,
    servers: str | None,
    start: str | None,
    hours: str | None,
    day: str | None,
    at: str | None,
    length: str | None,
    comment: str | None,
    *,
    now: float,
) -> dict[str, Any] | str:
    """The API body the form describes, or why the form itself cannot be read (the silence's
    own checks are the rules module's, in :func:`alerting.silences.silence_from_dict`)."""
    matchers = _labels(labels)
    if isinstance(matchers, str):
        return matchers
    try:
        starts = now if not (start or "").strip() or start == "now" else parse_time(start, now)
    except ValueError as exc:
        return f"starts: {exc}"
    try:
        ends = starts + float(hours or "") * 3600
    except ValueError:
        return "for: hours as a number, e.g. 2 or 0.5"
    raw: dict[str, Any] = {"starts_at": starts, "ends_at": ends, "comment": comment or ""}
    if rule:
        raw["rule_id"] = rule
    if matchers:
        raw["labels"] = matchers
    if (servers or "").strip():
        raw["server_glob"] = (servers or "").strip()
    if day:
        try:
            hh, _, mm = (at or "00:00").partition(":")
            offset = DAYS.index(day) * 86_400 + int(hh) * 3600 + int(mm or 0) * 60
            raw["weekly"] = {"start_s": offset, "duration_s": round(float(length or "") * 3600)}
        except ValueError:
            return "weekly: a start as HH:MM and a length in hours"
    return raw


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _describe(s: dict[str, Any], now: float) -> str:
    what = [f"rule {s['rule_id']}"] if s.get("rule_id") else []
    what += [f"{k}={v}" for k, v in (s.get("labels") or {}).items()]
    what += [f"servers {s['server_glob']}"] if s.get("server_glob") else []
    if now < s["starts_at"]:
        state = f"starts {_when(s['starts_at'])}"
    elif now >= s["ends_at"]:
        state = "ended (no longer silences anything)"
    else:
        state = f"active until {_when(s['ends_at'])}"
    if w := s.get("weekly"):
        day, rest = divmod(w["start_s"], 86_400)
        state += (
            f", only {DAYS[day]} {rest // 3600:02d}:{rest % 3600 // 60:02d} UTC "
            f"for {w['duration_s'] / 3600:g} h each week"
        )
    return f"{' and '.join(what)}: {state}; suppressed {len(s.get('suppressed') or [])} alerts"


def listing(silences: list[dict[str, Any]], now: float) -> html.Div:
    if not silences:
        return html.Div(
            html.P("No silences: every alert that fires is sent.", className="hint"), id="si-list"
        )
    return html.Div(
        [
            html.Div(
                [
                    html.Span(_describe(s, now), className="si-what"),
                    html.Span(f" {s['comment']}" if s.get("comment") else "", className="hint"),
                    html.Button(
                        "Expire",
                        id={"type": "si-expire", "id": s["id"]},
                        n_clicks=0,
                        className=WRITES,
                    ),
                ],
                className="si-row",
                id=f"si-{s['id']}",
            )
            for s in silences
        ],
        id="si-list",
    )


def register(app: Dash, clock: Callable[[], float], book: Callable[[], Rulebook]) -> None:
    @app.callback(Output("si-rule", "options"), Input("al-tick", "n_intervals"))
    def rules(_: int | None) -> Any:
        try:
            return [{"label": r["name"], "value": r["id"]} for r in book().rules()]
        except Exception:  # storage down: the alerts list above says so
            return no_update

    @app.callback(
        Output("si-message", "children"),
        Input("si-create", "n_clicks"),
        Input({"type": "si-expire", "id": ALL}, "n_clicks"),
        State("si-rule", "value"),
        State("si-labels", "value"),
        State("si-servers", "value"),
        State("si-start", "value"),
        State("si-hours", "value"),
        State("si-day", "value"),
        State("si-at", "value"),
        State("si-len", "value"),
        State("si-comment", "value"),
        prevent_initial_call=True,
    )
    def act(_create: int, expires: list[int], *fields: Any) -> Any:
        trigger = ctx.triggered_id
        if isinstance(trigger, dict):
            if not any(expires):  # a list redrawn, not a click
                return no_update
            gone = book().unsilence(trigger["id"])
            return f"expired silence {trigger['id']}" if gone else "already expired"
        raw = raw_silence(*fields, now=clock())
        if isinstance(raw, str):
            return raw
        try:
            made = book().silence(raw, clock())
        except SilenceError as exc:
            return f"{exc.at or 'silence'}: {exc.detail}"
        return f"created silence {made.id}"
