"""From stored windows to chart-ready series and JSON: one series per function of a query."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime

from apm.query import StoredQuery, WindowResult
from apm.query_state import QueryState
from dashboard.downsample import Series, downsample_minmax, with_gaps

__all__ = ["build_series", "iso", "stored_query_json", "window_json"]


def build_series(
    query: StoredQuery,
    windows: Iterable[WindowResult],
    max_points: int | None,
    steps: Collection[int] = (),
) -> dict[str, Series]:
    """Series keyed by function key (``min``, ``p99``...), gaps inserted where windows are
    missing, then downsampled to ``max_points`` if given. ``windows`` ascend by start;
    ``steps``: the row lengths they may mix (a rollup tier's and the windows',
    ``dashboard.tiered``), by default the query's window only."""
    keys = [f.key for f in query.query.functions]
    xs: list[float] = []
    lengths: list[float] = []
    ys: dict[str, list[float | None]] = {k: [] for k in keys}
    step = float(query.query.window_seconds)
    allowed = set(steps) or {query.query.window_seconds}
    for w in windows:
        # A window stored under an older definition of the query (another window length)
        # would draw a false line; the stored length wins for the gap test, so skip mismatches.
        if w.window_seconds not in allowed:
            continue
        xs.append(w.window_start)
        lengths.append(float(w.window_seconds))
        for k in keys:
            ys[k].append(w.values.get(k))
    out: dict[str, Series] = {}
    for k in keys:
        series = with_gaps(xs, ys[k], step, lengths)
        out[k] = downsample_minmax(series, max_points) if max_points else series
    return out


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


def _dt(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


def stored_query_json(
    q: StoredQuery, last_result_at: float | None = None, state: QueryState | None = None
) -> dict[str, object]:
    """The query as JSON; ``state`` (apm.query_state) gives ``state`` and ``reason`` (null
    when not given)."""
    return {
        "id": q.id,
        "text": q.text,
        # FROM: the server globs, and the host-tag entries (key:glob) unioned with them;
        # WHERE: the tag conditions all required; group_by: the BY tag keys.
        "servers": list(q.query.servers),
        "tags": [t.text for t in q.query.tags],
        "where": [c.text for c in q.query.where],
        "metric": q.query.metric,
        "window_seconds": q.query.window_seconds,
        "functions": [f.key for f in q.query.functions],
        # BY server: one series per server (read with ?server=); top: its ranking, or null.
        "by_server": q.query.by_server,
        "group_by": list(q.query.group_by),
        "top": None
        if q.query.top is None
        else {
            "n": q.query.top.n,
            "function": q.query.top.function.key,
            "order": "bottom" if q.query.top.bottom else "top",
        },
        "paused": q.paused,
        "created_at": _dt(q.created_at),
        "updated_at": _dt(q.updated_at),
        "last_result_at": iso(last_result_at),
        "state": None if state is None else state.state,
        "reason": None if state is None else state.reason,
    }


def window_json(w: WindowResult) -> Mapping[str, object]:
    return {
        "window_start": w.window_start,
        "window_seconds": w.window_seconds,
        "values": w.values,
        "samples": w.samples,
        "updated_at": w.updated_at,
    }
