"""Per-server alerts: a threshold rule on a ``BY server`` query judges each server's series on
its own, one alert per server (instance = the server's name, label ``server``), with its own
state row, history, notices and resolution (alerting/evaluator.py folds each as it folds a
query's one series).

- **Which servers.** The servers with an alert row that is not *gone*, and every server with
  samples in a new window (one its rule's alerts had not evaluated yet). A new server's alert
  starts at its first window with samples (the windows before it are not "no data": it did not
  exist yet).
- **What a cycle reads.** One range of windows per rule, from the oldest open window of its
  servers to the newest complete one, read by window with every server of the window in one
  read, and of the older open windows only a share each cycle (alerting/server_reads.py): the
  reads grow with the windows, not the servers.
- **A server that stops reporting.** Its windows have no samples: after ``nodata_windows`` the
  rule's no-data policy applies to its alert alone (``keep``: the state stays, ``alert``:
  ``nodata`` and notified, ``ok``: normal). Once it has sent nothing for :func:`gone_after`
  seconds (an hour, as a ``server_silent`` rule takes a server as gone; at least the lateness,
  so no window that could still bring it back is open) its alert resolves (a resolution if it
  was notified), and its row is kept marked ``gone`` and no longer folded. A server that comes
  back with a newer window starts a new alert.
- **A query edited into or out of ``BY server``.** The alerts of the other kind resolve the
  same way (the query's one series, or every server's), and the new kind's start.
- **A deleted query.** Each server's alert goes to ``error`` as a plain rule's does.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Protocol

from alerting.machine import AlertState
from alerting.presence import RECENT_S
from apm.query import StoredQuery

__all__ = ["gone_after", "gone_row", "instances", "is_gone", "live", "per_server", "read_range"]

Row = dict[str, Any]


class Bounds(Protocol):
    def bounds(
        self, stored: StoredQuery | None, row: Row, now: float, body: dict[str, Any]
    ) -> tuple[int, float, float, float]: ...


def live(rows: dict[str, Row]) -> dict[str, Row]:
    """The alert rows of a rule's servers that are still evaluated (not gone)."""
    return {s: r for s, r in rows.items() if not r.get("gone")}


def per_server(stored: StoredQuery | None, rows: dict[str, Row]) -> bool:
    """Whether the rule's alerts are per server: its query is ``BY server``; a rule whose query
    was deleted keeps the kind of alerts it has (each goes to ``error``)."""
    if stored is not None:
        return stored.query.by_server
    return bool(live(rows))


def read_range(
    windows: Bounds, stored: StoredQuery | None, rows: dict[str, Row], now: float, body: Row
) -> tuple[int, float, float, float | None]:
    """The window size, the first and last window a per-server rule reads this cycle (from the
    oldest open window of its servers, or its backfill without any, to the newest that any of
    them evaluates) and the oldest window they all evaluated already (None: not all did)."""
    alive = live(rows).values()
    spans = [windows.bounds(stored, r, now, body) for r in alive]
    spans = spans or [windows.bounds(stored, {}, now, body)]
    done = [r.get("evaluated_through") for r in alive]
    oldest = min(float(d) for d in done if d is not None) if done and None not in done else None
    return spans[0][0], min(s[2] for s in spans), max(s[3] for s in spans), oldest


def instances(rows: dict[str, Row], seen: dict[str, float]) -> dict[str, Row]:
    """The servers to evaluate with their rows: the live ones, and each server with samples
    (``seen``: its first window with samples read this cycle) that has no live row; a server
    back after it was gone only with a window newer than its last one."""
    out = live(rows)
    for server, first in seen.items():
        old = rows.get(server)
        if server not in out and (old is None or first > float(old.get("seen") or 0.0)):
            out[server] = {"start": first}
    return dict(sorted(out.items()))


def gone_after(lateness_s: float) -> float:
    """Seconds without samples after which a server is taken as gone."""
    return max(RECENT_S, float(lateness_s))


def is_gone(row: Row, lateness_s: float) -> bool:
    through, seen = row.get("evaluated_through"), row.get("seen")
    return through is not None and seen is not None and through - seen >= gone_after(lateness_s)


def gone_row(row: Row, why: str) -> tuple[Row, AlertState]:
    """The row of an alert that ends (its server gone, or the query's kind changed) and its last
    state, ``normal`` for ``why`` in the window after its newest one (a window of its own, so
    its history row overwrites none): the evaluator records it and sends the resolution of what
    was notified."""
    latest = AlertState(**row["latest"]) if row.get("latest") else AlertState()
    at, ws = latest.window_end, float(row.get("window_seconds") or 0)
    end = AlertState("normal", why, None, at, None if at is None else at + ws, since=at)
    kept: Row = {k: row[k] for k in ("seen", "window_seconds", "evaluated_through") if k in row}
    return {**kept, "gone": True, "latest": asdict(end)}, end
