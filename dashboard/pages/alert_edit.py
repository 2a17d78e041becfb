"""**Edit** on the alerts page: a stored rule loaded into the rule builder
(:mod:`dashboard.pages.alert_builder`), whose Create button then saves it back through
:meth:`alerting.rulebook.Rulebook.update` (as ``PUT /api/alerts/rules/{id}``). What the rule
watches (its kind, query and function) is shown but cannot be changed: those controls are
disabled while editing. **New rule** leaves edit mode, keeping what is typed as a start."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import ALL, Dash, Input, Output, ctx, html, no_update

from alerting.rulebook import Rulebook
from dashboard.pages.alert_builder_fields import FIELDS
from dashboard.pages.common import WRITES

__all__ = ["EDIT_TYPE", "edit_button", "form_values", "register"]

EDIT_TYPE = "al-edit"
_LOCKED = ("ab-kind", "ab-query", "ab-function")


def edit_button(rule_id: str) -> html.Button:
    return html.Button("Edit", id={"type": EDIT_TYPE, "id": rule_id}, n_clicks=0, className=WRITES)


def _text(value: Any) -> str:
    """A stored number as the builder's text box shows it (80.0 as 80, never rounded)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def form_values(body: dict[str, Any]) -> dict[str, Any]:
    """The builder's control values (by :data:`FIELDS` parameter) that type ``body`` again:
    ``rule_body(**form_values(body))`` validates to the same rule."""
    limits = body.get("thresholds") or {}
    threshold = body.get("kind", "threshold") == "threshold"
    level = {k: _text(limits.get(k)) if threshold else "" for k in limits}
    return {
        "kind": body.get("kind", "threshold"),
        "name": body.get("name", ""),
        "query": body.get("query_id") or None,
        "function": body.get("function") if threshold else None,
        "cmp": body.get("comparison", ">"),
        "warn": level.get("warning", ""),
        "crit": level.get("critical", ""),
        "warn_rec": level.get("warning_recovery", ""),
        "crit_rec": level.get("critical_recovery", ""),
        "for_s": _text(body.get("for_s", 0)),
        "keep": _text(body.get("keep_firing_for_s", 0)),
        "policy": body.get("nodata_policy", "keep"),
        "windows": _text(body.get("nodata_windows", 3)),
        "servers": body.get("servers", "*"),
        "silent_after": _text(body.get("silent_after_s") or 60),
        "labels": ", ".join(f"{k}={v}" for k, v in (body.get("labels") or {}).items()),
        "annotation": body.get("annotation", ""),
        "receivers": list(body.get("receivers") or []),
    }


def register(app: Dash, book: Callable[[], Rulebook]) -> None:
    # The rules list is redrawn every tick, which fires a callback on its buttons: that one
    # only writes a store, so the builder's controls are not marked loading (and redrawn, an
    # open dropdown losing its options) every tick; the store changes on a click only.
    @app.callback(
        Output("ab-edit-request", "data"),
        Input({"type": EDIT_TYPE, "id": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def request(edits: list[int]) -> Any:
        trigger = ctx.triggered_id
        if not isinstance(trigger, dict) or not any(edits):  # redrawn, not clicked
            return no_update
        return {"id": trigger["id"], "clicks": sum(n or 0 for n in edits)}

    @app.callback(
        *[Output(field, "value") for field in FIELDS],
        *[Output(field, "disabled") for field in _LOCKED],
        # With the function's value: a dropdown drops a value its options lack (they would
        # come only after the query's change, from the builder's own callback).
        Output("ab-function", "options", allow_duplicate=True),
        Output("ab-editing", "data"),
        Output("ab-title", "children"),
        Output("ab-create", "children"),
        Output("ab-new", "style"),
        Output("ab-message", "children", allow_duplicate=True),
        Input("ab-edit-request", "data"),
        Input("ab-new", "n_clicks"),
        prevent_initial_call=True,
    )
    def load(asked: dict[str, Any] | None, _new: int) -> Any:
        keep = [no_update] * len(FIELDS)
        if ctx.triggered_id == "ab-new" or not asked:  # the fields stay as a starting point
            unlocked = [False] * len(_LOCKED)
            done = (None, "New rule", "Create", {"display": "none"}, "")
            return (*keep, *unlocked, no_update, *done)
        rule_id = asked["id"]
        body = book().tables.rules().get(rule_id)
        if body is None:
            gone = f"rule {rule_id} no longer exists (deleted?)"
            return (*keep, *[no_update] * len(_LOCKED), *[no_update] * 5, gone)
        values = form_values(body)
        return (
            *[values[param] for param in FIELDS.values()],
            *[True] * len(_LOCKED),
            [values["function"]] if values["function"] else [],
            rule_id,
            f"Edit rule {body.get('name', '')} ({rule_id})",
            "Save",
            {"display": "inline-block"},
            "",
        )
