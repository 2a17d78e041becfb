"""The alerting cost bench measures the cycles it names: at a small scale, the first cycle folds
the backfilled windows, the steady ones change no state, the last one changes every rule's."""

from __future__ import annotations

import pytest

from bench import alerting_cost

pytestmark = pytest.mark.unit


def test_the_cycles_are_what_they_say(monkeypatch):
    monkeypatch.setattr(alerting_cost, "RULES", 20)
    monkeypatch.setattr(alerting_cost, "QUERIES", 4)
    cost = alerting_cost.cost_in_memory()
    first, steady, last = cost["first"][0], cost["steady"][0], cost["all resolve"][0]
    assert (first.windows, first.history_rows) == (20 * 60, 20 * 2)  # pending, then firing
    assert (steady.windows, steady.history_rows) == (20, 0)
    assert (last.windows, last.history_rows, last.states) == (20, 20, {"normal": 21})
    # Every rule's row changed in substance; the meta-alert's did not (written only when its
    # refresh period, which depends on the wall clock, ends in this cycle).
    assert last.state_rows in (20, 21)
    table = alerting_cost.rows([("in memory", cost)])
    assert [r[0] for r in table] == [
        "20 rules / 4 queries, in memory, first",
        "20 rules / 4 queries, in memory, steady (median of 3)",
        "20 rules / 4 queries, in memory, all resolve",
    ]
    assert table[2][2] == f"20 / {last.state_rows}" and str(table[2][3]).startswith("plan ")
