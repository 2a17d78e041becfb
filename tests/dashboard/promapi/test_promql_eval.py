"""Evaluating a parsed expression at each step over raw samples (a fake source) against
hand-computed values: the instant selector's one-window look-back (a gap is no point), the
range selector's [t - r, t] with both ends, operators with a number (which drop the metric
name; a comparison filters and keeps the vector's value, ``bool`` gives 0/1)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from dashboard.promapi.budget import Samples, SamplesError
from dashboard.promapi.evaluate import Deadline, LimitError, TimedOut
from dashboard.promapi.promql_eval import LOOKBACK_MS, Raw, Steps, evaluate
from dashboard.promapi.promql_parse import parse_promql
from dashboard.promapi.promql_tree import Bare
from dashboard.promapi.selector import Constant, Selector

pytestmark = pytest.mark.unit

FOREVER = Deadline(math.inf, lambda: 0.0)
LABELS = {"__name__": "apm_query", "id": "q", "fn": "max"}
# 10 s windows ending at 10, 20, 30, 50, 60 s (the one ending at 40 s is missing)
RAW = Raw(LABELS, [10_000, 20_000, 30_000, 50_000, 60_000], [1.0, 2.0, 3.0, 5.0, 6.0])


def _run(
    text: str,
    times: range,
    lookback_ms: int = LOOKBACK_MS,
    bounds: tuple[int, int] | None = None,
    asked: list[range] | None = None,
    sub_ms: int = 0,
) -> Any:
    expr = parse_promql(text)
    assert not isinstance(expr, Selector | Constant | Bare)

    def source(selector: Selector, range_ms: int, own: range) -> list[Raw]:
        if asked is not None:
            asked.append(own)
        return [RAW] if selector.matches(LABELS) else []

    at = Steps(times, source, FOREVER, lookback_ms=lookback_ms, bounds=bounds)
    return evaluate(expr, replace(at, subquery_step_ms=sub_ms) if sub_ms else at)


STEPS = range(10_000, 70_001, 5_000)  # 10, 15, ... 70 s


def test_instant_selector_looks_back_five_minutes_both_ends_included() -> None:
    [(labels, values)] = _run('apm_query{id="q"} * 1', STEPS)
    assert labels == {"id": "q", "fn": "max"}  # arithmetic drops the metric name
    assert values == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0, 5.0, 5.0, 6.0, 6.0, 6.0]
    [(_, late)] = _run('apm_query{id="q"} * 1', range(359_000, 361_001, 1_000))
    assert late == [6.0, 6.0, None]  # the last sample at 60 s, seen until 360 s included


def test_lookback_delta_narrows_the_look_back() -> None:
    [(_, values)] = _run('apm_query{id="q"} * 1', STEPS, lookback_ms=5_000)
    assert values == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, None, None, 5.0, 5.0, 6.0, 6.0, None]


def test_range_includes_both_ends() -> None:
    [(labels, values)] = _run('count_over_time(apm_query{id="q"}[20s])', STEPS)
    assert labels == {"id": "q", "fn": "max"}
    # at 30 s: samples at 10, 20, 30; at 60 s: 50, 60 (40 is missing)
    assert values == [1.0, 1.0, 2.0, 2.0, 3.0, 2.0, 2.0, 1.0, 2.0, 1.0, 2.0, 2.0, 2.0]


def test_over_time_values_and_last_keeps_the_name() -> None:
    [(_, maxes)] = _run('max_over_time(apm_query{id="q"}[25s])', range(30_000, 60_001, 30_000))
    assert maxes == [3.0, 6.0]
    [(labels, last)] = _run('last_over_time(apm_query{id="q"}[15s])', range(45_000, 45_001))
    assert labels == LABELS and last == [3.0]
    [(_, q)] = _run('quantile_over_time(0.5, apm_query{id="q"}[1m])', range(60_000, 60_001))
    assert q == [3.0]  # 1, 2, 3, 5, 6


def test_a_range_with_no_sample_is_no_series() -> None:
    assert _run('sum_over_time(apm_query{id="q"}[5s])', range(42_000, 48_001, 1_000)) == []


def test_comparisons_filter_or_give_bool() -> None:
    [(labels, kept)] = _run('apm_query{id="q"} > 2', range(10_000, 60_001, 10_000))
    assert labels == LABELS and kept == [None, None, 3.0, 3.0, 5.0, 6.0]
    [(_, flipped)] = _run('2 < apm_query{id="q"}', range(10_000, 60_001, 10_000))
    assert flipped == kept  # the vector's value, not the number's
    [(labels, flags)] = _run('apm_query{id="q"} > bool 2', range(10_000, 60_001, 10_000))
    assert "__name__" not in labels and flags == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_number_on_the_left_keeps_its_place() -> None:
    [(_, values)] = _run('10 - apm_query{id="q"} ^ 2', range(20_000, 30_001, 10_000))
    assert values == [6.0, 1.0]


def test_aggregating_over_time() -> None:
    [(labels, values)] = _run(
        'sum by (fn) (avg_over_time(apm_query{id="q"}[10s]))', range(20_000, 60_001, 40_000)
    )
    assert labels == {"fn": "max"} and values == [1.5, 5.5]


def test_the_deadline_is_checked_while_evaluating() -> None:
    expr = parse_promql('max_over_time(apm_query{id="q"}[1m])')
    assert not isinstance(expr, Selector | Constant)
    past = Deadline(0.0, lambda: 1.0)
    with pytest.raises(TimedOut):
        evaluate(expr, Steps(STEPS, lambda s, r, t: [RAW], past))


def test_operators_between_vectors_match_and_are_bounded() -> None:
    [(labels, values)] = _run(
        'apm_query{id="q"} - apm_query{id="q"}', range(10_000, 40_001, 10_000)
    )
    assert labels == {"id": "q", "fn": "max"} and values == [0.0, 0.0, 0.0, 0.0]
    [(labels, values)] = _run(
        'apm_query{id="q"} and on(fn) max_over_time(apm_query{id="q"}[5s])',
        range(10_000, 40_001, 10_000),
    )
    assert labels == LABELS and values == [1.0, 2.0, 3.0, None]
    expr = parse_promql('apm_query{id="q"} or apm_query{id="q"}')
    assert not isinstance(expr, Selector | Constant)
    with pytest.raises(LimitError, match="1 series x 13 steps"):
        evaluate(expr, Steps(STEPS, lambda s, r, t: [RAW], FOREVER, max_points=12))


@pytest.mark.parametrize("offset_ms", [20_000, -15_000, 1])
def test_offset_evaluates_at_each_step_less_the_offset(offset_ms: int) -> None:
    """Each step's value is the unshifted expression's at ``t - offset``, at ``t``."""
    later = range(STEPS.start - offset_ms, STEPS.stop - offset_ms, STEPS.step)
    for text in ('apm_query{id="q"}{o} * 1', 'count_over_time(apm_query{id="q"}[20s]{o})'):
        asked: list[range] = []
        shifted = _run(text.replace("{o}", f" offset {offset_ms}ms"), STEPS, asked=asked)
        assert asked == [later]
        assert shifted == _run(text.replace("{o}", ""), later)
        assert shifted  # the test compares values


def test_at_evaluates_once_and_repeats_at_every_step() -> None:
    [(_, values)] = _run('apm_query{id="q"} @ 30 * 1', STEPS)
    assert values == [3.0] * len(STEPS)
    [(_, values)] = _run('apm_query{id="q"} @ 45 offset -5s * 1', STEPS)
    assert values == [5.0] * len(STEPS)  # at 50 s
    [(labels, counts)] = _run('count_over_time(apm_query{id="q"}[20s] @ 60)', STEPS)
    assert "__name__" not in labels and counts == [2.0] * len(STEPS)  # 50 and 60 s
    assert _run('max_over_time(apm_query{id="q"}[5s] @ 45)', STEPS) == []  # 40 s is missing


def test_at_start_and_end_are_the_querys() -> None:
    asked: list[range] = []
    [(_, values)] = _run(
        'apm_query{id="q"} @ end() - apm_query{id="q"} @ start()',
        range(10_000, 40_001, 10_000),
        bounds=(10_000, 45_000),  # the steps stop at 40 s; end() is the query's end
        asked=asked,
    )
    assert asked == [range(45_000, 45_001), range(10_000, 10_001)]
    assert values == [2.0] * 4  # 3 - 1


def test_at_repeats_are_charged_to_the_samples_budget() -> None:
    """One series @ 30 is read at one step and repeated at all 13: 12 more samples."""
    expr = parse_promql('sum(apm_query{id="q"} @ 30)')
    assert not isinstance(expr, Selector | Constant | Bare)
    with pytest.raises(SamplesError):
        evaluate(expr, Steps(STEPS, lambda s, r, t: [RAW], FOREVER, charge=Samples(11).spend))
    evaluate(expr, Steps(STEPS, lambda s, r, t: [RAW], FOREVER, charge=Samples(12).spend))


def test_absent_is_one_where_the_vector_has_no_point() -> None:
    [(labels, values)] = _run('absent(apm_query{id="q", fn="max"})', STEPS, lookback_ms=5_000)
    assert labels == {"id": "q", "fn": "max"}  # the = matchers', never __name__
    assert values == [None] * 6 + [1.0, 1.0] + [None] * 4 + [1.0]  # 40, 45, 70 s
    assert _run('absent(apm_query{id="q"})', STEPS) == []  # a point at every step
    [(labels, values)] = _run('absent(sum(apm_query{id="other"}))', STEPS)
    assert labels == {} and values == [1.0] * len(STEPS)


def test_absent_over_time_is_one_where_the_range_has_no_sample() -> None:
    [(labels, values)] = _run('absent_over_time(apm_query{id="q", fn=~"m.*"}[5s])', STEPS)
    assert labels == {"id": "q"}
    assert values == [None] * 6 + [1.0, 1.0] + [None] * 4 + [1.0]  # [35, 40], [40, 45], [65, 70]
    [(_, values)] = _run('absent_over_time(apm_query{id="q"}[5s] offset -10s)', STEPS)
    assert values == [None] * 4 + [1.0, 1.0] + [None] * 4 + [1.0, 1.0, 1.0]


def _at(t: int) -> float | None:
    """The instant selector's value at ``t`` (5-minute look-back)."""
    rows = _run('apm_query{id="q"} * 1', range(t, t + 1))
    return rows[0][1][0] if rows else None


