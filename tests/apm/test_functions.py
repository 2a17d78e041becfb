"""The catalogue of query functions against numpy, and against every consumer that reads it:
the parser, the plan's query table, the evaluation, the load generator's truth and the checker.

The platform's values go through the aggregator's own evaluation path from a window summary
(``aggregator.evaluate.to_results``): n, min and max as Spark keeps them, the KLL sketch built
by the same DataSketches library at ``quantiles.KLL_K``, and the sum as the plan's fixed-point sum
gives it for these values (multiples of 2**-10: exact, so ``math.fsum``)."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from datasketches import kll_doubles_sketch

from aggregator.evaluate import to_results
from aggregator.plan import QUERY_SCHEMA, query_row
from aggregator.quantiles import KLL_K, levels, percentiles
from apm import functions
from apm.functions import CATALOGUE, SUMMARY_FIELDS, Spec, Summary
from apm.query import FUNCTION_NAMES, Function, Query, QueryError, StoredQuery, WindowResult, parse
from loadgen.check import compare
from loadgen.truth import aggregate

pytestmark = pytest.mark.unit

LEVELS = (0.01, 1.0, 12.5, 33.3, 50.0, 95.0, 99.0, 99.9, 99.99)


def _samples(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(rng.lognormal(3, 1.2, n) * 1024) / 1024  # ties included


def _functions(spec: Spec) -> list[Function]:
    if spec.param is None:
        return [Function(spec.name)]
    low, high = spec.param
    return [Function(spec.name, p) for p in LEVELS if low < p < high]


def _row(values: np.ndarray, query: Query, sketch: bool = True) -> dict[str, object]:
    """A window of ``query`` as ``evaluate`` hands it to ``to_results``: its percentiles are
    the reference rule's (``quantiles.percentiles``) on the sketch DataSketches builds, which
    tests/aggregator/test_quantiles.py holds the JVM's ``Percentiles`` equal to."""
    kll = kll_doubles_sketch(KLL_K)
    for v in values:
        kll.update(float(v))
    low, high = float(values.min()), float(values.max())
    return {
        "query_id": "q",
        "server": "",
        "window_seconds": 10,
        "window_start": 1_700_000_000,
        "n": int(values.size),
        "sum": math.fsum(values.tolist()),
        "min": float(values.min()),
        "max": float(values.max()),
        "percentiles": percentiles(kll.serialize(), levels(query), low, high) if sketch else None,
    }


def _platform(values: np.ndarray, fns: list[Function], sketch: bool = True) -> dict[str, float]:
    """What the aggregator's evaluation writes for a window holding ``values``."""
    query = parse(f"FROM * SELECT m WINDOW 10s COMPUTE {', '.join(f.text for f in fns)}")
    assert list(query.functions) == fns  # through the parser too
    [result] = to_results([_row(values, query, sketch)], {"q": query})  # type: ignore[list-item]
    return result.values


# --- (a) every entry against numpy, through the evaluation path ----------------------------


@pytest.mark.parametrize("name", list(CATALOGUE))
@pytest.mark.parametrize("n", [1, 2, 7, 1000, KLL_K])
def test_every_function_is_numpys_value_while_the_window_fits_the_sketch(name, n):
    fns = _functions(CATALOGUE[name])
    values = _samples(n, seed=n)
    got = _platform(values, fns)
    for f in fns:  # not merely close: the same float, exact and sketch-based alike
        assert got[f.key] == functions.truth(f, values), f.key


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_beyond_the_sketch_exact_functions_stay_exact_and_sketch_ones_within_their_rank_error(name):
    spec = CATALOGUE[name]
    fns = _functions(spec)
    values = _samples(3 * KLL_K, seed=11)
    got = _platform(values, fns)
    for f in fns:
        want = functions.truth(f, values)
        if spec.kind == "exact":
            assert spec.rank_error == 0.0
            assert got[f.key] == want, f.key
            continue
        assert spec.kind == "sketch" and f.p is not None and 0 < spec.rank_error <= 0.5
        low = spec.truth(values, max(f.p - spec.rank_error, 0.0))
        high = spec.truth(values, min(f.p + spec.rank_error, 100.0))
        assert low <= got[f.key] <= high, (f.key, low, got[f.key], high)


