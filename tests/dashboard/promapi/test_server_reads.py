"""Reading a BY server query's servers (dashboard.promapi.server_reads): per window when that
is fewer reads and at most twice the rows, else per server; either way exactly each selected
server's windows in the span, every row read counted."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.query import WindowResult
from dashboard.promapi.evaluate import Deadline, LimitError
from dashboard.promapi.server_reads import by_window, planned_rows, read_servers
from tests.dashboard.promapi.test_routes import ResultRepo

pytestmark = pytest.mark.unit

T0 = 1_700_000_000
FOREVER = Deadline(float("inf"), time.monotonic)


def _run(op: str, call: object) -> object:
    return call()  # type: ignore[operator]


def test_the_choice_between_a_read_a_window_and_a_read_a_server() -> None:
    span = (float(T0), T0 + 30.001)  # starts T0 .. T0 + 30: four windows
    ms = 1000 * T0
    assert by_window(10_000, span, servers=10, fleet=10) == [
        ms,
        ms + 10_000,
        ms + 20_000,
        ms + 30_000,
    ]
    assert by_window(10_000, span, servers=4, fleet=4) is None  # as many reads either way
    assert by_window(10_000, span, servers=10, fleet=21) is None  # > twice the rows wanted
    assert by_window(10_000, (T0 - 5.0, T0 + 5.0), servers=9, fleet=9) == [ms]  # aligned
    assert planned_rows(10_000, span, 10, 20, newest_until=ms + 10_000) == (2 + 1) * 20
    assert planned_rows(10_000, span, 10, 20) == 4 * 20
    assert planned_rows(10_000, span, 10, 21) == 10 * 4


@settings(max_examples=200, deadline=None)
@given(
    present=st.lists(
        st.lists(st.integers(0, 3).map(bool), min_size=12, max_size=12), min_size=1, max_size=30
    ),
    picked=st.lists(st.booleans(), min_size=30, max_size=30),
    lo=st.integers(-3, 12),
    length=st.integers(0, 14),
    newest=st.none() | st.integers(-4, 14),
)
def test_either_way_each_selected_server_gets_exactly_its_windows(
    present: list[list[bool]], picked: list[bool], lo: int, length: int, newest: int | None
) -> None:
    """All of each server's windows in the span; with ``newest_until``, of those starting by
    then at least the newest (a suffix); each row read counted."""
    repo = ResultRepo()
    rows = [
        WindowResult("q", float(T0 + 10 * i), 10, {"avg": float(n * 100 + i)}, 1, 1.0, f"s{n}")
        for n, windows in enumerate(present)
        for i, here in enumerate(windows)
        if here
    ]
    repo.add_windows(rows)
    fleet = [f"s{n}" for n, windows in enumerate(present) if any(windows)]
    servers = [s for s, keep in zip(fleet, picked, strict=False) if keep] or fleet[:1]
    span = (T0 + 10 * lo - 0.5, T0 + 10 * (lo + length) + 0.0)
    until = None if newest is None else (T0 + 10 * newest) * 1000
    spent: list[int] = []
    count = lambda: spent.append(1)  # noqa: E731
    got = read_servers(repo, _run, "q", servers, len(fleet), 10_000, span, count, FOREVER, until)  # type: ignore[arg-type]
    assert set(got) == set(servers)
    cut = until if until is not None else 10**15
    for s in servers:
        want = [w for w in rows if w.server == s and span[0] <= w.window_start < span[1]]
        before = [w for w in want if w.window_start * 1000 <= cut]
        kept = [w for w in got[s] if w.window_start * 1000 <= cut]
        assert got[s] == kept + [w for w in want if w.window_start * 1000 > cut]
        assert kept == before[len(before) - len(kept) :] and bool(kept) == bool(before)
    planned = planned_rows(10_000, span, len(servers), len(fleet), until)
    starts = by_window(10_000, span, len(servers), len(fleet))
    if starts is None:
        assert repo.window_reads == [] and len(repo.server_reads) == len(servers)
        assert len(spent) == repo.rows_read <= planned
        return
    assert repo.server_reads == [] and len(repo.window_reads) < len(servers)
    assert len(spent) == repo.rows_read
    assert repo.rows_read <= len(starts) * len(fleet)


def test_the_look_back_is_read_newest_first_until_every_server_has_a_window() -> None:
    """Then the range's windows; a few servers still without one are read on their own."""
    repo = ResultRepo()
    repo.add_windows(
        [
            WindowResult("q", float(T0 + 10 * i), 10, {"avg": float(i)}, 1, 1.0, f"s{n:02}")
            for n in range(20)
            for i in range(10)
            if not (n == 0 and i in (4, 5))  # s00 misses the look-back's two newest windows
        ]
    )
    servers = [f"s{n:02}" for n in range(20)]
    until = (T0 + 50) * 1000  # starts by T0 + 50: the look-back; T0 + 60 to T0 + 90 after it
    got = read_servers(
        repo, _run, "q", servers, 20, 10_000, (T0, T0 + 90.001), lambda: None, FOREVER, until
    )  # type: ignore[arg-type]
    # The newest look-back window, then s00 alone over the rest of the look-back.
    assert repo.window_reads == [("q", float(T0 + 10 * i)) for i in (5, 6, 7, 8, 9)]
    assert repo.server_reads == [("q", "s00")]
    assert [w.window_start - T0 for w in got["s00"]] == [0, 10, 20, 30, 60, 70, 80, 90]
    assert [w.window_start - T0 for w in got["s01"]] == [50, 60, 70, 80, 90]
    # Most servers without a window in the newest: the look-back a window at a time.
    repo = ResultRepo()
    repo.add_windows(
        [
            WindowResult("q", float(T0 + 10 * i), 10, {"avg": float(i)}, 1, 1.0, f"s{n:02}")
            for n in range(20)
            for i in range(10)
            if not (n < 15 and i in (4, 5))
        ]
    )
    got = read_servers(
        repo, _run, "q", servers, 20, 10_000, (T0, T0 + 90.001), lambda: None, FOREVER, until
    )  # type: ignore[arg-type]
    assert repo.window_reads == [("q", float(T0 + 10 * i)) for i in (5, 4, 3, 6, 7, 8, 9)]
    assert repo.server_reads == []
    assert [w.window_start - T0 for w in got["s00"]] == [30, 60, 70, 80, 90]


def test_the_budget_stops_a_read() -> None:
    repo = ResultRepo()
    repo.add_windows([WindowResult("q", float(T0), 10, {}, 1, 1.0, f"s{n}") for n in range(5)])

    def spend() -> None:
        raise LimitError("past the budget")

    with pytest.raises(LimitError):
        read_servers(repo, _run, "q", ["s1"], 5, 10_000, (T0, T0 + 10.0), spend, FOREVER)  # type: ignore[arg-type]
