"""A fleet chart's read at the resolution its range needs (dashboard/tiered.py): which rows come
back for 1 h, 24 h and 30 d on the real Cassandra (tier rows written through the repository),
the live edge and the time before the tier, and what the figure's hover and notes say."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.query import StoredQuery, WindowResult, parse
from dashboard.context import AppContext
from dashboard.pages.figures import figure_for
from dashboard.settings import DashboardSettings
from dashboard.tiered import Tiered, read_tiered
from tests.dashboard.fakes import FakeResults

HOUR, DAY = 3600, 86_400
POINTS = 600  # a chart of max_points 1200: 600 min/max columns
NOW = float(int(time.time() // HOUR) * HOUR + 1234)  # recent: tier reads stop at retention


def _q(qid: str, text: str = "FROM * SELECT cpu WINDOW 10s COMPUTE avg") -> StoredQuery:
    return StoredQuery(qid, parse(text))


def _rows(qid: str, start: float, end: float, step: int) -> list[WindowResult]:
    first = -(-start // step) * step
    return [
        WindowResult(qid, float(t), step, {"avg": float(step)}, 1, NOW)
        for t in range(int(first), int(end), step)
    ]


def _kinds(got: Tiered) -> list[tuple[int, int]]:
    """The rows as runs of (row length, how many)."""
    runs: list[tuple[int, int]] = []
    for r in got.rows:
        if runs and runs[-1][0] == r.window_seconds:
            runs[-1] = (r.window_seconds, runs[-1][1] + 1)
        else:
            runs.append((r.window_seconds, 1))
    return runs


@pytest.mark.integration
def test_ranges_read_the_coarsest_tier_with_the_live_edge_from_windows(repo: Any) -> None:
    qid = f"tiered-{uuid.uuid4().hex[:8]}"
    q = _q(qid)
    rolled_1m = (NOW // 60) * 60 - 60  # the open minute and the one just closed: not yet rolled
    rolled_1h = (NOW // HOUR) * HOUR  # the open hour: not yet rolled
    # The windows since two days ago, the 1 min tier for a day and a half (it began later:
    # the chart falls back to the windows before it), the 1 h tier for 40 days.
    repo.upsert_results(_rows(qid, NOW - 2 * DAY, NOW, 10))
    repo.upsert_tier("1m", _rows(qid, NOW - 1.5 * DAY, rolled_1m, 60))
    repo.upsert_tier("1h", _rows(qid, NOW - 40 * DAY, rolled_1h, HOUR))

    def read(tier: str | None, start: float, end: float) -> list[WindowResult]:
        return list(repo.read_results(qid, start, end, tier=tier))

    hour = read_tiered(read, q, NOW - HOUR, NOW, POINTS)
    assert hour.tier is None and _kinds(hour) == [(10, 360)] and hour.note() is None
    assert hour.label_at(NOW - 10) == "10 s windows"

    day = read_tiered(read, q, NOW - DAY, NOW, POINTS)
    assert day.tier == "1m" and day.rows[0].window_start >= NOW - DAY - 60
    live = int(-(-(NOW - rolled_1m) // 10))  # the windows after the tier's newest row
    assert _kinds(day) == [(60, int((rolled_1m - (NOW - DAY)) // 60) + 1), (10, live)]
    assert day.rows[-1].window_start == (NOW // 10) * 10  # the right edge stays live
    assert day.label_at(NOW - 30) == "10 s windows" and day.label_at(NOW - HOUR) == "1 min rollup"
    assert "showing the 1 min rollup" in (day.note() or "")

    before = read_tiered(read, q, NOW - 2 * DAY + 10, NOW, POINTS)  # 1m began 1.5 days ago
    runs = _kinds(before)
    assert [k for k, _ in runs] == [10, 60, 10]
    head, first_tier = before.rows[: runs[0][1]], before.rows[runs[0][1]]
    # The windows from the range's start up to the tier's oldest row, none overlapping it.
    assert NOW - 2 * DAY + 10 <= head[0].window_start < NOW - 2 * DAY + 20
    assert head[-1].window_start + 10 == first_tier.window_start == before.tier_from
    assert before.label_at(NOW - 1.9 * DAY) == "10 s windows"

    month = read_tiered(read, q, NOW - 30 * DAY, NOW, POINTS)
    assert month.tier == "1h" and month.label_at(NOW - 10 * DAY) == "1 h rollup"
    assert _kinds(month) == [(3600, 30 * 24), (10, int(-(-(NOW - rolled_1h) // 10)))]


@pytest.mark.integration
def test_a_range_the_tier_has_no_rows_for_shows_the_windows_and_says_why(repo: Any) -> None:
    qid = f"tiered-{uuid.uuid4().hex[:8]}"
    repo.upsert_results(_rows(qid, NOW - DAY, NOW, 10))

    def read(tier: str | None, start: float, end: float) -> list[WindowResult]:
        return list(repo.read_results(qid, start, end, tier=tier))

    got = read_tiered(read, _q(qid), NOW - DAY, NOW, POINTS)
    assert got.tier is None and len(got.rows) == DAY // 10
    assert got.note() == "showing 10 s windows: the 1 min rollup has no rows in this range yet"


@pytest.mark.unit
def test_the_figure_names_the_tier_in_its_hover_and_notes() -> None:
    q = _q("p")
    per = _q("s", "FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server")
    repo = FakeResults([q, per])
    end = 1_800_000_000.0
    repo.upsert_results(_rows("p", end - 600, end, 10))
    repo.upsert_tier("1m", _rows("p", end - DAY, end - 600, 60))
    ctx = AppContext(DashboardSettings(max_points=1200), repo, None, None)  # type: ignore[arg-type]
    fig, drawn = figure_for(ctx, [q], end - DAY, end)
    (trace,) = fig["data"]  # type: ignore[misc]
    assert set(trace["customdata"]) == {"1 min rollup", "10 s windows"}
    assert trace["customdata"][0] == "1 min rollup" and trace["customdata"][-1] == "10 s windows"
    assert "%{customdata}" in trace["hovertemplate"]
    assert drawn.notes[0].startswith("showing the 1 min rollup;")
    # A per-server chart of the same range stays on its windows and says why.
    _, drawn = figure_for(ctx, [per], end - DAY, end)
    assert drawn.notes[-1] == (
        "cpu per server: showing 10 s windows (per-server series have no rollup tiers yet)"
    )
    # An hour needs no tier: the hover says windows, and no note is added.
    fig, drawn = figure_for(ctx, [q], end - HOUR, end)
    assert set(fig["data"][0]["customdata"]) == {"10 s windows"}  # type: ignore[index]
    assert drawn.notes == []


@pytest.mark.unit
@given(
    start=st.integers(0, 60 * DAY),
    span=st.integers(1, 35 * DAY),
    tier_from=st.integers(0, 100 * DAY),
    tier_len=st.integers(0, 100 * DAY),
    windows_from=st.integers(0, 100 * DAY),
)
def test_rows_ascend_never_overlap_and_leave_no_window_out(
    start: int, span: int, tier_from: int, tier_len: int, windows_from: int
) -> None:
    """Whatever the tier holds: the rows ascend, no row starts inside the one before, and every
    window of the range outside the tier's rows is shown."""
    end, q = start + span, _q("h")
    stored = {"1m": 60, "1h": HOUR}
    reads: list[tuple[str | None, float, float]] = []

    def read(tier: str | None, lo: float, hi: float) -> list[WindowResult]:
        reads.append((tier, lo, hi))
        if tier is None:  # windows from windows_from on, kept a day here (7 by default)
            return _rows("h", max(lo, windows_from, end - DAY), hi, 10)
        step = stored[tier]
        return _rows("h", max(lo, tier_from), min(hi, tier_from + tier_len), step)

    got = read_tiered(read, q, start, end, POINTS)
    for a, b in zip(got.rows, got.rows[1:], strict=False):
        assert b.window_start >= a.window_start + a.window_seconds
    assert all(r.window_start < end for r in got.rows)
    shown = {r.window_start for r in got.rows if r.window_seconds == 10}
    for w in _rows("h", max(start, windows_from, end - DAY), end, 10):
        assert w.window_start in shown or got.tier_from <= w.window_start < got.tier_to
    # Bounded: at most one read of the tier and three of the windows (head, tail or all).
    assert sum(1 for t, _, _ in reads if t is not None) <= 1 and len(reads) <= 3