def test_the_truth_of_todays_functions_is_their_textbook_definition():
    values = _samples(501, seed=3)
    exact = sum(Fraction(v) for v in values.tolist())
    ordered = sorted(values.tolist())

    def linear(p: float) -> float:  # Hyndman & Fan type 7, numpy's default
        r = (len(ordered) - 1) * p / 100
        i = math.floor(r)
        return ordered[i] + (ordered[min(i + 1, len(ordered) - 1)] - ordered[i]) * (r - i)

    oracle = {
        "min": lambda p: ordered[0],
        "max": lambda p: ordered[-1],
        "count": lambda p: float(len(ordered)),
        "sum": lambda p: float(exact),
        "avg": lambda p: float(exact / len(ordered)),
        "percentile": linear,
    }
    assert set(oracle) <= set(CATALOGUE)
    for name, want in oracle.items():
        for f in _functions(CATALOGUE[name]):
            assert functions.truth(f, values) == pytest.approx(want(f.p), rel=1e-12), f.key


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_needs_says_every_summary_field_a_function_reads(name):
    """A field a function reads but does not declare would be missing where the plan leaves
    it out (the sketch, for queries that do not need it): here it is poisoned."""
    spec = CATALOGUE[name]
    assert spec.needs <= set(SUMMARY_FIELDS)
    values = _samples(50, seed=5)
    every = [f.text for entry in CATALOGUE.values() for f in _functions(entry)]
    query = parse(f"FROM * SELECT m WINDOW 10s COMPUTE {', '.join(every)}")
    row = _row(values, query)
    from aggregator.evaluate import summary

    real = summary(row, query)  # type: ignore[arg-type]

    def no_sketch(p: float) -> float:
        raise AssertionError(f"{name} read the sketch")

    nan = float("nan")
    poisoned = Summary(
        n=real.n if "n" in spec.needs else nan,  # type: ignore[arg-type]
        sum=real.sum if "sum" in spec.needs else nan,
        min=real.min if "min" in spec.needs else nan,
        max=real.max if "max" in spec.needs else nan,
        percentile=real.percentile if "sketch" in spec.needs else no_sketch,
    )
    for f in _functions(spec):
        assert spec.compute(poisoned, f.p) == spec.compute(real, f.p), f.key


def test_a_window_whose_query_reads_no_sketch_is_evaluated_without_one():
    plain = [Function(s.name) for s in CATALOGUE.values() if "sketch" not in s.needs]
    assert plain
    values = _samples(20, seed=2)
    assert _platform(values, plain, sketch=False) == aggregate(values, tuple(plain))


def test_the_summary_is_the_plans_fields():
    assert set(Summary._fields) - {"percentile"} | {"sketch"} == set(SUMMARY_FIELDS)
    assert len(set(SUMMARY_FIELDS)) == len(SUMMARY_FIELDS)


# --- (b) the parser accepts exactly the catalogue's names ----------------------------------


def test_the_parser_accepts_every_catalogue_name_and_its_forms():
    assert tuple(CATALOGUE) == FUNCTION_NAMES
    for spec in CATALOGUE.values():
        assert spec.name == spec.name.lower() and spec.kind in ("exact", "sketch")
        if spec.param is None:
            for text in (spec.name, spec.name.upper()):
                q = parse(f"FROM * SELECT m WINDOW 1s COMPUTE {text}")
                assert q.functions == (Function(spec.name),)
            continue
        low, high = spec.param
        p = (low + high) / 2
        f = Function(spec.name, p)
        assert parse(f"FROM * SELECT m WINDOW 1s COMPUTE {f.text}").functions == (f,)
        if spec.shorthand:
            assert parse(f"FROM * SELECT m WINDOW 1s COMPUTE {f.key}").functions == (f,)
        for bad in (f"{spec.name}({low:g})", f"{spec.name}({high:g})"):
            with pytest.raises(QueryError, match=r"0 < p < 100|p with") as info:
                parse(f"FROM * SELECT m WINDOW 1s COMPUTE {bad}")
            assert info.value.expected == spec.param_text
        with pytest.raises(QueryError, match="expected '\\('"):
            parse(f"FROM * SELECT m WINDOW 1s COMPUTE {spec.name}")


@pytest.mark.parametrize(
    "word",
    ["median", "mean", "stddev", "minimum", "p", "pct99", "percentile99", "sum2", "p99x", "rate"],
)
def test_the_parser_rejects_any_other_name_and_lists_the_catalogue(word):
    with pytest.raises(QueryError) as info:
        parse(f"FROM * SELECT m WINDOW 1s COMPUTE min, {word}")
    assert info.value.position == len("FROM * SELECT m WINDOW 1s COMPUTE min, ")
    assert info.value.expected == f"a function: {functions.forms()}"
    assert f"got {word!r}" in str(info.value)
    for name in CATALOGUE:
        assert name in info.value.expected


def test_the_error_message_lists_todays_functions_as_before():
    assert functions.forms() == "min, max, avg, count, sum, percentile(p) or pNN"
    assert CATALOGUE["percentile"].param_text == "a percentile p with 0 < p < 100"


def test_keys_map_back_to_their_entries():
    for spec in CATALOGUE.values():
        for f in _functions(spec):
            assert functions.spec_of_key(f.key) is spec
    assert functions.spec_of_key("median") is None and functions.spec_of_key("px") is None
    with pytest.raises(ValueError, match="unknown function 'median'"):
        functions.spec("median")


def test_the_contract_module_imports_no_numpy():
    code = "import sys, apm.functions, apm.query; print('numpy' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"


# --- (c) a new entry reaches every consumer: none keeps a list of its own -------------------


def _median_of(values: np.ndarray, p: float | None) -> float:
    return float(np.percentile(values, 50.0))


def _not_evaluated(*_args: object) -> float:
    raise AssertionError("only parsed in this test")


