"""The PromQL the read API evaluates, parsed with promql-parser into its small tree: what each
supported form becomes, that a bare selector or constant reads as it always did, and that
everything else is a SelectorError naming what is refused (any text: never another error)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.promapi.promql_parse import MAX_DEPTH, parse_promql
from dashboard.promapi.promql_tree import (
    Absent,
    Aggregate,
    Bare,
    Binary,
    Matching,
    Number,
    OverTime,
    Shift,
    Subquery,
    Vector,
)
from dashboard.promapi.selector import Constant, Selector, SelectorError

pytestmark = pytest.mark.unit

SEL = 'apm_query{id="q1"}'


def test_bare_selectors_and_constants_read_as_before() -> None:
    assert isinstance(parse_promql(SEL), Selector)
    assert parse_promql("1+1") == Constant(2.0)
    assert parse_promql("-(2) * 3") == Constant(-6.0)
    assert parse_promql("2 ^ 10 % 1000") == Constant(24.0)
    assert parse_promql("1 > bool 2") == Constant(0.0)
    assert parse_promql("((7))") == Constant(7.0)


@pytest.mark.parametrize("fn", ["avg", "min", "max", "sum", "count", "last", "stddev", "stdvar"])
def test_over_time_functions(fn: str) -> None:
    node = parse_promql(f"{fn}_over_time({SEL}[90s])")
    assert isinstance(node, OverTime)
    assert (node.fn, node.range_ms, node.param) == (fn, 90_000, None)
    assert node.selector.matches({"__name__": "apm_query", "id": "q1"})
    assert not node.selector.matches({"__name__": "apm_query", "id": "q2"})


def test_quantile_over_time_takes_its_parameter() -> None:
    node = parse_promql(f"quantile_over_time(0.95, {SEL}[1m])")
    assert isinstance(node, OverTime) and (node.fn, node.param) == ("quantile", 0.95)


def test_aggregations_with_by_and_without() -> None:
    plain = parse_promql(f"sum({SEL})")
    assert isinstance(plain, Aggregate) and not plain.grouped and isinstance(plain.expr, Vector)
    by = parse_promql(f"max by (fn, metric) ({SEL})")
    assert isinstance(by, Aggregate)
    assert (by.op, by.labels, by.without, by.grouped) == ("max", ("fn", "metric"), False, True)
    without = parse_promql(f"count({SEL}) without (id)")
    assert isinstance(without, Aggregate)
    assert (without.labels, without.without, without.grouped) == (("id",), True, True)
    top = parse_promql(f"topk by (fn) (3, max_over_time({SEL}[5m]))")
    assert isinstance(top, Aggregate) and (top.op, top.param) == ("topk", 3.0)
    assert isinstance(top.expr, OverTime)
    q = parse_promql(f"quantile without (id) (0.9, {SEL})")
    assert isinstance(q, Aggregate) and (q.op, q.param, q.without) == ("quantile", 0.9, True)
    counted = parse_promql(f'count_values("value", {SEL})')
    assert isinstance(counted, Aggregate) and counted.value_label == "value"


def test_operators_between_vectors_carry_their_matching() -> None:
    plain = parse_promql(f"{SEL} + {SEL}")
    assert isinstance(plain, Binary) and plain.matching == Matching()
    on = parse_promql(f"{SEL} > bool on(id, fn) {SEL}")
    assert isinstance(on, Binary) and on.bool_
    assert on.matching == Matching(True, ("id", "fn"))
    left = parse_promql(f"{SEL} / ignoring(fn) group_left(window) {SEL}")
    assert isinstance(left, Binary)
    assert left.matching == Matching(False, ("fn",), "many-to-one", ("window",))
    right = parse_promql(f"{SEL} - on() group_right {SEL}")
    assert isinstance(right, Binary) and right.matching == Matching(True, (), "one-to-many")
    for op in ("and", "or", "unless"):
        got = parse_promql(f"{SEL} {op} on(fn) {SEL}")
        assert isinstance(got, Binary) and got.op == op
        assert got.matching == Matching(True, ("fn",), "many-to-many")
    scalar = parse_promql(f"{SEL} + 1")
    assert isinstance(scalar, Binary) and scalar.matching is None


def test_operators_with_a_number_on_either_side() -> None:
    node = parse_promql(f"100 - {SEL} * 2")
    assert isinstance(node, Binary) and node.op == "-" and node.lhs == Number(100.0)
    assert isinstance(node.rhs, Binary) and node.rhs.rhs == Number(2.0)
    cmp = parse_promql(f"{SEL} >= bool 3")
    assert isinstance(cmp, Binary) and (cmp.op, cmp.bool_) == (">=", True)
    neg = parse_promql(f"-{SEL}")
    assert isinstance(neg, Binary) and (neg.op, neg.rhs) == ("*", Number(-1.0))


@pytest.mark.parametrize(
    ("query", "shift"),
    [
        ("offset 5m", Shift(300_000)),
        ("offset -1m30s", Shift(-90_000)),
        ("offset 1ms", Shift(1)),
        ("@ 1700000000.5", Shift(0, 1_700_000_000_500)),
        ("@ 0", Shift(0, 0)),
        ("@ start()", Shift(0, "start")),
        ("@ end() offset 1h", Shift(3_600_000, "end")),
        ("offset -10s @ 100", Shift(-10_000, 100_000)),
    ],
)
def test_offset_and_at_on_selectors(query: str, shift: Shift) -> None:
    inner = parse_promql(f"sum({SEL} {query})")
    assert isinstance(inner, Aggregate) and inner.expr == Vector(inner.expr.selector, shift)
    ranged = parse_promql(f"max_over_time({SEL}[2m] {query})")
    assert isinstance(ranged, OverTime) and (ranged.shift, ranged.range_ms) == (shift, 120_000)
    bare = parse_promql(f"{SEL} {query}")  # a bare selector keeps its own look-back
    assert isinstance(bare, Bare) and bare.shift == shift
    assert bare.selector.matches({"__name__": "apm_query", "id": "q1"})


def test_subqueries_inside_over_time_functions() -> None:
    node = parse_promql(f"max_over_time(sum by (fn) ({SEL})[1h:5m] offset 10m)")
    assert isinstance(node, OverTime) and isinstance(node.selector, Subquery)
    assert (node.range_ms, node.shift, node.selector.step_ms) == (
        3_600_000,
        Shift(600_000),
        300_000,
    )
    assert isinstance(node.selector.expr, Aggregate)
    default = parse_promql(f"quantile_over_time(0.9, ({SEL} * 2)[90s:] @ end())")
    assert isinstance(default, OverTime) and isinstance(default.selector, Subquery)
    assert (default.param, default.range_ms, default.shift) == (0.9, 90_000, Shift(0, "end"))
    assert default.selector.step_ms == 0 and isinstance(default.selector.expr, Binary)
    absent = parse_promql(f"absent_over_time({SEL}[5m:1m])")
    assert isinstance(absent, Absent) and absent.labels == ()  # not a selector: none
    assert isinstance(absent.expr, OverTime) and isinstance(absent.expr.selector, Subquery)


@pytest.mark.parametrize(
    ("query", "labels"),
    [
        ('apm_query{id="q1", fn="max"}', (("fn", "max"), ("id", "q1"))),
        ('apm_query{id="q1", fn=~"m.*"}', (("id", "q1"),)),
        ('apm_query{id="q1", fn="max", fn!="min"}', (("id", "q1"),)),  # both name fn
        ('apm_query{id="q1", id="q2"}', ()),  # two = of one name: both dropped
        ('{__name__="apm_query", id="q1", fn=""}', (("id", "q1"),)),  # fn="" is no label
        ('(apm_query{id="q1"})', ()),  # not a selector: none, as Prometheus
        ('sum(apm_query{id="q1"})', ()),
    ],
)
def test_absent_takes_the_equality_matchers_labels(
    query: str, labels: tuple[tuple[str, str], ...]
) -> None:
    node = parse_promql(f"absent({query})")
    assert isinstance(node, Absent) and node.labels == labels
    if query.startswith("apm"):
        ranged = parse_promql(f"absent_over_time({query}[5m] offset 1m)")
        assert isinstance(ranged, Absent) and ranged.labels == labels
        assert isinstance(ranged.expr, OverTime) and ranged.expr.fn == "count"
        assert (ranged.expr.range_ms, ranged.expr.shift) == (300_000, Shift(60_000))


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (f"rate({SEL}[5m])", "the function rate()"),
        (f"present_over_time({SEL}[5m])", "the function present_over_time()"),
        (f"group({SEL})", "the aggregation group"),
        (f"quantile(scalar({SEL}), {SEL})", "the function scalar()"),
        (f"{SEL} atan2 {SEL}", "the operator atan2"),
        (f"{SEL} and on(id) group_left {SEL}", "no grouping allowed for 'and' operation"),
        (f"{SEL} + on(id) group_left(id) {SEL}", "must not occur in ON and GROUP clause"),
        (f"1 and {SEL}", "set operator 'and' not allowed in binary scalar expression"),
        (f"{SEL} > on(id) 1", "vector matching only allowed between vectors"),
        (f"sum({SEL}) offset 1m", "offset modifier must be preceded by"),
        (f"{SEL} offset 1m offset 2m", "offset may not be set multiple times"),
        (f"sum({SEL} @ -100)", "an @ time before 1970 is not supported"),
        (f"{SEL} @ -0.5", "an @ time before 1970 is not supported"),
        (f"sum({SEL} @ 1e30)", "timestamp out of bounds for @ modifier"),
        (f"{SEL} @ inf", "timestamp out of bounds for @ modifier"),
        ("ALERTS offset 5m", "ALERTS with offset or @"),
        (f"absent({SEL}[5m])", "expected type vector"),
        (f"absent_over_time({SEL})", "expected type matrix"),
        ("absent(1)", "expected type vector"),
        (f"{SEL}[10m:1m]", "a subquery outside *_over_time() is not supported"),
        (f"sum({SEL}[10m:1m])", "expected type vector in aggregation expression, got matrix"),
        ("max_over_time((1)[5m:1m])", "subquery is only allowed on vector, got scalar"),
        (f"max_over_time({SEL}[5m][10m:1m])", "subquery is only allowed on vector, got matrix"),
        (f"max_over_time({SEL}[10m:0s])", "duration must be greater than 0"),
        (f"max_over_time(rate({SEL}[1m])[10m:1m])", "the function rate()"),
        (f"{SEL}[5m]", "a range selector outside"),
        (f"sum({SEL}[5m])", "expected type vector in aggregation expression, got matrix"),
        (f"max_over_time({SEL})", "expected type matrix"),
        ('"text"', "a string is not supported"),
        (f'count_values("a-b", {SEL})', 'invalid label name "a-b"'),
        (f"topk({SEL}, {SEL})", "expected type scalar"),
        (f"topk(scalar({SEL}), {SEL})", "the function scalar()"),
        ("sum(ALERTS)", "ALERTS inside functions"),
        ("sum(up)", "unknown metric 'up'"),
        ('sum(apm_query{host="a"})', "unknown label 'host'"),
        ('sum(apm_query{id=~"a(?=b)"})', "illegal regex"),
        ('apm_query{id=~"a(?=b)"}', "invalid perl operator"),
        (f"sum({SEL}", "unclosed left parenthesis"),
        ("sum(" * (MAX_DEPTH + 1) + SEL + ")" * (MAX_DEPTH + 1), f"at most {MAX_DEPTH} deep"),
        ("-" * 5000 + SEL, f"at most {MAX_DEPTH} deep"),
        ("x" * 20_000, "at most 16384 characters"),
    ],
)
def test_refusals_name_what_is_refused(query: str, words: str) -> None:
    with pytest.raises(SelectorError) as exc:
        parse_promql(query)
    assert words in str(exc.value)


_PIECES = st.sampled_from(
    [SEL, "sum", "avg", "topk", "by", "without", "(", ")", "[5m]", "[", "]", "{", "}", ",",
     "1", "0.5", "-", "+", "*", "/", "%", "^", ">", "==", "bool", "max_over_time", "offset",
     "5m", '"', "fn", "=~", '"p9.*"', "@", ":", " ", "apm_query", "ALERTS", "rate",
     "-1m", "1700000000.5", "start()", "end()", "absent", "absent_over_time", "[5m:1m]",
     "[1h:]"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join) | st.text(max_size=80))
def test_any_text_parses_or_is_a_selector_error(text: str) -> None:
    try:
        tree = parse_promql(text)
    except SelectorError as exc:
        # a clear error: it says what is refused, at a place inside the text
        assert exc.detail.strip() and 0 <= exc.position <= len(text), (text, exc)
        return
    # else one of the trees the evaluator reads, never the parser's own objects
    assert isinstance(
        tree, (Selector, Constant, Vector, OverTime, Aggregate, Binary, Absent, Bare)
    ), tree


def test_a_parser_panic_is_a_selector_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class PanicException(BaseException):  # pyo3's, raised when the Rust parser panics
        pass

    def panics(text: str) -> None:
        raise PanicException("index out of bounds")

    monkeypatch.setattr("dashboard.promapi.promql_parse.pp.parse", panics)
    with pytest.raises(SelectorError, match="the PromQL parser failed"):
        parse_promql("sum(x)")
