"""PromQL's operators between two vectors at each step, as Prometheus 2.x's engine computes
them (``VectorBinop``, ``VectorAnd``/``Or``/``Unless``):

* a series matches the other side's on its *signature*: the labels ``on(...)`` names, or all
  but those ``ignoring(...)`` names and ``__name__`` (default: ``ignoring()``);
* arithmetic and comparisons match one-to-one, or many-to-one with ``group_left(...)``
  (``group_right``: one-to-many), the labels listed copied from the "one" side; arithmetic
  and ``bool`` drop ``__name__``, one-to-one keeps only the ``on`` labels (or drops the
  ``ignoring`` ones); a comparison without ``bool`` keeps the left-hand value where it holds;
* ``and`` keeps the left-hand series whose signature the right has at that step, ``unless``
  those it has not, ``or`` the left-hand series and the right-hand ones whose signature the
  left has not; each keeps its own labels and values;
* Prometheus' errors, per step, as 422 ``execution``: two series on the "one" side with one
  signature ("many-to-many matching not allowed"), two matches one-to-one ("many-to-one
  matching must be explicit"), grouping labels that do not make a result unique.

Results are built sparsely (each input point gives at most one output point) and made rows
only if rows x steps stays within the API's ``max_points``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.promql_functions import binary, compare
from dashboard.promapi.promql_rows import (
    SAME_LABELSET,
    ExecutionError,
    Row,
    Sig,
    Sparse,
    key,
    put,
)
from dashboard.promapi.promql_tree import ARITHMETIC, Binary, Matching

__all__ = ["signature", "vector_binop"]


def signature(labels: Mapping[str, str], m: Matching) -> Sig:
    if m.on:
        return tuple((k, labels.get(k, "")) for k in sorted(set(m.labels)))
    drop = {*m.labels, "__name__"}
    return tuple(sorted((k, v) for k, v in labels.items() if k not in drop))


def _text(labels: Mapping[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def vector_binop(
    node: Binary, lhs: Sequence[Row], rhs: Sequence[Row], steps: int, deadline: Deadline
) -> Sparse:
    m = node.matching
    assert m is not None  # the parser gives every vector-vector operator its matching
    lsig = [signature(labels, m) for labels, _ in lhs]
    rsig = [signature(labels, m) for labels, _ in rhs]
    if node.op in ("and", "or", "unless"):
        return _set_op(node.op, lhs, rhs, lsig, rsig, steps, deadline)
    return _arith(node, lhs, rhs, lsig, rsig, steps, deadline)


def _set_op(
    op: str,
    lhs: Sequence[Row],
    rhs: Sequence[Row],
    lsig: list[Sig],
    rsig: list[Sig],
    steps: int,
    deadline: Deadline,
) -> Sparse:
    found: Sparse = {}
    for step in range(steps):
        if step % 64 == 0:
            deadline.check()
        right = {rsig[j] for j, (_, values) in enumerate(rhs) if values[step] is not None}
        left = set()
        for i, (labels, values) in enumerate(lhs):
            if (v := values[step]) is None:
                continue
            left.add(lsig[i])
            if op == "or" or (lsig[i] in right) == (op == "and"):
                put(found, labels, step, v)
        if op == "or":
            for j, (labels, values) in enumerate(rhs):
                if (v := values[step]) is not None and rsig[j] not in left:
                    put(found, labels, step, v)
    return found


def _result_labels(node: Binary, ls: Mapping[str, str], rs: Mapping[str, str]) -> dict[str, str]:
    m = node.matching
    assert m is not None
    out = dict(ls)
    if node.op in ARITHMETIC or node.bool_:
        out.pop("__name__", None)
    if m.card == "one-to-one":
        if m.on:
            out = {k: v for k, v in out.items() if k in m.labels}
        else:
            out = {k: v for k, v in out.items() if k not in m.labels}
    for name in m.include:  # from the "one" side
        if rs.get(name, ""):
            out[name] = rs[name]
        else:
            out.pop(name, None)
    return out


def _arith(
    node: Binary,
    lhs: Sequence[Row],
    rhs: Sequence[Row],
    lsig: list[Sig],
    rsig: list[Sig],
    steps: int,
    deadline: Deadline,
) -> Sparse:
    m = node.matching
    assert m is not None
    swap = m.card == "one-to-many"  # the right is the "many" side: evaluate it as the left
    many, one, msig, osig = (rhs, lhs, rsig, lsig) if swap else (lhs, rhs, lsig, rsig)
    found: Sparse = {}
    # (many, one) -> the result's key and points, made once per pair and not per step
    target: dict[tuple[int, int], tuple[Sig, dict[int, float]]] = {}
    for step in range(steps):
        if step % 64 == 0:
            deadline.check()
        ones: dict[Sig, int] = {}
        for j, (labels, values) in enumerate(one):
            if values[step] is None:
                continue
            if (k := ones.get(osig[j])) is not None:
                side = "left" if swap else "right"
                raise ExecutionError(
                    f"found duplicate series for the match group {_text(dict(osig[j]))} on the "
                    f"{side} hand-side of the operation: [{_text(labels)}, {_text(one[k][0])}]"
                    ";many-to-many matching not allowed: matching labels must be unique on one "
                    "side"
                )
            ones[osig[j]] = j
        matched: dict[Sig, set[Sig]] = {}
        for i, (labels, values) in enumerate(many):
            match = ones.get(msig[i])
            if (v := values[step]) is None or match is None:
                continue
            j = match
            w = one[j][1][step]
            assert w is not None
            a, b = (w, v) if swap else (v, w)
            if node.op in ARITHMETIC:
                value: float | None = binary(node.op, a, b)
            elif node.bool_:
                value = 1.0 if compare(node.op, a, b) else 0.0
            else:
                value = a if compare(node.op, a, b) else None
            if value is None:
                continue
            pair = target.get((i, j))
            if pair is None:
                out = _result_labels(node, labels, one[j][0])
                pair = target[i, j] = (key(out), found.setdefault(key(out), (out, {}))[1])
            out_key, points = pair
            seen = matched.setdefault(msig[i], set())
            if m.card == "one-to-one" and seen:
                raise ExecutionError(
                    "multiple matches for labels: many-to-one matching must be explicit "
                    "(group_left/group_right)"
                )
            if out_key in seen:
                raise ExecutionError(
                    "multiple matches for labels: grouping labels must ensure unique matches"
                )
            seen.add(out_key)
            if step in points:
                raise ExecutionError(SAME_LABELSET)
            points[step] = value
    return found