@pytest.mark.parametrize(("fn", "agg"), [("max", max), ("count", len), ("last", lambda v: v[-1])])
def test_a_subquery_is_the_expression_at_each_aligned_step_in_its_range(fn: str, agg: Any) -> None:
    """At each step ``t``, ``fn_over_time(x[30s:10s])`` is ``fn`` of ``x`` at the multiples
    of 10 s in ``[t - 30s, t]``, computed here one instant at a time."""
    times = range(0, 100_001, 7_000)
    [(labels, values)] = _run(f'{fn}_over_time(apm_query{{id="q"}}[30s:10s])', times)
    expected: list[float | None] = []
    for t in times:
        inner = [_at(k) for k in range(-(-(t - 30_000) // 10_000) * 10_000, t + 1, 10_000)]
        found = [v for v in inner if v is not None]
        expected.append(float(agg(found)) if found else None)
    assert values == expected and any(v is not None for v in values)
    assert ("__name__" in labels) == (fn == "last")  # last_over_time keeps it, as Prometheus


def test_a_subquery_without_a_step_takes_the_default() -> None:
    [(_, one)] = _run('count_over_time(apm_query{id="q"}[2m:])', range(60_000, 60_001))
    assert one == [1.0]  # at -60, 0 and 60 s: only 60 s has a point
    [(_, three)] = _run(
        'count_over_time(apm_query{id="q"}[2m:])', range(60_000, 60_001), sub_ms=20_000
    )
    assert three == [3.0]  # at 20, 40 and 60 s (and -60 ... 0 without)


def test_a_subquery_with_offset_at_and_inside_an_expression() -> None:
    text = 'max_over_time(sum(apm_query{id="q"})[30s:10s]{o})'
    [(_, plain)] = _run(text.replace("{o}", ""), range(50_000, 60_001, 10_000))
    [(_, moved)] = _run(text.replace("{o}", " offset 10s"), range(60_000, 70_001, 10_000))
    assert moved == plain == [5.0, 6.0]
    [(_, fixed)] = _run(text.replace("{o}", " @ 40"), STEPS)
    assert fixed == [3.0] * len(STEPS)  # at 10 ... 40 s: 1, 2, 3, 3
    [(_, absent)] = _run('absent_over_time(apm_query{id="q"}[5s:5s])', STEPS, lookback_ms=1)
    # points only at the window ends (a 1 ms look-back): none at 35, 40, 45, 65, 70 s
    assert absent == [None] * 6 + [1.0, 1.0] + [None] * 4 + [1.0]


def test_a_subquery_is_bounded_in_points_before_it_is_evaluated() -> None:
    asked: list[range] = []
    with pytest.raises(LimitError, match="the subquery evaluates its expression at 86400001"):
        _run('max_over_time(apm_query{id="q"}[1d:1ms])', range(60_000, 60_001), asked=asked)
    assert asked == []  # nothing read
    nested = 'max_over_time(max_over_time(apm_query{id="q"}[1m:1s])[1d:1s])'
    with pytest.raises(LimitError, match="86461 steps"):  # 1 d and the 60 s of STEPS
        expr = parse_promql(nested)
        assert not isinstance(expr, Selector | Constant | Bare)
        evaluate(expr, Steps(STEPS, lambda s, r, t: [RAW], FOREVER, max_points=50_000))