NEW = (
    Spec(
        "range",
        "exact",
        frozenset({"min", "max"}),
        lambda s, p: s.max - s.min,
        lambda v, p: float(v.max() - v.min()),
        "values.max() - values.min()",
    ),
    Spec(
        "median",
        "sketch",
        frozenset({"sketch", "min", "max"}),
        lambda s, p: s.percentile(50.0),
        _median_of,
        "np.percentile(values, 50)",
        rank_error=0.5,
    ),
    Spec(
        "iqr",
        "sketch",
        frozenset({"sketch", "min", "max"}),
        lambda s, p: s.percentile(75.0) - s.percentile(25.0),
        lambda v, p: float(np.percentile(v, 75.0) - np.percentile(v, 25.0)),
        "np.percentile(values, 75) - np.percentile(values, 25)",
        rank_error=0.5,
    ),
)


@pytest.fixture
def extended(monkeypatch) -> dict[str, Spec]:
    catalogue = {**CATALOGUE, **{s.name: s for s in NEW}}
    monkeypatch.setattr(functions, "CATALOGUE", catalogue)
    return catalogue


def test_a_new_entry_is_parsed_planned_evaluated_given_a_truth_and_checked(extended):
    q = parse("FROM * SELECT m WINDOW 10s COMPUTE range, median, iqr, p90, max")
    assert [f.key for f in q.functions] == ["range", "median", "iqr", "p90", "max"]
    assert parse(q.text) == q
    with pytest.raises(QueryError) as info:
        parse("FROM * SELECT m WINDOW 10s COMPUTE mode")
    assert "range" in info.value.expected and "iqr" in info.value.expected

    # The plan ships the sketch to the evaluation only for queries that read it.
    def wants_sketch(text: str) -> bool:
        row = query_row(StoredQuery("q", parse(f"FROM * SELECT m WINDOW 10s COMPUTE {text}")))
        columns = [c.split()[0] for c in QUERY_SCHEMA.split(", ")]
        return bool(row[columns.index("wants_sketch")])

    assert wants_sketch("median") and wants_sketch("iqr") and wants_sketch("min, p50")
    assert not wants_sketch("range") and not wants_sketch("range, max, count")

    values = _samples(777, seed=9)
    truth = aggregate(values, q.functions)
    assert _platform(values, list(q.functions)) == truth  # the sketch is exact at 777
    assert _platform(values, [Function("range")], sketch=False) == {"range": truth["range"]}

    doc = {"windows": [{"window_start": 0.0, "samples": 777, "complete": True, "values": truth}]}

    def result(**changes: float) -> list[WindowResult]:
        return [WindowResult("q", 0.0, 10, {**truth, **changes}, 777, 0.0)]

    assert compare(doc, result()) == []
    [problem] = compare(doc, result(range=truth["range"] + 2**-20), percentile_tolerance=1.0)
    assert "range" in problem  # exact: no tolerance
    assert (
        compare(
            doc,
            result(median=truth["median"] + 0.5, iqr=truth["iqr"] - 0.5),
            percentile_tolerance=1.0,
        )
        == []
    )
    assert len(compare(doc, result(median=truth["median"] + 0.5), percentile_tolerance=0.1)) == 1


def test_a_new_function_with_a_parameter_and_no_shorthand(extended, monkeypatch):
    trim = Spec(
        "trim",
        "exact",
        frozenset({"sum", "n"}),
        _not_evaluated,
        _not_evaluated,
        "the mean without the lowest and highest p%",
        param=(0.0, 50.0),
    )
    monkeypatch.setitem(extended, "trim", trim)
    q = parse("FROM * SELECT m WINDOW 10s COMPUTE trim(10), percentile(10)")
    assert [f.key for f in q.functions] == ["trim10", "p10"] and parse(q.text) == q
    assert functions.spec_of_key("trim10") is trim
    with pytest.raises(QueryError, match="a trim p with 0 < p < 50"):
        parse("FROM * SELECT m WINDOW 10s COMPUTE trim(60)")
    with pytest.raises(QueryError, match="expected a function"):
        parse("FROM * SELECT m WINDOW 10s COMPUTE trim10")  # no shorthand: not a name
    assert Query(("*",), "m", 10, q.functions).text.endswith("COMPUTE trim(10), percentile(10)")


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_the_percentiles_a_function_reads_do_not_depend_on_the_window(name):
    """The executors compute only the levels ``quantiles.levels`` finds by asking each function
    once: a function must ask for the same levels whatever the window holds."""
    from aggregator.quantiles import levels

    for f in _functions(CATALOGUE[name]):
        asked: list[set[float]] = []
        for n, low, high in ((1, 0.0, 0.0), (10_000, -5.0, 7.0)):
            seen: set[float] = set()

            def record(p: float, seen: set[float] = seen) -> float:
                seen.add(p)
                return 1.0

            CATALOGUE[name].compute(Summary(n, 3.0, low, high, record), f.p)
            asked.append(seen)
        assert asked[0] == asked[1], f.key
        query = parse(f"FROM * SELECT m WINDOW 10s COMPUTE {f.text}")
        assert levels(query) == sorted(asked[0]), f.key
