"""The queries page's builder: servers, metric, window, functions and the split (one series
over all the servers, one per server with ``BY server``, or per server ranked with ``TOP``/
``BOTTOM n BY f``), composed into query text by :func:`dashboard.validation.compose` and
previewed as typed. A parser error is shown beside the field at fault."""

from __future__ import annotations

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from apm.functions import CATALOGUE
from apm.query import MAX_TOP
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable, guarded
from dashboard.pages.common import WRITES
from dashboard.validation import BUILDER_FIELDS, SPLITS, Composed, check_builder, compose

__all__ = ["layout", "register", "save"]

# The checklist offers the functions without a parameter; percentile has its own field.
_PLAIN_FUNCTIONS = [name for name, spec in CATALOGUE.items() if spec.param is None]


def _field(label: str, control: Component, name: str, hint: str = "") -> html.Div:
    return html.Div(
        className="field",
        children=[
            html.Label(label),
            control,
            html.Span(hint, className="hint") if hint else None,
            html.Div(id=f"b-err-{name}", className="field-error"),
        ],
    )


def _metrics(app_ctx: AppContext) -> tuple[list[str], str | None]:
    try:
        return app_ctx.topics.metrics(), None
    except OSError as exc:
        return [], f"metric topics unavailable: {exc}"


def _servers(app_ctx: AppContext) -> list[str]:
    try:
        return sorted(guarded(app_ctx.metrics, "list_servers", app_ctx.repo.list_servers))
    except StorageUnavailable:
        return []  # the page's banner says storage is down


def _split() -> html.Div:
    return html.Div(
        [
            dcc.RadioItems(
                id="b-split",
                value="",
                options=[{"label": text, "value": key} for key, text in SPLITS.items()],
            ),
            html.Div(
                id="b-rank",
                children=[
                    html.Label("n", className="inline-label"),
                    dcc.Input(id="b-top-n", type="number", value=10, min=1, max=MAX_TOP, size="4"),
                    html.Label("by function", className="inline-label"),
                    dcc.Input(id="b-top-by", value="avg", placeholder="avg, p99", size="8"),
                ],
            ),
        ]
    )


def layout(app_ctx: AppContext) -> html.Div:
    metrics, topics_error = _metrics(app_ctx)
    return html.Div(
        className=f"card {WRITES}",
        id="builder",
        children=[
            html.H3("Build a query"),
            _field(
                "Servers (names or patterns)",
                dcc.Input(id="b-servers", value="*", placeholder="*, web-*, db-1", debounce=False),
                "servers",
                "comma-separated; * is every server",
            ),
            html.Div(
                className="field",
                children=[
                    html.Label("Servers seen so far"),
                    dcc.Dropdown(
                        id="b-seen",
                        multi=True,
                        options=_servers(app_ctx),
                        placeholder="pick servers to add",
                    ),
                ],
            ),
            _field(
                "Metric",
                dcc.Dropdown(id="b-metric", options=metrics, placeholder="metric topic"),
                "metric",
                topics_error or "the metric topics that exist in Kafka",
            ),
            _field(
                "Window", dcc.Input(id="b-window", value="10s", placeholder="10s, 1m, 1h"), "window"
            ),
            _field(
                "Functions",
                html.Div(
                    [
                        dcc.Checklist(
                            id="b-functions",
                            options=_PLAIN_FUNCTIONS,
                            value=["avg", "max"],
                            inline=True,
                        ),
                        html.Label("percentile p (comma-separated)", className="inline-label"),
                        dcc.Input(
                            id="b-percentiles", value="99", placeholder="99, 99.9", size="10"
                        ),
                    ]
                ),
                "functions",
            ),
            _field(
                "Series",
                _split(),
                "split",
                f"a ranking keeps the n (1 to {MAX_TOP}) servers with the highest (lowest) value "
                "of one of the computed functions in each window, and folds the rest into "
                "(others)",
            ),
            html.Pre(id="b-preview", className="preview"),
            html.Button("Create query", id="b-create", className="primary"),
            html.Div(id="b-result", className="result"),
        ],
    )


_INPUTS = [
    State("b-servers", "value"),
    State("b-metric", "value"),
    State("b-window", "value"),
    State("b-functions", "value"),
    State("b-percentiles", "value"),
    State("b-split", "value"),
    State("b-top-n", "value"),
    State("b-top-by", "value"),
]


def _composed(values: tuple) -> Composed:
    """The text of the builder's field values, in :data:`_INPUTS`' order."""
    servers, metric, window, functions, percentiles, split, n, by = values
    return compose(
        (servers or "").split(","), metric, window, functions or [], percentiles, split, n, by
    )


def register(app: Dash, app_ctx: AppContext) -> None:
    @app.callback(
        Output("b-servers", "value"),
        Input("b-seen", "value"),
        State("b-servers", "value"),
        prevent_initial_call=True,
    )
    def add_seen(seen: list[str] | None, current: str | None) -> str:
        parts = [p.strip() for p in (current or "").split(",") if p.strip() and p.strip() != "*"]
        parts += [s for s in seen or [] if s not in parts]
        return ", ".join(parts) or "*"

    @app.callback(Output("b-rank", "style"), Input("b-split", "value"))
    def show_rank(split: str | None) -> dict[str, str]:
        return {} if split in ("top", "bottom") else {"display": "none"}

    @app.callback(
        Output("b-preview", "children"),
        [Input(s.component_id, s.component_property) for s in _INPUTS],
    )
    def preview(*values: object) -> str:
        return _composed(values).text

    @app.callback(
        [Output(f"b-err-{f}", "children") for f in BUILDER_FIELDS]
        + [Output("b-result", "children"), Output("q-version", "data", allow_duplicate=True)],
        Input("b-create", "n_clicks"),
        *_INPUTS,
        State("q-version", "data"),
        prevent_initial_call=True,
    )
    def create(_n: int | None, *values: object) -> list[object]:
        *fields, version = values
        composed = _composed(tuple(fields))
        errors: dict[str, str] = dict.fromkeys(BUILDER_FIELDS, "")
        if (found := check_builder(composed)) is not None:
            errors[found[0]] = found[1].detail
            return [*errors.values(), "", no_update]
        return [
            *errors.values(),
            *save(app_ctx, composed.text, version if isinstance(version, int) else 0),
        ]


def save(app_ctx: AppContext, text: str, version: int) -> list[object]:
    """Stores ``text`` (already validated): a link to its chart and the list's next version,
    or the storage failure beside the button."""
    try:
        saved = guarded(app_ctx.metrics, "save_query", lambda: app_ctx.repo.save_query(text))
    except StorageUnavailable as exc:
        return [html.Span(str(exc), className="field-error"), no_update]
    return [
        html.Span(["Created ", dcc.Link(saved.text, href=f"/chart?q={saved.id}")], className="ok"),
        (version or 0) + 1,
    ]
