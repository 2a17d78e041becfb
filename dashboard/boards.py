"""Saved dashboards: a named grid of panels over stored queries, with one time range, one live
refresh interval and one server filter for all of them. :func:`parse_board` is the one path
from untrusted JSON (the API's create, update and import, the page's forms) to a
:class:`Board`: every field is checked and bounded, every refusal is a :class:`BoardError`
naming the field (``panels[3].queries[0]``), answered as a 422.

A panel's chart is ``lines`` (each query's functions over the range), ``stat`` (the newest
window's value of each function) or ``table`` (the newest window's values, one row per query
and function: the top-N table shows per-server rows once per-server series exist; until
then it says so on the panel)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from apm.query_glob import GlobError, check

__all__ = [
    "CHARTS",
    "EXPORT_VERSION",
    "GRID_COLUMNS",
    "MAX_NAME_CHARS",
    "MAX_PANELS",
    "MAX_QUERIES_PER_PANEL",
    "RANGES",
    "Board",
    "BoardError",
    "Panel",
    "export_json",
    "parse_board",
]

MAX_PANELS = 50
MAX_QUERIES_PER_PANEL = 8
MAX_NAME_CHARS = 200  # a dashboard's name and a panel's title
MAX_QUERY_ID_CHARS = 128  # as dashboard.api: stored ids are uuid4 strings
MAX_REFRESH_SECONDS = 3600
GRID_COLUMNS = 12
MAX_GRID_ROW = 1000
MAX_PANEL_HEIGHT = 12
CHARTS = ("lines", "stat", "table")
RANGES = {
    "15m": 900,
    "1h": 3600,
    "6h": 21_600,
    "24h": 86_400,
    "7d": 604_800,
    "30d": 2_592_000,  # read from the 1 h rollup tier (dashboard.tiered)
}
EXPORT_VERSION = 1
_PANEL_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_BOARD_KEYS = {"name", "panels", "time_range", "refresh_seconds", "server_filter"}
_IMPORT_KEYS = _BOARD_KEYS | {"apm_dashboard", "id", "created_at", "updated_at"}
_PANEL_KEYS = {"id", "title", "queries", "chart", "x", "y", "w", "h"}


class BoardError(ValueError):
    """A refused dashboard: ``detail`` says why, ``at`` names the field."""

    def __init__(self, detail: str, at: str) -> None:
        super().__init__(detail)
        self.detail, self.at = detail, at


@dataclass(frozen=True)
class Panel:
    id: str
    title: str
    queries: tuple[str, ...]
    chart: str = "lines"
    x: int = 0
    y: int = 0
    w: int = 6
    h: int = 4

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "queries": list(self.queries),
            "chart": self.chart,
            "x": self.x,
            "y": self.y,
            "w": self.w,
            "h": self.h,
        }


@dataclass(frozen=True)
class Board:
    name: str
    panels: tuple[Panel, ...] = ()
    time_range: str = "1h"
    refresh_seconds: int = 10  # 0: no live refresh
    server_filter: str = "*"
    id: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    shared: bool = field(default=False, compare=False)  # a share link exists

    def body(self) -> dict[str, Any]:
        """What is stored (and exported) besides the id and the times."""
        return {
            "name": self.name,
            "panels": [p.to_dict() for p in self.panels],
            "time_range": self.time_range,
            "refresh_seconds": self.refresh_seconds,
            "server_filter": self.server_filter,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            **self.body(),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "shared": self.shared,
        }

    def with_panels(self, panels: list[Panel]) -> Board:
        return replace(self, panels=tuple(panels))


def export_json(board: Board) -> dict[str, Any]:
    """The document ``parse_board(..., importing=True)`` reads back."""
    return {"apm_dashboard": EXPORT_VERSION, **board.body()}


def _text(value: object, at: str, what: str, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise BoardError(f"{what} must be a string", at)
    value = value.strip()
    if not value and not empty_ok:
        raise BoardError(f"{what} must not be empty", at)
    if len(value) > MAX_NAME_CHARS:
        raise BoardError(f"{what} is at most {MAX_NAME_CHARS} characters", at)
    if not value.isprintable():
        raise BoardError(f"{what} must be printable text (no control characters)", at)
    return value


def _int(raw: Mapping[str, object], key: str, at: str, low: int, high: int, default: int) -> int:
    value = raw.get(key, default)
    # bool is an int in Python; true as a grid column is a mistake, not 1.
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        where = f"{at}.{key}" if at else key
        raise BoardError(f"'{key}' must be a whole number from {low} to {high}", where)
    return value


def _query_ids(value: object, at: str, known: Collection[str] | None) -> tuple[str, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_QUERIES_PER_PANEL:
        raise BoardError(
            f"'queries' must be a list of 1 to {MAX_QUERIES_PER_PANEL} stored query ids", at
        )
    out: list[str] = []
    for j, qid in enumerate(value):
        where = f"{at}[{j}]"
        if not isinstance(qid, str) or not qid or len(qid) > MAX_QUERY_ID_CHARS:
            raise BoardError(f"a query id is a string of 1 to {MAX_QUERY_ID_CHARS} chars", where)
        if not qid.isprintable():
            raise BoardError("a query id must be printable", where)
        if known is not None and qid not in known:
            raise BoardError(
                f"no stored query {qid!r} (deleted, or from another installation?)", where
            )
        if qid not in out:
            out.append(qid)
    return tuple(out)


def _panel(raw: object, i: int, known: Collection[str] | None, row: int) -> Panel:
    at = f"panels[{i}]"
    if not isinstance(raw, dict):
        raise BoardError("a panel must be a JSON object", at)
    if unknown := sorted(set(raw) - _PANEL_KEYS, key=str)[:5]:
        raise BoardError(f"unknown panel field(s) {unknown}; known: {sorted(_PANEL_KEYS)}", at)
    pid = raw.get("id", f"p{i + 1}")
    if not isinstance(pid, str) or not _PANEL_ID.fullmatch(pid):
        raise BoardError("a panel id is 1 to 32 of A-Z a-z 0-9 _ -", f"{at}.id")
    chart = raw.get("chart", "lines")
    if chart not in CHARTS:
        raise BoardError(f"'chart' must be one of {', '.join(CHARTS)}", f"{at}.chart")
    w = _int(raw, "w", at, 1, GRID_COLUMNS, 6)
    x = _int(raw, "x", at, 0, GRID_COLUMNS - 1, 0 if "x" in raw else (i % 2) * 6)
    if x + w > GRID_COLUMNS:
        raise BoardError(f"x + w must be at most {GRID_COLUMNS} (the grid's columns)", f"{at}.w")
    return Panel(
        id=pid,
        title=_text(raw.get("title", ""), f"{at}.title", "a panel title", empty_ok=True),
        queries=_query_ids(raw.get("queries"), f"{at}.queries", known),
        chart=str(chart),
        x=x,
        y=_int(raw, "y", at, 0, MAX_GRID_ROW, row),
        w=w,
        h=_int(raw, "h", at, 1, MAX_PANEL_HEIGHT, 4),
    )


def parse_board(
    raw: object,
    known: Collection[str] | None = None,
    *,
    importing: bool = False,
    name: str | None = None,
) -> Board:
    """The board ``raw`` describes, or a :class:`BoardError`. ``known``: the stored query ids
    (None: not checked). ``importing`` also accepts an export's own keys; ``name`` replaces
    the document's name (an import under another name)."""
    if not isinstance(raw, dict):
        raise BoardError("a dashboard must be a JSON object", "body")
    allowed = _IMPORT_KEYS if importing else _BOARD_KEYS
    if unknown := sorted(set(raw) - allowed, key=str)[:5]:
        raise BoardError(f"unknown field(s) {unknown}; known: {sorted(allowed)}", "body")
    if importing and raw.get("apm_dashboard", EXPORT_VERSION) != EXPORT_VERSION:
        raise BoardError(f"'apm_dashboard' must be {EXPORT_VERSION}", "apm_dashboard")
    panels = raw.get("panels", [])
    if not isinstance(panels, list):
        raise BoardError("'panels' must be a list", "panels")
    # Counted before any panel is read: 10,000 panels cost one comparison.
    if len(panels) > MAX_PANELS:
        raise BoardError(
            f"a dashboard has at most {MAX_PANELS} panels, this one has {len(panels)}", "panels"
        )
    parsed = [_panel(p, i, known, (i // 2) * 4) for i, p in enumerate(panels)]
    ids = [p.id for p in parsed]
    if len(set(ids)) != len(ids):
        dup = next(i for i, p in enumerate(ids) if p in ids[:i])
        raise BoardError(f"two panels have the id {ids[dup]!r}", f"panels[{dup}].id")
    time_range = raw.get("time_range", "1h")
    if not isinstance(time_range, str) or time_range not in RANGES:
        raise BoardError(f"'time_range' must be one of {', '.join(RANGES)}", "time_range")
    refresh = _int(raw, "refresh_seconds", "", 0, MAX_REFRESH_SECONDS, 10)
    server_filter = _text(raw.get("server_filter", "*"), "server_filter", "the server filter")
    try:
        check(server_filter)
    except GlobError as exc:
        raise BoardError(
            f"server filter: {exc.message} (at {exc.offset})", "server_filter"
        ) from None
    return Board(
        name=_text(name if name is not None else raw.get("name"), "name", "the name"),
        panels=tuple(parsed),
        time_range=str(time_range),
        refresh_seconds=refresh,
        server_filter=server_filter,
    )
