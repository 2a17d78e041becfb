"""The read-only view a share link opens, without sign-in: ``/share/<token>`` (the page),
``/share/<token>/data`` (its panels' figures, polled for live refresh) and
``/share/<token>/plotly.js``. Only these paths are open, and only for a token that opens a
dashboard now (:func:`shared_check`, called by :mod:`dashboard.auth` before any handler): a
guessed, replaced or revoked token is a 404 that says nothing more. The page shows that one
dashboard and nothing else of the platform: no navigation, no query text beyond its panels'
notes, no controls that write."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from flask import Blueprint, Flask, Response, current_app, render_template_string, request
from werkzeug.exceptions import NotFound, ServiceUnavailable

from dashboard.board_book import BoardBook
from dashboard.boards import GRID_COLUMNS, RANGES, Board
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable
from dashboard.pages.board_panels import board_views
from dashboard.states import QueryStates

__all__ = ["blueprint", "install", "shared_check"]

_KEY = "apm.share"
blueprint = Blueprint("share", __name__, url_prefix="/share")

_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{{ name }} (shared)</title>
<script src="/share/{{ token }}/plotly.js"></script>
<style>body{font-family:system-ui,sans-serif;background:#f4f6f8;margin:0;padding:1em}
#grid{display:grid;grid-template-columns:repeat({{ columns }},1fr);grid-auto-rows:70px;gap:10px}
.panel{background:#fff;border-radius:6px;box-shadow:0 1px 3px #0002;padding:6px;display:flex;
flex-direction:column;min-height:0}.panel h3{margin:0;font-size:.95em}.plot{flex:1;min-height:0}
.notes{color:#666;font-size:.75em;max-height:4em;overflow:auto}.hint{color:#555}</style></head>
<body><h2 id="s-name">{{ name }}</h2>
<p class="hint" id="s-about">A read-only shared view. Server filter
<b id="s-filter">{{ filter }}</b>
(a per-server query shows the servers it matches; a plain query's one series folds in all
its servers and is hidden when none of them match; each panel says what it did).
Range <select id="s-range">{% for r in ranges %}
<option value="{{ r }}" {% if r == range %}selected{% endif %}>{{ r }}</option>{% endfor %}
</select> <span id="s-status"></span></p>
{% if not panels %}<p id="s-empty">This dashboard has no panels yet.</p>{% endif %}
<div id="grid">{% for p in panels %}<div class="panel" id="s-panel-{{ p.id }}"
style="grid-column:{{ p.x + 1 }} / span {{ p.w }};grid-row:{{ p.y + 1 }} / span {{ p.h }}">
<h3>{{ p.title }}</h3><div class="plot" id="s-plot-{{ p.id }}"></div>
<div class="notes" id="s-notes-{{ p.id }}"></div></div>{% endfor %}</div>
<script>
const every = {{ refresh }} * 1000;
async function draw() {
  const range = document.getElementById('s-range').value;
  const r = await fetch('/share/{{ token }}/data?range=' + encodeURIComponent(range));
  const status = document.getElementById('s-status');
  if (!r.ok) { status.innerText = r.status === 404 ? 'this link was revoked' :
    'could not refresh (' + r.status + '), showing the last data'; return; }
  const got = await r.json();
  for (const p of got.panels) {
    const el = document.getElementById('s-plot-' + p.id);
    if (!el) continue;
    p.figure.layout.autosize = true;
    Plotly.react(el, p.figure.data, p.figure.layout, {displayModeBar: false, responsive: true});
    document.getElementById('s-notes-' + p.id).innerText = p.notes.join('\\n');
  }
  status.innerText = 'updated ' + new Date().toLocaleTimeString();
  document.body.dataset.drawn = String(Number(document.body.dataset.drawn || 0) + 1);
}
document.getElementById('s-range').addEventListener('change', draw);
draw();
if (every > 0) setInterval(draw, every);
</script></body></html>"""


def install(
    server: Flask, app_ctx: AppContext, book: Callable[[], BoardBook], states: QueryStates
) -> None:
    server.extensions[_KEY] = (app_ctx, book, states)
    server.register_blueprint(blueprint)


def shared_check(book: Callable[[], BoardBook]) -> Callable[[str], bool]:
    """For :func:`dashboard.auth.install_auth`: does ``token`` open a dashboard now?"""

    def check(token: str) -> bool:
        try:
            return book().shared(token) is not None
        except StorageUnavailable as exc:
            raise ServiceUnavailable("storage unavailable; try again shortly") from exc

    return check


def _board(token: str) -> Board:
    _, book, _ = current_app.extensions[_KEY]
    board = book().shared(token)
    if board is None:  # auth.py has already refused it; revoked in between
        raise NotFound()
    return board


@blueprint.get("/<token>")
def page(token: str) -> Response:
    board = _board(token)
    app_ctx = current_app.extensions[_KEY][0]
    html = render_template_string(
        _PAGE,
        token=token,
        name=board.name,
        filter=board.server_filter,
        ranges=list(RANGES),
        range=board.time_range,
        panels=board.panels,
        columns=GRID_COLUMNS,
        refresh=app_ctx.settings.clamp_refresh(board.refresh_seconds)
        if board.refresh_seconds
        else 0,
    )
    response = Response(html, mimetype="text/html")
    # The link is the credential: keep it out of other sites' Referer headers.
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@blueprint.get("/<token>/data")
def data(token: str) -> Response:
    board = _board(token)
    app_ctx, _, states = current_app.extensions[_KEY]
    chosen = request.args.get("range", board.time_range)
    end = app_ctx.clock()
    start = end - RANGES.get(chosen, RANGES[board.time_range])
    try:
        views = board_views(app_ctx, board, states, (start, end))
    except StorageUnavailable as exc:
        raise ServiceUnavailable("storage unavailable; showing the last data") from exc
    panels = [
        {"id": p.id, "figure": v.figure, "notes": v.notes}
        for p, v in zip(board.panels, views, strict=True)
    ]
    # Plotly figures hold None (gaps) and floats: plain json, not Flask's provider.
    body = json.dumps({"name": board.name, "at": time.time(), "panels": panels})
    return Response(body, mimetype="application/json")


@blueprint.get("/<token>/plotly.js")
def plotly_js(token: str) -> Response:
    import plotly

    _board(token)
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    response = Response(path.read_bytes(), mimetype="application/javascript")
    response.headers["Cache-Control"] = "private, max-age=3600"
    return response
