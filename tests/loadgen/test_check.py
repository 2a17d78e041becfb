import pytest

from apm.query import WindowResult, parse
from loadgen.check import compare
from loadgen.truth import TruthCollector

pytestmark = pytest.mark.unit


@pytest.fixture
def truth(make_fleet):
    fleet = make_fleet(servers=20, metrics=2)
    collector = TruthCollector(
        parse("FROM * SELECT cpu.util WINDOW 5s COMPUTE min, max, sum, avg, count, p99"), fleet
    )
    for ts in range(1_000_002, 1_000_015):
        collector.add(fleet.step(ts))
    return collector.document()


def _results(doc, changes=None):
    changes = changes or {}
    rows = []
    for w in doc["windows"]:
        values = dict(w["values"])
        values.update(changes.get(w["window_start"], {}))
        rows.append(WindowResult("q", w["window_start"], 5, values, w["samples"], 0.0))
    return rows


def test_identical_results_agree(truth):
    assert compare(truth, _results(truth)) == []


def test_each_kind_of_difference_is_reported(truth):
    first, second = (w["window_start"] for w in truth["windows"][:2])
    rows = _results(
        truth,
        {
            first: {"max": truth["windows"][0]["values"]["max"] + 2**-10},
            second: {"p99": truth["windows"][1]["values"]["p99"] + 0.5},
        },
    )
    rows[1] = rows[1]._replace(samples=rows[1].samples - 1)
    del rows[-1]
    problems = compare(truth, rows, percentile_tolerance=0.1)
    assert len(problems) == 4
    assert "max" in problems[0] and "samples" in problems[1] and "p99" in problems[2]
    assert "missing" in problems[3]
    assert len(compare(truth, rows, percentile_tolerance=1.0)) == 3
    # The partial last window can be left out of the check.
    assert len(compare(truth, rows, percentile_tolerance=1.0, complete_only=True)) == 2
