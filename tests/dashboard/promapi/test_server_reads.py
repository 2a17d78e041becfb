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
    assert by_window(10_000, span, servers=10, fleet=10) == [T0, T0 + 10, T0 + 20, T0 + 30]
    assert by_window(10_000, span, servers=4, fleet=4) is None  # as many reads either way
    assert by_window(10_000, span, servers=10, fleet=21) is None  # > twice the rows wanted
    assert by_window(10_000, (T0 - 5.0, T0 + 5.0), servers=9, fleet=9) == [T0]  # aligned
    assert planned_rows(10_000, span, 10, 20) == 4 * 20
    assert planned_rows(10_000, span, 10, 21) == 10 * 4


@settings(max_examples=150, deadline=None)
@given(
    present=st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=1, max_size=30),
    picked=st.lists(st.booleans(), min_size=30, max_size=30),
    lo=st.integers(-3, 12),
    length=st.integers(0, 14),
    newest=st.booleans(),
)
def test_either_way_each_selected_server_gets_exactly_its_windows(
    present: list[list[bool]], picked: list[bool], lo: int, length: int, newest: bool
) -> None:
    """All of each server's windows in the span; with ``newest``, at least its newest."""
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
    spent: list[int] = []
    count = lambda: spent.append(1)  # noqa: E731
    got = read_servers(repo, _run, "q", servers, len(fleet), 10_000, span, count, FOREVER, newest)  # type: ignore[arg-type]
    want = {
        s: [w for w in rows if w.server == s and span[0] <= w.window_start < span[1]]
        for s in servers
    }
    if newest:  # a suffix of each server's windows, its newest included
        assert {s: rows[len(rows) - len(got[s]) :] for s, rows in want.items()} == got
        assert all(bool(got[s]) == bool(want[s]) for s in servers)
    else:
        assert got == want
    assert len(spent) == repo.rows_read <= planned_rows(10_000, span, len(servers), len(fleet))
    if by_window(10_000, span, len(servers), len(fleet)) is None:
        assert repo.window_reads == [] and len(repo.server_reads) == len(servers)
    else:
        assert repo.server_reads == [] and len(repo.window_reads) < len(servers)
        if newest and all(w for w in want.values()):  # stopped at the oldest newest window
            oldest = min(rows[-1].window_start for rows in want.values())
            assert min(start for _, start in repo.window_reads) == oldest


def test_the_budget_stops_a_read() -> None:
    repo = ResultRepo()
    repo.add_windows([WindowResult("q", float(T0), 10, {}, 1, 1.0, f"s{n}") for n in range(5)])

    def spend() -> None:
        raise LimitError("past the budget")

    with pytest.raises(LimitError):
        read_servers(repo, _run, "q", ["s1"], 5, 10_000, (T0, T0 + 10.0), spend, FOREVER)  # type: ignore[arg-type]
