"""The catalogue of query functions: one entry per name a query may ``COMPUTE``.

Why one catalogue: a function used to be known to five places on their own (the parser's
names, the Spark plan's percentile levels, the evaluation's statistics, the load generator's
numpy truth and the checker's list of exact keys), so adding one touched five files and a
missed one failed late, or not at all. Each of them now reads :data:`CATALOGUE`: the parser
(names, ``name(p)`` and its shorthand), ``aggregator.plan`` (which queries need the sketch;
that every summary field is computed), ``aggregator.evaluate`` (:func:`compute` on a window's
:class:`Summary`), ``loadgen.truth`` (:func:`truth` on the raw samples) and ``loadgen.check``
(exact or within a tolerance, by :func:`spec_of_key`).

Adding a function is one :class:`Spec` in :data:`CATALOGUE`, as long as it is computed from
what a window already keeps (:data:`SUMMARY_FIELDS`). One that needs more (a sum of squares
for a standard deviation, say) also needs the field in :class:`Summary` and
:data:`SUMMARY_FIELDS`, and its Spark column in ``aggregator.plan.window_summaries``: a Spark
column expression cannot live here, because the contract imports only the standard library
and pydantic (numpy is imported inside the functions that use it; pyspark never).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    import numpy as np

    from apm.query import Function

__all__ = [
    "CATALOGUE",
    "SUMMARY_FIELDS",
    "Kind",
    "Spec",
    "Summary",
    "compute",
    "forms",
    "needs",
    "shorthand",
    "spec",
    "spec_of_key",
    "truth",
]

Kind = Literal["exact", "sketch"]

# What the aggregator keeps of each window (aggregator.plan.window_summaries): the number of
# distinct samples, their sum (exact in fixed point when the values allow, see plan.py), the
# extremes, and a KLL sketch of the values.
SUMMARY_FIELDS = ("n", "sum", "min", "max", "sketch")


class Summary(NamedTuple):
    """One window as the evaluation hands it to :attr:`Spec.compute`. The sketch is read
    through ``percentile(p)`` (0 < p < 100): numpy's ``linear`` definition, exact while the
    sketch holds every value, clamped to [min, max] (``aggregator.quantiles``)."""

    n: int
    sum: float
    min: float
    max: float
    percentile: Callable[[float], float]


class Spec(NamedTuple):
    """One query function.

    ``kind`` is ``exact`` (the platform's value is the numpy truth, to the bit, when the
    values' sum is exact: fixed point in the plan, ``math.fsum`` in the truth) or ``sketch``
    (read from the KLL sketch: exact while a window holds at most ``quantiles.KLL_K`` samples,
    beyond within ``rank_error`` percentile points of the rank asked for). ``needs`` are the
    :data:`SUMMARY_FIELDS` that ``compute`` reads. ``numpy`` says, for people, what ``truth``
    does. A function with a parameter takes it as ``name(p)`` with ``param[0] < p <
    param[1]``, and ``<shorthand>NN`` (``p99``) means the same; its result key is
    ``<shorthand or name><p>``."""

    name: str
    kind: Kind
    needs: frozenset[str]
    compute: Callable[[Summary, float | None], float]
    truth: Callable[[np.ndarray, float | None], float]
    numpy: str
    param: tuple[float, float] | None = None
    shorthand: str | None = None
    rank_error: float = 0.0

    def key(self, p: float | None) -> str:
        """The result column name: ``min``, ``avg``, ``p99``, ``p99.9``."""
        return self.name if p is None else f"{self.shorthand or self.name}{_num(p)}"

    def text(self, p: float | None) -> str:
        """How a query writes it: ``min``, ``percentile(99.9)``."""
        return self.name if p is None else f"{self.name}({_num(p)})"

    @property
    def param_text(self) -> str:
        """What the parameter may be: ``a percentile p with 0 < p < 100``."""
        low, high = self.param or (-math.inf, math.inf)
        return f"a {self.name} p with {low:g} < p < {high:g}"


def _num(p: float) -> str:
    return str(int(p)) if float(p).is_integer() else repr(float(p))


def _p(p: float | None) -> float:
    if p is None:
        raise ValueError("this function takes a parameter")
    return p


def _np_percentile(values: np.ndarray, p: float | None) -> float:
    import numpy as np

    return float(np.percentile(values, _p(p), method="linear"))


_ENTRIES = (
    Spec(
        "min",
        "exact",
        frozenset({"min"}),
        lambda s, p: s.min,
        lambda v, p: float(v.min()),
        "values.min()",
    ),
    Spec(
        "max",
        "exact",
        frozenset({"max"}),
        lambda s, p: s.max,
        lambda v, p: float(v.max()),
        "values.max()",
    ),
    Spec(
        "avg",
        "exact",
        frozenset({"sum", "n"}),
        lambda s, p: s.sum / s.n,
        lambda v, p: math.fsum(v.tolist()) / v.size,
        "math.fsum(values) / values.size",
    ),
    Spec(
        "count",
        "exact",
        frozenset({"n"}),
        lambda s, p: float(s.n),
        lambda v, p: float(v.size),
        "values.size",
    ),
    Spec(
        "sum",
        "exact",
        frozenset({"sum"}),
        lambda s, p: s.sum,
        lambda v, p: math.fsum(v.tolist()),
        "math.fsum(values)",
    ),
    # The promise is 0.5 points of rank; the sketch (k = 10,000) measured 0.015.
    Spec(
        "percentile",
        "sketch",
        frozenset({"sketch", "min", "max"}),
        lambda s, p: s.percentile(_p(p)),
        _np_percentile,
        'np.percentile(values, p, method="linear")',
        param=(0.0, 100.0),
        shorthand="p",
        rank_error=0.5,
    ),
)
# In the order the parser's error message lists them.
CATALOGUE: Mapping[str, Spec] = {entry.name: entry for entry in _ENTRIES}


def spec(name: str) -> Spec:
    """The catalogue entry of ``name``; ValueError for a name it does not hold."""
    found = CATALOGUE.get(name)
    if found is None:
        raise ValueError(f"unknown function {name!r}; known: {', '.join(CATALOGUE)}")
    return found


def forms() -> str:
    """Every way to write a function, for the parser's errors: ``min, max, avg, count, sum,
    percentile(p) or pNN``."""
    specs = CATALOGUE.values()
    out = [s.name if s.param is None else f"{s.name}(p)" for s in specs]
    out += [f"{s.shorthand}NN" for s in specs if s.param is not None and s.shorthand]
    return ", ".join(out[:-1]) + " or " + out[-1] if len(out) > 1 else out[0]


def shorthand(word: str) -> tuple[Spec, str] | None:
    """(entry, its parameter as written) for a shorthand such as ``p99.9``, else None."""
    for entry in CATALOGUE.values():
        head = entry.shorthand
        if (
            entry.param is not None
            and head
            and re.fullmatch(re.escape(head) + r"\d+(\.\d+)?", word)
        ):
            return entry, word[len(head) :]
    return None


def spec_of_key(key: str) -> Spec | None:
    """The entry a result key (:meth:`Spec.key`) belongs to, or None."""
    for entry in CATALOGUE.values():
        if entry.param is None:
            if key == entry.name:
                return entry
            continue
        head = entry.shorthand or entry.name
        if key.startswith(head):
            try:
                float(key[len(head) :])
            except ValueError:
                continue
            return entry
    return None


def compute(fn: Function, summary: Summary) -> float:
    """``fn``'s value from a window's summary (the aggregator's evaluation)."""
    return spec(fn.name).compute(summary, fn.p)


def truth(fn: Function, values: np.ndarray) -> float:
    """``fn``'s value over the raw samples of a window (non-empty), computed by numpy."""
    return spec(fn.name).truth(values, fn.p)


def needs(functions: Iterable[Function]) -> frozenset[str]:
    """The summary fields that ``functions`` read from a window."""
    return frozenset().union(*(spec(f.name).needs for f in functions))
