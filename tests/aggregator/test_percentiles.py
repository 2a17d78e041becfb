"""The executors' percentiles (``io.apm.aggregator.Percentiles``, v4) against the reference rule
(``aggregator.quantiles.percentiles``, numpy's ``linear`` definition in exact mode) on the same
sketch bytes: equal to the bit while the sketch holds every value, and beyond it (estimation
mode, the Java and C++ sides of DataSketches reading the same sketch) within the sketch's own
rank error; and the evaluation path through Spark gives the same numbers."""

from __future__ import annotations

import numpy as np
import pytest
from datasketches import kll_doubles_sketch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aggregator.quantiles import KLL_K, percentiles

pytestmark = pytest.mark.integration

LEVELS = [0.01, 1.0, 12.5, 33.3, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99]
HUGE = 1.7e308


def _sketch(values: np.ndarray) -> bytes:
    kll = kll_doubles_sketch(KLL_K)
    for v in values:
        kll.update(float(v))
    return kll.serialize()


def _jvm(spark, sketch: bytes, levels: list[float], low: float, high: float) -> list[float]:
    gateway = spark.sparkContext._gateway
    array = gateway.new_array(gateway.jvm.double, len(levels))
    for i, p in enumerate(levels):
        array[i] = p
    return list(spark._jvm.io.apm.aggregator.Percentiles.of(bytearray(sketch), array, low, high))


_values = st.one_of(
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=300),
    st.lists(st.integers(-5, 5).map(float), min_size=1, max_size=300),  # ties
    st.lists(st.sampled_from([-HUGE, -1.0, 0.0, 2.5, HUGE]), min_size=1, max_size=40),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_values, st.lists(st.floats(0.001, 99.999), min_size=1, max_size=6))
def test_exact_mode_equals_the_reference_to_the_bit(spark, values, levels):
    arr = np.array(values)
    low, high = float(arr.min()), float(arr.max())
    sketch = _sketch(arr)
    assert _jvm(spark, sketch, levels, low, high) == percentiles(sketch, levels, low, high)


def test_beyond_k_the_two_sides_agree_within_the_rank_error(spark):
    rng = np.random.default_rng(4)
    values = np.round(rng.lognormal(3, 1.2, 5 * KLL_K) * 1024) / 1024
    sketch = _sketch(values)
    low, high = float(values.min()), float(values.max())
    got = _jvm(spark, sketch, LEVELS, low, high)
    want = percentiles(sketch, LEVELS, low, high)
    for p, a, b in zip(LEVELS, got, want, strict=True):
        lo = np.percentile(values, max(p - 0.05, 0.0))
        hi = np.percentile(values, min(p + 0.05, 100.0))
        assert lo <= a <= hi and lo <= b <= hi, (p, a, b)
    huge = _sketch(np.concatenate([values, [-HUGE, HUGE]]))
    assert all(np.isfinite(_jvm(spark, huge, LEVELS, -HUGE, HUGE)))


def test_the_evaluation_keeps_no_sketch_and_reads_each_querys_levels(spark):
    from aggregator.evaluate import evaluate
    from aggregator.plan import queries_frame
    from apm.query import StoredQuery, parse

    values = np.arange(1.0, 101.0)
    q = StoredQuery("q", parse("FROM * SELECT m WINDOW 10s COMPUTE p50, p99.9, max"))
    plain = StoredQuery("r", parse("FROM * SELECT m WINDOW 10s COMPUTE avg"))
    table = queries_frame(spark, [q, plain])
    batch = spark.createDataFrame(
        [
            (
                "q",
                10,
                1_700_000_010,
                100,
                None,
                100,
                float(values.sum()),
                1.0,
                100.0,
                _sketch(values),
            ),
            ("r", 10, 1_700_000_010, 100, None, 100, float(values.sum()), 1.0, 100.0, None),
        ],
        "query_id string, window_seconds int, window_end_s long, n long, fixed_sum decimal(38,18), "
        "n_fixed long, float_sum double, min double, max double, sketch binary",
    ).selectExpr("*", "timestamp_seconds(window_end_s) AS window_end")
    rows = {r["query_id"]: r for r in evaluate(batch, table).collect()}
    assert "sketch" not in rows["q"] and "levels" not in rows["q"]
    assert rows["q"]["percentiles"] == [np.percentile(values, 50.0), np.percentile(values, 99.9)]
    assert rows["r"]["percentiles"] is None
