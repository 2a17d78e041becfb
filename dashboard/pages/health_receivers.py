"""The health page's alert receivers: per receiver, notices delivered, failed attempts (retried
with backoff), notices refused for good, and the outbox backlog, read from the evaluator's
``/metrics`` (``APM_DASHBOARD_ALERTING_METRICS_URL``) the way the page reads the ingest's. The
evaluator keeps no receiver error text anywhere the dashboard can read (only its log has it),
so the card says where to look instead of showing a last error it does not have."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from typing import Any

from dash import html
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["COLUMNS", "parse_receivers", "receivers_card"]

# metric (as exposed, counters with their _total) -> column
COLUMNS = {
    "apm_alerting_notices_sent_total": "sent",
    "apm_alerting_send_failures_total": "failures",
    "apm_alerting_send_refused_total": "refused",
    "apm_alerting_outbox": "outbox",
}
MAX_BYTES = 4 << 20  # a /metrics page past this is not the evaluator's


def _get(url: str, timeout_s: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:  # a configured URL
        data: bytes = response.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"more than {MAX_BYTES} bytes: not the evaluator's /metrics")
    return data.decode("utf-8", errors="replace")


def parse_receivers(text: str) -> dict[str, dict[str, float]]:
    """receiver -> {sent, failures, refused, outbox} from an evaluator's /metrics text."""
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            column = COLUMNS.get(sample.name)
            receiver = sample.labels.get("receiver")
            if column is not None and receiver is not None:
                out.setdefault(receiver, {})[column] = sample.value
    return out


def _cell(row: dict[str, float], column: str) -> html.Td:
    value = row.get(column)
    text = "-" if value is None else f"{value:g}"
    bad = value is not None and value > 0 and column in ("failures", "refused", "outbox")
    return html.Td(text, className="bad" if bad else "")


def _status(row: dict[str, float]) -> str:
    if row.get("outbox", 0) > 0 and row.get("failures", 0) > 0:
        return "failing: notices wait in the outbox and are retried with backoff"
    if row.get("outbox", 0) > 0:
        return "sending: notices are waiting their turn"
    if row.get("refused", 0) > 0:
        return "some notices were refused for good (4xx) and dropped; see the evaluator's log"
    if row.get("failures", 0) > 0:
        return "recovered: earlier attempts failed, nothing is waiting now"
    return "ok"


def receivers_card(
    url: str, timeout_s: float = 2.0, fetch: Callable[[str, float], str] = _get
) -> html.Div:
    """The card, explaining an unset URL, an evaluator that does not answer, or no receivers."""
    head = html.H3("Alert receivers")
    if not url:
        return html.Div(
            [head, html.P("APM_DASHBOARD_ALERTING_METRICS_URL is empty: not watched.")],
            className="card",
            id="h-receivers",
        )
    try:
        rows = parse_receivers(fetch(url, timeout_s))
    except (OSError, ValueError) as exc:
        why = f"the evaluator's /metrics ({url}) did not answer: {exc}. Is `apm alert run` up?"
        return html.Div([head, html.P(why, className="banner")], className="card", id="h-receivers")
    if not rows:
        body: Any = html.P(
            "The evaluator runs but has no receiver configured (APM_ALERTING_*): alerts are "
            "evaluated and recorded, not sent.",
            className="hint",
        )
    else:
        columns = ("sent", "failures", "refused", "outbox")
        body = html.Table(
            [html.Tr([html.Th(h) for h in ("receiver", *columns, "status")])]
            + [
                html.Tr(
                    [html.Td(name), *(_cell(row, c) for c in columns), html.Td(_status(row))],
                    id=f"h-receiver-{name}",
                )
                for name, row in sorted(rows.items())
            ],
            id="h-receivers-table",
        )
    note = html.P(
        "Counts since the evaluator started. failures: attempts that failed and were retried; "
        "refused: notices a receiver rejected for good; outbox: notices waiting. The error text "
        "of a failure is in the evaluator's log (scheme://host:port, never the URL's secrets).",
        className="hint",
    )
    return html.Div([head, body, note], className="card", id="h-receivers")
