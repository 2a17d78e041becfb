"""The JVM operator's exact fixed-point conversion (``Partials.fixed``, whose fast way is
``FixedPoint``) against Spark's own ``try_cast(text AS decimal(38,18))`` of the same values'
text, the ingest's shortest ``repr`` (docs/aggregator.md, "Sums"): per value and summed, and
the documented fallback (no exact value beyond 10^20 or past 18 decimals) on the same cases."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.integration

_EDGES = [
    0.0,
    -0.0,
    5e-324,  # the smallest subnormal
    2.2250738585072014e-308,  # the smallest normal
    1e-18,
    5e-19,
    1e-19,
    1.2345678901234567e-5,  # more than 18 decimals
    0.30000000000000004,
    99999999999999.98,
    9.999999999999998e19,  # the largest double below 10^20
    1e20,
    -1e20,
    2.82879384806159e17,
    1.7976931348623157e308,
]


def _short(digits: int, exponent: int) -> float:
    return float(f"{digits}e{exponent}")


_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e21, max_value=1e21),
    st.builds(_short, st.integers(-(10**15), 10**15), st.integers(-22, 6)),
    st.integers(0, 2**52 - 1).map(lambda m: struct.unpack("<d", struct.pack("<q", m))[0]),
    st.sampled_from(_EDGES),
)


def _spark_fixed(spark, values: list[float]) -> list[Decimal | None]:
    """Spark's cast of each value's text, kept only where it converts back to the double."""
    frame = spark.createDataFrame(
        [(i, repr(v), v) for i, v in enumerate(values)], "i int, t string, v double"
    )
    rows = (
        frame.selectExpr(
            "i",
            "CASE WHEN CAST(try_cast(t AS decimal(38,18)) AS double) = v "
            "THEN try_cast(t AS decimal(38,18)) END AS fixed",
        )
        .orderBy("i")
        .collect()
    )
    return [r["fixed"] for r in rows]


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(_values, min_size=50, max_size=200))
def test_the_exact_sum_equals_sparks_cast_of_the_text(spark, values):
    jvm = spark._jvm.io.apm.aggregator.Partials
    ours = [jvm.fixed(float(v)) for v in values]
    theirs = _spark_fixed(spark, [*values, *_EDGES])[: len(values)]
    assert [None if x is None else Decimal(x) for x in ours] == theirs
    exact = [x for x in theirs if x is not None]
    # The sum the aggregation adds (try_sum of the partials): the same decimal; a window with
    # a value that has no exact form falls back to the float sum (n_fixed < n).
    assert sum((Decimal(x) for x in ours if x is not None), Decimal(0)) == sum(exact, Decimal(0))
    for v, x in zip(values, ours, strict=True):
        if x is not None:
            assert float(Decimal(x)) == v and abs(v) < 1e20
        else:
            assert abs(v) >= 1e20 or (
                math.isfinite(v) and Decimal(repr(v)).as_tuple().exponent < -18
            )


def _texts(v: float) -> list[str]:
    """Texts a producer may write for ``v``: the ingest's shortest repr, and longer forms of
    the same value (trailing zeros, a plus sign, another exponent)."""
    text = repr(v)
    out = [text]
    if "e" not in text and "inf" not in text and "nan" not in text:
        out.append(text + "000" if "." in text else text + ".0")
        if not text.startswith("-"):
            out.append("+" + text)
    if "e" in text:
        mantissa, exponent = text.split("e")
        out.append(f"{mantissa}E{int(exponent):+04d}")
    return out


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(_values, min_size=50, max_size=200))
def test_the_exact_value_from_the_text_is_sparks_cast_of_the_shortest_text(spark, values):
    """v4: the operator takes a sample's exact value from its line's digits where it can
    (``Digits``) and adds 128-bit integers; the result is the same decimal as Spark's cast of
    the double's shortest text, whatever form of the same value the line had."""
    jvm = spark._jvm.io.apm.aggregator.Partials
    theirs = _spark_fixed(spark, [*values, *_EDGES])[: len(values)]
    for v, want in zip(values, theirs, strict=True):
        for text in _texts(v):
            if float(text) != v:
                continue
            got = jvm.exact(float(v), bytearray(text.encode()))
            assert (None if got is None else Decimal(got)) == want, text


def test_the_documented_fallback_cases(spark):
    jvm = spark._jvm.io.apm.aggregator.Partials
    assert jvm.fixed(1e20) is None and jvm.fixed(-1e20) is None
    assert jvm.fixed(1.2345678901234567e-5) is None
    assert jvm.fixed(5e-324) is None
    assert Decimal(jvm.fixed(-0.0)) == 0
    assert Decimal(jvm.fixed(9.999999999999998e19)) == Decimal("99999999999999980000")
    assert _spark_fixed(spark, _EDGES) == [
        None if x is None else Decimal(x) for x in (jvm.fixed(v) for v in _EDGES)
    ]
