"""Operators between two vectors at each step against hand-computed answers: signatures
with on/ignoring, one-to-one and group_left/group_right (labels copied from the "one" side,
the metric name dropped by arithmetic and bool), and/or/unless per step, and Prometheus'
refusals (many-to-many, implicit many-to-one, non-unique grouping)."""

from __future__ import annotations

import math

import pytest

from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.promql_match import signature, vector_binop
from dashboard.promapi.promql_rows import ExecutionError, Row, Sparse, dense
from dashboard.promapi.promql_tree import Binary, Matching, Number

pytestmark = pytest.mark.unit

FOREVER = Deadline(math.inf, lambda: 0.0)
N = "__name__"
# Two servers' cpu by mode, and their core counts; server b has no cpu point at step 1.
CPU: list[Row] = [
    ({N: "cpu", "server": "a", "mode": "user"}, [10.0, 20.0]),
    ({N: "cpu", "server": "a", "mode": "sys"}, [5.0, 6.0]),
    ({N: "cpu", "server": "b", "mode": "user"}, [30.0, None]),
]
CORES: list[Row] = [
    ({N: "cores", "server": "a", "dc": "x"}, [2.0, 4.0]),
    ({N: "cores", "server": "b", "dc": "y"}, [3.0, 3.0]),
]


def _op(op: str, m: Matching, bool_: bool = False) -> Binary:
    return Binary(op, Number(0), Number(0), bool_, m)


def _plain(found: Sparse, steps: int = 2) -> dict[tuple, list[float | None]]:
    return {tuple(sorted(labels.items())): values for labels, values in dense(found, steps, 100)}


def test_signatures() -> None:
    labels = {N: "cpu", "server": "a", "mode": "user"}
    assert signature(labels, Matching(True, ("server", "dc"))) == (("dc", ""), ("server", "a"))
    assert signature(labels, Matching(False, ("mode",))) == (("server", "a"),)
    assert signature(labels, Matching()) == (("mode", "user"), ("server", "a"))


def test_one_to_one_keeps_the_on_labels_and_drops_the_name() -> None:
    user = [CPU[0], CPU[2]]
    got = _plain(vector_binop(_op("/", Matching(True, ("server",))), user, CORES, 2, FOREVER))
    assert got == {(("server", "a"),): [5.0, 5.0], (("server", "b"),): [10.0, None]}
    ignoring = Matching(False, ("mode", "dc"))
    got = _plain(vector_binop(_op("-", ignoring), user, CORES, 2, FOREVER))
    assert got == {(("server", "a"),): [8.0, 16.0], (("server", "b"),): [27.0, None]}


def test_group_left_copies_labels_from_the_one_side() -> None:
    m = Matching(True, ("server",), "many-to-one", ("dc",))
    got = _plain(vector_binop(_op("*", m), CPU, CORES, 2, FOREVER))
    assert got == {
        (("dc", "x"), ("mode", "user"), ("server", "a")): [20.0, 80.0],
        (("dc", "x"), ("mode", "sys"), ("server", "a")): [10.0, 24.0],
        (("dc", "y"), ("mode", "user"), ("server", "b")): [90.0, None],
    }


def test_group_right_computes_left_op_right() -> None:
    m = Matching(True, ("server",), "one-to-many")
    got = _plain(vector_binop(_op("-", m), CORES, CPU, 2, FOREVER))
    assert got[(("mode", "sys"), ("server", "a"))] == [-3.0, -2.0]  # cores - cpu
    kept = _plain(vector_binop(_op(">", m), CORES, CPU, 2, FOREVER))  # the left's value
    assert kept == {}
    flipped = _plain(vector_binop(_op("<", m), CORES, CPU, 2, FOREVER))
    assert flipped[((N, "cpu"), ("mode", "sys"), ("server", "a"))] == [2.0, 4.0]


def test_comparisons_filter_or_answer_bool() -> None:
    m = Matching(True, ("server",), "many-to-one")
    got = _plain(vector_binop(_op(">", m), CPU, CORES, 2, FOREVER))
    assert got[((N, "cpu"), ("mode", "sys"), ("server", "a"))] == [5.0, 6.0]
    as_bool = _plain(vector_binop(_op("<", m, bool_=True), CPU, CORES, 2, FOREVER))
    assert as_bool[(("mode", "sys"), ("server", "a"))] == [0.0, 0.0]
    assert all(N not in dict(k) for k in as_bool)


def test_set_operators_per_step() -> None:
    on = Matching(True, ("server",), "many-to-many")
    cores_at_0: list[Row] = [({"server": "b"}, [1.0, None])]
    got = _plain(vector_binop(_op("and", on), CPU, cores_at_0, 2, FOREVER))
    assert got == {((N, "cpu"), ("mode", "user"), ("server", "b")): [30.0, None]}
    got = _plain(vector_binop(_op("unless", on), CPU, cores_at_0, 2, FOREVER))
    assert len(got) == 2 and got[((N, "cpu"), ("mode", "user"), ("server", "a"))] == [10.0, 20.0]
    extra: list[Row] = [({"server": "b", "mode": "idle"}, [7.0, 8.0])]
    got = _plain(vector_binop(_op("or", on), CPU, extra, 2, FOREVER))
    assert got[(("mode", "idle"), ("server", "b"))] == [None, 8.0]  # b has cpu at step 0


@pytest.mark.parametrize(
    ("m", "lhs", "rhs", "words"),
    [
        (Matching(True, ("server",)), CORES, CPU, "many-to-many matching not allowed"),
        (Matching(True, ("server",), "one-to-many"), CPU, CORES, "on the left hand-side"),
        (Matching(True, ("server",)), CPU, CORES, "many-to-one matching must be explicit"),
        (Matching(True, ("server",), "many-to-one"), [CPU[0], ({**CPU[0][0], N: "x"}, [1.0])],
         CORES, "grouping labels must ensure unique matches"),
    ],
)  # fmt: skip
def test_refusals_as_prometheus(m: Matching, lhs: list[Row], rhs: list[Row], words: str) -> None:
    with pytest.raises(ExecutionError, match=words):
        vector_binop(_op("+", m), lhs, rhs, 1, FOREVER)
