"""The rule builder's fields and how what is typed in them becomes the rule's JSON, exactly as
``POST /api/alerts/rules`` would receive it: the kind (a threshold on a stored query, or
"server silent"), the thresholds with their recovery lines, ``for`` and ``keep firing for``,
the no-data policy and its number of windows, labels, the annotation and the receivers.

Nothing here judges a value: the rulebook does (:mod:`alerting.fields`), so the builder shows
the API's own refusal. The one exception is the labels box, whose ``name=value, ...`` text has
no JSON form when it cannot be read; that is refused here, naming ``labels``."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from alerting.fields import COMPARISONS, NODATA_POLICIES, RECEIVERS, RuleError
from alerting.template import FIELDS as PLACEHOLDERS
from dashboard.pages.common import labelled

__all__ = [
    "FIELDS",
    "NODATA_HELP",
    "common_fields",
    "number",
    "parse_labels",
    "rule_body",
    "silent_fields",
    "threshold_fields",
]

# Control id -> rule_body's parameter; the builder's callbacks read the controls in this order.
FIELDS = {
    "ab-kind": "kind",
    "ab-name": "name",
    "ab-query": "query",
    "ab-function": "function",
    "ab-cmp": "cmp",
    "ab-warning": "warn",
    "ab-critical": "crit",
    "ab-warning-rec": "warn_rec",
    "ab-critical-rec": "crit_rec",
    "ab-for": "for_s",
    "ab-keep": "keep",
    "ab-nodata-policy": "policy",
    "ab-nodata-windows": "windows",
    "ab-servers": "servers",
    "ab-silent-after": "silent_after",
    "ab-labels": "labels",
    "ab-annotation": "annotation",
    "ab-receivers": "receivers",
}
NODATA_HELP = {
    "keep": "keep: the state stays as it was",
    "alert": "alert: go to no-data and notify",
    "ok": "ok: back to normal",
}


def _text(control_id: str, value: str = "", placeholder: str = "") -> dcc.Input:
    # Text, not number inputs: a browser turns "NaN" or "1e999" into an empty value, which
    # would hide from the user what the API would refuse.
    return dcc.Input(id=control_id, type="text", value=value, placeholder=placeholder)


def threshold_fields() -> html.Div:
    """The fields of a threshold rule; hidden for a server-silent rule."""
    return html.Div(
        id="ab-threshold",
        children=[
            labelled("query", dcc.Dropdown(id="ab-query", options=[], placeholder="stored query")),
            labelled("function", dcc.Dropdown(id="ab-function", options=[])),
            labelled(
                "comparison",
                dcc.Dropdown(id="ab-cmp", options=list(COMPARISONS), value=">", clearable=False),
            ),
            labelled("warning", _text("ab-warning")),
            labelled("critical", _text("ab-critical")),
            labelled("warning recovery", _text("ab-warning-rec", placeholder="optional")),
            labelled("critical recovery", _text("ab-critical-rec", placeholder="optional")),
            html.P(
                "A firing alert clears only once the value is past its level's recovery line "
                "(empty: the threshold itself).",
                className="hint",
            ),
            labelled("for (s)", _text("ab-for", "30")),
            labelled("keep firing for (s)", _text("ab-keep", "0")),
            labelled(
                "no data",
                dcc.Dropdown(
                    id="ab-nodata-policy",
                    options=[{"label": NODATA_HELP[p], "value": p} for p in NODATA_POLICIES],
                    value="keep",
                    clearable=False,
                ),
            ),
            labelled("after windows without samples", _text("ab-nodata-windows", "3")),
        ],
    )


def silent_fields() -> html.Div:
    """The fields of a server-silent rule; hidden for a threshold rule."""
    return html.Div(
        id="ab-silent",
        style={"display": "none"},
        children=[
            html.P(
                "Each matching server that sent anything in the last hour and nothing for the "
                "given seconds alerts on its own (label server).",
                className="hint",
            ),
            labelled("servers (glob)", _text("ab-servers", "*")),
            labelled("silent after (s)", _text("ab-silent-after", "60")),
        ],
    )


def common_fields() -> list[Any]:
    return [
        labelled("labels", _text("ab-labels", placeholder="team=web, env=prod")),
        labelled(
            "annotation",
            _text("ab-annotation", placeholder=" ".join(f"{{{p}}}" for p in PLACEHOLDERS)),
        ),
        labelled(
            "receivers (none ticked: every configured one)",
            dcc.Checklist(id="ab-receivers", options=list(RECEIVERS), value=[], inline=True),
        ),
    ]


def number(text: Any) -> Any:
    """A typed number as the API would receive it; text that is no number stays text, so the
    rules module says what is wrong with it."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text
    return int(value) if value.is_integer() else value


def parse_labels(text: str | None) -> dict[str, str]:
    """``team=web, env=prod`` as the labels object; names and values are the API's to judge.
    A part without ``=`` or a name given twice is refused here: it has no JSON to send."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise RuleError("labels", f"{part.strip()[:60]!r} is not name=value (team=web)")
        if key in out:
            raise RuleError("labels", f"{key[:60]!r} is given twice")
        out[key] = value.strip()
    return out


def _given(raw: dict[str, Any], field: str, value: Any) -> None:
    """Blank means the API's default (which the form shows prefilled): the field is left out."""
    if value is not None and value not in ("", [], {}):
        raw[field] = value


def rule_body(
    *,
    name: str | None,
    query: str | None,
    function: str | None,
    cmp: str | None,
    warn: Any,
    crit: Any,
    for_s: Any,
    annotation: str | None = None,
    warn_rec: Any = None,
    crit_rec: Any = None,
    keep: Any = None,
    policy: str | None = None,
    windows: Any = None,
    labels: str | None = None,
    kind: str | None = None,
    servers: str | None = None,
    silent_after: Any = None,
    receivers: list[str] | None = None,
) -> dict[str, Any]:
    """The rule's JSON, or :class:`RuleError` when the labels text cannot be read."""
    raw: dict[str, Any] = {"name": name or "", "kind": kind or "threshold"}
    if raw["kind"] == "server_silent":
        _given(raw, "servers", (servers or "").strip())
        _given(raw, "silent_after_s", number(silent_after))
    else:
        levels = {"warning": warn, "critical": crit}
        levels |= {"warning_recovery": warn_rec, "critical_recovery": crit_rec}
        raw["query_id"], raw["function"] = query or "", function or ""
        raw["comparison"] = cmp
        raw["thresholds"] = {k: v for k, t in levels.items() if (v := number(t)) is not None}
        raw["for_s"] = f if (f := number(for_s)) is not None else 0
        _given(raw, "keep_firing_for_s", number(keep))
        _given(raw, "nodata_policy", policy)
        _given(raw, "nodata_windows", number(windows))
    _given(raw, "labels", parse_labels(labels))
    _given(raw, "annotation", annotation)
    _given(raw, "receivers", list(receivers or []))
    return raw
