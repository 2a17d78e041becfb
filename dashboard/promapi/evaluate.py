"""From stored queries and their windows to Prometheus series and points.

Every function of every stored query is one series, labelled
``{__name__="apm_query", id, fn, metric, window}``; a ``BY server`` query has one such series
per server with results in the time asked, labelled ``server`` too (and no series without it).
A window covering ``[s, s + w)`` is the sample at its END, ``s + w``: the value at time ``t``
is that of the window that ended last at or before ``t``, and only while ``t`` is inside the
next window (``t - end < w``). That is Prometheus' model of a step (the newest sample at or
before it) with a look-back of exactly one window instead of 5 minutes, so a missing window is
a missing point, never the previous one repeated. (That is a bare selector's; selectors inside
an expression look back 5 minutes, :mod:`.promql_eval`.) A range query with ``step`` = the
window and ``start`` on a window end returns each stored window once, at its end.

Times are integer milliseconds inside (as in Prometheus), so steps and window ends compare
exactly.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from apm.query import StoredQuery, WindowResult, format_duration
from dashboard.promapi.selector import METRIC, Selector
from dashboard.promapi.shape import Point

__all__ = [
    "Deadline",
    "LimitError",
    "Series",
    "Servers",
    "TimedOut",
    "check_points",
    "label_sets",
    "matching",
    "points",
    "read_window",
    "select",
    "steps",
]


class LimitError(ValueError):
    """More series or points than the settings allow: 422 ``execution``."""


class TimedOut(RuntimeError):
    """The evaluation passed its deadline: 503 ``timeout``."""


def check_points(series: int, steps: int, max_points: int) -> None:
    """An answer of ``series`` x ``steps`` points within ``max_points``, before any read."""
    if series * steps > max_points:
        raise LimitError(
            f"{series} series x {steps} steps is more than {max_points} points "
            "(APM_DASHBOARD_PROM_MAX_POINTS); narrow the selector, shorten the range or "
            "raise the step"
        )


@dataclass(frozen=True)
class Deadline:
    at: float
    clock: Callable[[], float]

    def check(self) -> None:
        if self.clock() > self.at:
            raise TimedOut("query timed out in query execution")


@dataclass(frozen=True)
class Series:
    query: StoredQuery
    fn: str  # the result key: min, p99, p99.9
    labels: Mapping[str, str]
    server: str = ""  # a BY server query's series: its server (WindowResult.server)
    fleet: int = 0  # ... and how many servers its query has in the time asked


# A BY server query -> the servers with results in the time asked (one storage call).
Servers = Callable[[StoredQuery], Sequence[str]]


def label_sets(queries: Iterable[StoredQuery]) -> Iterator[Series]:
    for q in queries:
        for f in q.query.functions:
            labels = {
                "__name__": METRIC,
                "fn": f.key,
                "id": q.id,
                "metric": q.query.metric,
                "window": format_duration(q.query.window_seconds),
            }
            yield Series(q, f.key, labels)


def select(
    queries: Iterable[StoredQuery],
    selectors: Sequence[Selector],
    max_series: int,
    deadline: Deadline,
    servers: Servers = lambda _q: (),
    too_many: Callable[[], LimitError] | None = None,
) -> list[Series]:
    """The series any of ``selectors`` matches (the union, as ``match[]`` means), at most
    ``max_series`` of them (else ``too_many()``, by default the series limit's LimitError)."""
    out: list[Series] = []
    for series in matching(queries, selectors, deadline, servers):
        out.append(series)
        if len(out) > max_series:
            if too_many is not None:
                raise too_many()
            raise LimitError(
                f"the selector matches more than {max_series} series "
                "(APM_DASHBOARD_PROM_MAX_SERIES); narrow it, e.g. by id or server"
            )
    return out


def matching(
    queries: Iterable[StoredQuery],
    selectors: Sequence[Selector],
    deadline: Deadline,
    servers: Servers = lambda _q: (),
) -> Iterator[Series]:
    """The series any of ``selectors`` matches, one at a time. A ``BY server`` query's servers
    are listed only if a selector may match its other labels, once for all its functions,
    and matched against the ``server`` matchers before anything is read."""
    listed: dict[str, Sequence[str]] = {}
    for i, series in enumerate(label_sets(queries)):
        if i % 16 == 0:  # a regex over long values may take milliseconds a series
            deadline.check()
        if not series.query.query.by_server:
            if any(s.matches(series.labels) for s in selectors):
                yield series
            continue
        narrow = [s for s in selectors if _may_match(s, series.labels)]
        if not narrow:
            continue
        qid = series.query.id
        if qid not in listed:
            listed[qid] = servers(series.query)
        for n, name in enumerate(listed[qid]):
            if n % 256 == 255:
                deadline.check()
            labels = {**series.labels, "server": name}
            if any(s.matches(labels) for s in narrow):
                yield Series(series.query, series.fn, labels, name, len(listed[qid]))


def _may_match(selector: Selector, labels: Mapping[str, str]) -> bool:
    """Whether ``selector`` may match one of a BY server query's series: every matcher but
    those on ``server`` matches ``labels``."""
    return all(m.matches(labels.get(m.label, "")) for m in selector.matchers if m.label != "server")


def steps(start_ms: int, end_ms: int, step_ms: int) -> range:
    return range(start_ms, end_ms + 1, step_ms)


def read_window(window_ms: int, start_ms: int, end_ms: int) -> tuple[float, float]:
    """The [from, to) of window starts whose window can give a point in [start, end]: it ends
    after ``start - window`` and at or before ``end``."""
    lo = max(0, start_ms - 2 * window_ms + 1)
    return lo / 1000, (end_ms - window_ms + 1) / 1000


def points(
    windows: Sequence[WindowResult],
    query: StoredQuery,
    fns: Sequence[str],
    times: range,
    deadline: Deadline,
) -> dict[str, list[Point]]:
    """fn -> [(t, value)] for each step t that has a window (``windows`` ascend by start)."""
    seconds = query.query.window_seconds
    width = seconds * 1000
    # A window stored under an older definition of the query (another length) is not this
    # series' (as the dashboard's charts skip it).
    own = [w for w in windows if w.window_seconds == seconds]
    ends = [round(w.window_start * 1000) + width for w in own]
    out: dict[str, list[Point]] = {fn: [] for fn in fns}
    for n, t in enumerate(times):
        if n % 4096 == 0:
            deadline.check()
        i = bisect.bisect_right(ends, t) - 1
        if i < 0 or t - ends[i] >= width:
            continue
        values = own[i].values
        for fn in fns:
            v = values.get(fn)
            if v is not None:
                out[fn].append((t, v))
    return out
