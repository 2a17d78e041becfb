"""The rollup tiers' mergeable histogram (apm/loghist.py): merge laws, the documented bound
against numpy, its size cap, its bytes (the same as io.apm.aggregator.LogHistogram's) and
the refusal of bad bytes."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from datasketches import kll_doubles_sketch
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.loghist import ALPHA, MAX_BUCKETS, MAX_BYTES, MIN_MAGNITUDE, LogHistogram

pytestmark = pytest.mark.unit

# Magnitudes within the cap's range (docs/storage.md: gamma^2048 ~ 6e17), both signs, zeros.
_values = st.one_of(
    st.floats(min_value=1e-6, max_value=1e9),
    st.floats(min_value=-1e9, max_value=-1e-6),
    st.just(0.0),
)
_lists = st.lists(_values, max_size=200)
_levels = st.floats(min_value=0.0, max_value=100.0)

# The same values as aggregator/jvm/src/test/java/io/apm/aggregator/LogHistogramTest.java,
# and the bytes both sides write for them.
CROSS_VALUES = [0.0, 1.0, 1.05, -3.0, 1e-12, 1.1, 1.1, 0.99, -2.9]
CROSS_HEX = "010200060200000100026c020101"
# With 1e300 too: the lowest positive buckets collapse (2,059 bytes, checked by CRC-32).
CROSS_COLLAPSED = (2059, 2926207054)


def _within(got: float, ordered: np.ndarray, p: float) -> bool:
    """The documented bound with exact windows: between the order statistics around
    r = (n - 1) p / 100, each widened by ALPHA (and MIN_MAGNITUDE, the zero bucket)."""
    r = (ordered.size - 1) * p / 100.0
    lo, hi = ordered[math.floor(r)], ordered[math.ceil(r)]
    slack = 1e-12 * max(abs(lo), abs(hi))  # the float error of the log and exp
    return (
        lo - ALPHA * abs(lo) - MIN_MAGNITUDE - slack
        <= got
        <= hi + ALPHA * abs(hi) + (MIN_MAGNITUDE + slack)
    )


@given(_lists, _lists, _lists)
def test_merge_is_associative_and_commutative(a, b, c):
    ha, hb, hc = LogHistogram.of(a), LogHistogram.of(b), LogHistogram.of(c)
    assert ha.merge(hb) == hb.merge(ha)
    assert ha.merge(hb).merge(hc) == ha.merge(hb.merge(hc))
    assert ha.merge(hb).merge(hc) == LogHistogram.of(a + b + c)


@given(st.lists(_lists, min_size=1, max_size=6), _levels)
def test_merged_percentiles_within_the_bound_of_numpy(parts, p):
    merged = LogHistogram()
    for part in parts:
        merged = merged.merge(LogHistogram.decode(LogHistogram.of(part).encode()))
    everything = np.sort(np.array([v for part in parts for v in part], dtype=np.float64))
    assert merged.count == everything.size
    if everything.size == 0:
        assert math.isnan(merged.percentile(p))
        return
    assert _within(merged.percentile(p), everything, p)


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), _levels)
def test_from_an_estimating_kll_sketch_within_the_composed_bound(seed, p):
    # A window's histogram is its KLL sketch's items with their weights (LogHistogram.java);
    # past k the rank is off by the sketch's rank error too (docs/storage.md, "The bound").
    values = np.random.default_rng(seed).lognormal(3, 1.5, 5_000)
    sketch = kll_doubles_sketch(200)
    for v in values:
        sketch.update(float(v))
    assert sketch.is_estimation_mode()
    items = list(sketch)
    hist = LogHistogram.of([i for i, _ in items], [int(w) for _, w in items])
    ordered = np.sort(values)
    # DataSketches' a-priori bound holds at 99% confidence for one rank: twice it, so that
    # a seed in the bound's 1% tail does not make the test flaky (the tail is sub-Gaussian).
    eps = 2 * sketch.normalized_rank_error(False)
    r = (ordered.size - 1) * p / 100.0
    lo = ordered[max(0, math.floor(r - eps * ordered.size))]
    hi = ordered[min(ordered.size - 1, math.ceil(r + eps * ordered.size))]
    assert hist.count == values.size
    assert lo * (1 - ALPHA) <= hist.percentile(p) <= hi * (1 + ALPHA)


def test_size_is_bounded_and_the_lowest_buckets_collapse():
    values = [10.0**e for e in np.linspace(-9, 300, 50_000)]
    hist = LogHistogram.of(values + [-v for v in values])
    assert len(hist.positive) <= MAX_BUCKETS and len(hist.negative) <= MAX_BUCKETS
    assert len(hist.encode()) <= MAX_BYTES
    assert hist.count == 2 * len(values)
    # The top keeps its accuracy; what is collapsed reads as the lowest kept bucket.
    assert hist.percentile(100) == pytest.approx(1e300, rel=ALPHA)
    smallest_positive = hist.at_rank(len(values))  # after every negative one
    assert smallest_positive == LogHistogram.value_of(min(hist.positive), 1) > 1e100


def test_the_bytes_the_java_side_writes_too():
    hist = LogHistogram.of(CROSS_VALUES)
    assert hist.encode().hex() == CROSS_HEX
    assert LogHistogram.decode(bytes.fromhex(CROSS_HEX)) == hist
    assert hist.zero == 2
    collapsed = LogHistogram.of([*CROSS_VALUES, 1e300]).encode()
    assert (len(collapsed), zlib.crc32(collapsed)) == CROSS_COLLAPSED


def test_empty_and_single():
    assert LogHistogram.decode(LogHistogram().encode()).count == 0
    assert LogHistogram.of([42.0]).percentile(99) == pytest.approx(42.0, rel=ALPHA)
    assert LogHistogram.of([-42.0]).percentile(1) == pytest.approx(-42.0, rel=ALPHA)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "version nothing"),
        (b"\x02\x00", "version 2"),
        (b"\x01", "truncated in its zero count"),
        (b"\x01\x00\x00", "truncated in its positive length"),
        (b"\x01" + b"\xff" * 11, "longer than 10 bytes"),
        (b"\x01\x00\x00\x81\x20", "4097 buckets"),
        (b"\x01\x00\xfe\xff\xff\x0f\x01\x01\x00\x00", "outside"),
        (LogHistogram.of([1.0]).encode() + b"\x00", "1 trailing bytes"),
        (b"\x01" + b"\xff" * 9 + b"\x01\x00\x00\x00\x00", "past 2\\^63"),
        (b"\x01" + b"\x00" * (MAX_BYTES + 1), "at most"),
    ],
)
def test_bad_bytes_are_refused_clearly(data, message):
    with pytest.raises(ValueError, match=message):
        LogHistogram.decode(data)


@given(st.binary(max_size=64))
def test_any_bytes_decode_or_raise_value_error(data):
    try:
        hist = LogHistogram.decode(data)
    except ValueError:
        return
    assert LogHistogram.decode(hist.encode()) == hist


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused(bad):
    with pytest.raises(ValueError, match="finite"):
        LogHistogram.of([1.0, bad])
